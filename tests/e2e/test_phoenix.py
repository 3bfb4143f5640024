"""End to end into a real trace backend: an instrumented agent turn, the processor, OTLP, Arize Phoenix.

Phoenix runs as a separate server on 127.0.0.1 (started once per session); spans go to it over OTLP
(HTTP and gRPC) exactly as they would in production, and are read back through its REST API.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from pipeline.export.agent_turn import ANSWER, UNSUPPORTED, instrumented, run_capacity_turn

import otel_shapecheck
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.embedding._embedders import HashingEmbedder

from .phoenix import PhoenixServer

pytestmark = pytest.mark.e2e


def _run_into_phoenix(phoenix: PhoenixServer, protocol: str) -> tuple[str, list[dict[str, Any]]]:
    project = f"shapecheck-{protocol.replace('/', '-')}-{uuid.uuid4().hex[:8]}"
    provider = TracerProvider(
        resource=Resource.create({"service.name": "capacity-agent", "openinference.project.name": project}),
        shutdown_on_exit=False,
    )
    endpoint = phoenix.base_url if protocol == "http/protobuf" else f"http://{phoenix.grpc_endpoint}"
    otel_shapecheck.configure(
        provider,
        endpoint=endpoint,
        protocol=protocol,
        events=False,  # Phoenix does not ingest OTLP logs; the event path is covered against the receiver
        checks=[ToolChoiceCheck(embedder=HashingEmbedder()), FiguresCheck()],
        timeout_seconds=10,
    )
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    assert provider.force_flush()
    provider.shutdown()
    return project, phoenix.wait_for_spans(project, count=3)


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_shapecheck_attributes_survive_the_round_trip(phoenix: PhoenixServer, protocol: str) -> None:
    """Spans read back from Phoenix carry the shapecheck.* attributes and evaluation events we wrote."""
    project, spans = _run_into_phoenix(phoenix, protocol)
    assert len(spans) == 3, f"{project}: {[span['name'] for span in spans]}\n{phoenix.log_tail()}"
    by_id = {span["context"]["span_id"]: span for span in spans}
    assert len({span["context"]["trace_id"] for span in spans}) == 1

    answer = next(span for span in spans if attrs.FIGURES_CHECKED in span["attributes"])
    attributes = answer["attributes"]
    assert attributes[attrs.FLAGGED] is True
    assert attrs.FLAG_FIGURES_UNSUPPORTED in attributes[attrs.FLAGS]
    assert UNSUPPORTED in attributes[attrs.FIGURES_UNSUPPORTED]
    assert attributes[attrs.FIGURES_CHECKED] >= 2
    assert attributes["gen_ai.operation.name"] == "chat"  # the instrumentation's own attributes are intact
    assert by_id[answer["parent_id"]]["name"] == "invoke_agent capacity"
    (event,) = [
        e for e in answer["events"] if e["attributes"].get(attrs.EVALUATION_NAME) == attrs.EVALUATION_FIGURES
    ]
    assert event["name"] == attrs.EVALUATION_EVENT
    assert event["attributes"][attrs.EVALUATION_SCORE_LABEL] == "unsupported"
    assert 0 <= event["attributes"][attrs.EVALUATION_SCORE_VALUE] < 1

    chooser = next(span for span in spans if span["attributes"].get(attrs.TOOL_CHOICE_CHOSEN))
    assert chooser["attributes"][attrs.TOOL_CHOICE_CHOSEN] == ["get_capacity"]
    assert chooser["attributes"][attrs.TOOL_CHOICE_OFFERED_COUNT] == 2
    assert chooser["attributes"][attrs.TOOL_CHOICE_EMBEDDER] == "hashing-512"
    assert isinstance(chooser["attributes"][attrs.TOOL_CHOICE_MARGIN], float)

    flagged = phoenix.spans(project, attributes={attrs.FLAGGED: "true"})
    assert [span["context"]["span_id"] for span in flagged] == [answer["context"]["span_id"]]
    assert phoenix.span_names_matching(project, f"{attrs.FLAGGED} == True") == [answer["name"]]
    narrow_or_not = phoenix.span_names_matching(project, f"{attrs.TOOL_CHOICE_MARGIN} > -2")
    assert narrow_or_not == [chooser["name"]]

    agent = next(span for span in spans if span["name"] == "invoke_agent capacity")
    assert not any(key.startswith("shapecheck.") for key in agent["attributes"]), (
        "unevaluated spans pass untouched"
    )

"""End to end: an analyst calling a real OpenAI client, the retry wrapper and the span processor.

The analyst asks the scripted chat-completions server on 127.0.0.1 for findings, through the real ``openai``
client instrumented by ``opentelemetry-instrumentation-genai-openai``; the tracer provider runs the
shapecheck span processor with the conformance check in front of the SDK's in-memory exporter. The exported
copy of the analyst span must carry the conformance record and its ``gen_ai.evaluation.result`` event.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, Literal

import openai
import pytest
from analyst.analysts import RecordingContext
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from otel_shapecheck import (
    AnalystConformanceRecord,
    ConformanceCheck,
    EvaluationEventEmitter,
    validate_rows,
    with_shape_collapse_retry,
)
from otel_shapecheck._attributes import (
    CONFORMANCE_ANALYST_ID,
    CONFORMANCE_ATTEMPTS,
    CONFORMANCE_COLLAPSED,
    CONFORMANCE_EMITTED_PEAK,
    CONFORMANCE_RATE,
    CONFORMANCE_RECOVERED,
    EVALUATION_CONFORMANCE,
    EVALUATION_EVENT,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    FLAG_CONFORMANCE_COLLAPSED,
    FLAG_CONFORMANCE_UNRECOVERED,
    FLAGGED,
    FLAGS,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
)
from otel_shapecheck.checks.conformance._record import conformance_attributes
from otel_shapecheck.cli.demo._script import ScriptedReply
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor


class Finding(BaseModel):
    subject: str
    severity: Literal["low", "high"]


WRONG_SHAPE = json.dumps([{"title": "disk nearly full", "level": "HIGH"}, {"title": "fan", "level": "LOW"}])
RIGHT_SHAPE = json.dumps(
    {"findings": [{"subject": "disk nearly full", "severity": "high"}, {"subject": "fan", "severity": "low"}]}
)


class ChatAnalyst:
    """Asks the model for findings as JSON and keeps the rows the schema accepts."""

    id = "storage-triage"

    def __init__(self, client: openai.OpenAI) -> None:
        self._client = client

    def analyze(self, input: str, ctx: Any) -> list[Finding]:
        completion = self._client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[
                {"role": "system", "content": 'Reply with {"findings": [{"subject", "severity"}]}.'},
                {"role": "user", "content": input},
            ],
        )
        return validate_rows(completion.choices[0].message.content, Finding, ctx).accepted


@pytest.fixture(name="event_log")
def _event_log() -> InMemoryLogRecordExporter:
    return InMemoryLogRecordExporter()


@pytest.fixture(name="pipeline")
def _pipeline(event_log: InMemoryLogRecordExporter) -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    processor = ShapecheckSpanProcessor(
        SimpleSpanProcessor(exporter),
        events=EvaluationEventEmitter(event_log, schedule_delay_millis=50),
        checks=[ConformanceCheck()],
    )
    provider.add_span_processor(processor)
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider, exporter
    finally:
        instrumentor.uninstrument()
        provider.shutdown()


def _analyze(provider: TracerProvider, replies: Sequence[str], max_retries: int) -> list[Finding]:
    with ScriptedOpenAIServer([ScriptedReply(text=text) for text in replies]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key", max_retries=0)
        try:
            analyst = with_shape_collapse_retry(
                ChatAnalyst(client), max_retries=max_retries, tracer_provider=provider
            )
            findings = list(analyst.analyze("Check the storage array.", RecordingContext()))
        finally:
            client.close()
        assert len(server.requests) == len(replies)
    assert provider.force_flush()
    return findings


def _evaluation_events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(event.attributes or {}) for event in span.events if event.name == EVALUATION_EVENT]


def _only(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    matching = [span for span in spans if span.name == name]
    assert len(matching) == 1, [span.name for span in spans]
    return matching[0]


def test_collapse_then_recovery_is_on_the_exported_analyst_span(
    pipeline: tuple[TracerProvider, InMemorySpanExporter], event_log: InMemoryLogRecordExporter
) -> None:
    """A wrong-shape first reply and a right-shape second one: record, flags and events on the copy."""
    provider, exporter = pipeline
    findings = _analyze(provider, [WRONG_SHAPE, RIGHT_SHAPE], max_retries=3)
    assert [finding.subject for finding in findings] == ["disk nearly full", "fan"]

    spans = exporter.get_finished_spans()
    assert len({span.context.span_id for span in spans}) == len(spans), "every span exported exactly once"
    analyst = _only(spans, "analyst storage-triage")
    attempts = [span for span in spans if span.name == "analyst storage-triage attempt"]
    chats = [span for span in spans if span.name.startswith("chat")]
    assert len(attempts) == 2 and len(chats) == 2
    assert {chat.parent.span_id for chat in chats if chat.parent} == {a.context.span_id for a in attempts}
    assert sorted((a.attributes or {})[ROWS_ACCEPTED] for a in attempts) == [0, 2]  # type: ignore[type-var]
    assert all((a.attributes or {})[ROWS_EMITTED] == 2 for a in attempts)

    attributes = analyst.attributes or {}
    expected = AnalystConformanceRecord(
        analyst_id="storage-triage",
        attempts=2,
        emitted_peak=2,
        emitted_final=2,
        accepted=2,
        collapsed=True,
        recovered=True,
        conformance_rate=1.0,
    )
    conformance = {key: attributes[key] for key in attributes if key.startswith("shapecheck.conformance.")}
    assert conformance == conformance_attributes(expected)
    assert attributes[FLAGGED] is True
    assert tuple(attributes[FLAGS]) == (FLAG_CONFORMANCE_COLLAPSED,)  # type: ignore[arg-type]
    (event,) = _evaluation_events(analyst)
    assert event[EVALUATION_NAME] == EVALUATION_CONFORMANCE
    assert event[EVALUATION_SCORE_LABEL] == "recovered"
    assert event[EVALUATION_SCORE_VALUE] == 1.0

    (record,) = [readable.log_record for readable in event_log.get_finished_logs()]
    assert record.event_name == EVALUATION_EVENT
    assert (record.trace_id, record.span_id) == (analyst.context.trace_id, analyst.context.span_id)
    assert dict(record.attributes or {})[EVALUATION_SCORE_LABEL] == "recovered"


def test_collapse_never_recovered_is_flagged_unrecovered(
    pipeline: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Every reply in the wrong shape: the analyst returns nothing and its span says it collapsed."""
    provider, exporter = pipeline
    assert _analyze(provider, [WRONG_SHAPE, WRONG_SHAPE], max_retries=1) == []

    analyst = _only(exporter.get_finished_spans(), "analyst storage-triage")
    attributes = analyst.attributes or {}
    assert attributes[CONFORMANCE_ATTEMPTS] == 2
    assert attributes[CONFORMANCE_RECOVERED] is False
    assert attributes[CONFORMANCE_RATE] == 0.0
    assert tuple(attributes[FLAGS]) == (FLAG_CONFORMANCE_COLLAPSED, FLAG_CONFORMANCE_UNRECOVERED)  # type: ignore[arg-type]
    (event,) = _evaluation_events(analyst)
    assert (event[EVALUATION_SCORE_LABEL], event[EVALUATION_SCORE_VALUE]) == ("collapsed", 0.0)


def test_attempt_spans_from_another_emitter_are_evaluated(
    pipeline: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Attempt spans written by hand (as a non-Python service would) get the same verdict on their parent."""
    provider, exporter = pipeline
    tracer = provider.get_tracer("other-emitter")
    with tracer.start_as_current_span("classify tickets"):
        for attempt, (emitted, accepted) in enumerate([(6, 0), (5, 0), (4, 0)], start=1):
            # The literal names of the public contract, as another language's emitter would write them.
            attributes = {
                "shapecheck.analyst.id": "tickets",
                "shapecheck.analyst.attempt": attempt,
                "shapecheck.rows.emitted": emitted,
                "shapecheck.rows.accepted": accepted,
            }
            with tracer.start_as_current_span("attempt", attributes=attributes):
                pass
    assert provider.force_flush()

    parent = _only(exporter.get_finished_spans(), "classify tickets")
    attributes = parent.attributes or {}
    assert attributes[CONFORMANCE_ANALYST_ID] == "tickets"
    assert (attributes[CONFORMANCE_ATTEMPTS], attributes[CONFORMANCE_EMITTED_PEAK]) == (3, 6)
    assert attributes[CONFORMANCE_COLLAPSED] is True and attributes[CONFORMANCE_RECOVERED] is False
    assert _evaluation_events(parent)[0][EVALUATION_SCORE_LABEL] == "collapsed"

"""Enriched copies as the downstream and the OTLP encoder see them."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, Status, StatusCode
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ConformanceCheck, ShapecheckSpanProcessor
from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    CONFORMANCE_COLLAPSED,
    EVALUATION_EVENT,
    EVALUATION_NAME,
    FIGURES_CHECKED,
    FLAGGED,
    FLAGS,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_MARGIN,
)
from otel_shapecheck.outputs._enrich import _bounded

from .agent import RecordingCheck, tool_turn

Downstream = Callable[[InMemorySpanExporter], SpanProcessor]
DOWNSTREAMS = [
    pytest.param(SimpleSpanProcessor, id="simple"),
    pytest.param(lambda exporter: BatchSpanProcessor(exporter, schedule_delay_millis=50), id="batch"),
]


def _by_name(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


@pytest.mark.parametrize("make_downstream", DOWNSTREAMS)
def test_builtin_checks_enrich_the_exported_copies(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter, make_downstream: Downstream
) -> None:
    """With only a downstream given, the built-in checks enrich the exported spans."""
    processor = ShapecheckSpanProcessor(make_downstream(span_exporter))
    tracer_provider.add_span_processor(processor)
    tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
    assert tracer_provider.force_flush()

    spans = span_exporter.get_finished_spans()
    assert len(spans) == 4
    request, answer = _by_name(spans, "chat gpt-4o-mini")
    assert request.attributes is not None and answer.attributes is not None
    assert request.attributes[TOOL_CHOICE_CHOSEN] == ("get_capacity",)
    assert request.attributes[TOOL_CHOICE_MARGIN] > 0
    assert [event.attributes[EVALUATION_NAME] for event in request.events if event.attributes] == [
        "shapecheck.tool_choice"
    ]
    assert answer.attributes[FIGURES_CHECKED] == 1
    assert answer.attributes[FLAGGED] is False
    assert {event.name for event in answer.events} == {EVALUATION_EVENT}
    assert "shapecheck.figures" in {
        event.attributes[EVALUATION_NAME] for event in answer.events if event.attributes
    }
    for untouched in (
        *_by_name(spans, "execute_tool get_capacity"),
        *_by_name(spans, "invoke_agent storage"),
    ):
        assert not any(key.startswith("shapecheck.") for key in untouched.attributes or {})
        assert not untouched.events
    assert processor.counts().enriched == 2


def _analyst_run(provider: TracerProvider) -> None:
    """An analyst span with a link, an error status, an event and too many attributes, over two attempts."""
    tracer = provider.get_tracer("tests.analyst", "1.2.3", schema_url="https://example.com/schema")
    with tracer.start_as_current_span("seed") as seed:
        seed_context = seed.get_span_context()
    with tracer.start_as_current_span(
        "analyze storage-triage", links=[Link(seed_context, {"why": "retry"})]
    ) as run:
        for index in range(6):
            run.set_attribute(f"app.detail.{index}", index)
        run.add_event("app.note", {"step": 1})
        for attempt, emitted, accepted in ((1, 3, 0), (2, 3, 0)):
            with tracer.start_as_current_span("attempt") as span:
                span.set_attributes(
                    {
                        ANALYST_ID: "storage-triage",
                        ANALYST_ATTEMPT: attempt,
                        ROWS_EMITTED: emitted,
                        ROWS_ACCEPTED: accepted,
                    }
                )
        run.set_status(Status(StatusCode.ERROR, "rows rejected"))


def test_copy_keeps_resource_scope_context_links_status_times_and_dropped_counts() -> None:
    """The enriched copy differs from the original only by the added attributes and events."""
    resource = Resource.create({"service.name": "analysts"})
    provider = TracerProvider(
        resource=resource, span_limits=SpanLimits(max_attributes=4), shutdown_on_exit=False
    )
    enriched, originals = InMemorySpanExporter(), InMemorySpanExporter()
    provider.add_span_processor(
        ShapecheckSpanProcessor(SimpleSpanProcessor(enriched), checks=[ConformanceCheck()])
    )
    provider.add_span_processor(SimpleSpanProcessor(originals))
    try:
        _analyst_run(provider)
        assert provider.force_flush()
    finally:
        provider.shutdown()

    (copy,) = _by_name(enriched.get_finished_spans(), "analyze storage-triage")
    (original,) = _by_name(originals.get_finished_spans(), "analyze storage-triage")
    assert copy is not original
    assert copy.resource is original.resource
    assert copy.instrumentation_scope == original.instrumentation_scope
    assert copy.context == original.context and copy.parent == original.parent
    assert copy.kind == original.kind
    assert (copy.status.status_code, copy.status.description) == (StatusCode.ERROR, "rows rejected")
    assert (copy.start_time, copy.end_time) == (original.start_time, original.end_time)
    assert [(link.context, dict(link.attributes or {})) for link in copy.links] == [
        (link.context, dict(link.attributes or {})) for link in original.links
    ]
    assert original.dropped_attributes == 2
    assert (copy.dropped_attributes, copy.dropped_events, copy.dropped_links) == (
        original.dropped_attributes,
        original.dropped_events,
        original.dropped_links,
    )
    assert copy.attributes is not None and original.attributes is not None
    added = {key: value for key, value in copy.attributes.items() if key not in original.attributes}
    assert {key: copy.attributes[key] for key in original.attributes} == dict(original.attributes)
    assert added[CONFORMANCE_COLLAPSED] is True
    assert added[FLAGS] == ("conformance.collapsed", "conformance.unrecovered")
    assert [event.name for event in copy.events] == ["app.note", EVALUATION_EVENT]
    assert copy.events[0].attributes == original.events[0].attributes


def test_otlp_encoder_writes_the_copies(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """The SDK's own OTLP protobuf encoder carries the added attributes, events, parent and scope."""
    check = RecordingCheck(flag="test.flag")
    tracer_provider.add_span_processor(
        ShapecheckSpanProcessor(SimpleSpanProcessor(span_exporter), checks=[check])
    )
    tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
    assert tracer_provider.force_flush()
    spans = span_exporter.get_finished_spans()

    request = encode_spans(spans)
    (resource_spans,) = request.resource_spans
    encoded = [span for scope in resource_spans.scope_spans for span in scope.spans]
    assert len(encoded) == 4
    chats = [span for span in encoded if span.name == "chat gpt-4o-mini"]
    agent = next(span for span in encoded if span.name == "invoke_agent storage")
    assert len(chats) == 2
    for span in chats:
        attributes = {item.key: item.value for item in span.attributes}
        assert attributes[FLAGGED].bool_value is True
        assert [value.string_value for value in attributes[FLAGS].array_value.values] == ["test.flag"]
        assert attributes["test.recording.incomplete"].bool_value is False
        assert span.parent_span_id == agent.span_id
        (event,) = span.events
        assert event.name == EVALUATION_EVENT
        event_attributes = {item.key: item.value for item in event.attributes}
        assert event_attributes[EVALUATION_NAME].string_value == "test.recording"
        assert event_attributes["gen_ai.evaluation.score.value"].double_value == 1.0
        assert span.end_time_unix_nano >= event.time_unix_nano >= span.start_time_unix_nano


_ATTRIBUTE_SETS = [
    pytest.param(
        {"a": "x", "b": True, "c": 3, "d": 0.5, "e": b"raw", "f": None, "g": ("x", "y")}, id="plain"
    ),
    pytest.param({"a": "x", "list": ["x", "y"]}, id="list-value"),
    pytest.param({"a": "x", "nested": (("x",), "y")}, id="nested-tuple"),
    pytest.param({"a": "x", "mapping": {"k": 1}}, id="mapping-value"),
    pytest.param({"a": "x", "": "empty key"}, id="empty-key"),
    pytest.param({"a": "x", "object": object()}, id="not-an-attribute-value"),
    pytest.param({}, id="empty"),
]


@pytest.mark.parametrize("attributes", _ATTRIBUTE_SETS)
def test_verdict_attributes_are_stored_as_the_sdk_stores_them(attributes: dict[str, object]) -> None:
    expected = BoundedAttributes(attributes=attributes, immutable=True, max_value_len=None)  # type: ignore[arg-type]
    stored = _bounded(attributes)  # type: ignore[arg-type]
    assert type(stored) is BoundedAttributes
    assert list(stored.items()) == list(expected.items())
    assert {key: type(value) for key, value in stored.items()} == {
        key: type(value) for key, value in expected.items()
    }
    assert (stored.dropped, stored.maxlen, stored.max_value_len) == (expected.dropped, None, None)
    with pytest.raises(TypeError):  # the message differs between SDK releases
        stored["new"] = "value"

"""One span copy: every field kept, the dropped counts too, through the OTLP/JSON writer and reader."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_shapecheck.otlp._files import parse_spans
from otel_shapecheck.otlp._ids import span_id_hex, trace_id_hex
from otel_shapecheck.otlp._jsonl import write_spans_jsonl
from otel_shapecheck.otlp._span_copy import copy_span

PARENT = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, True, TraceFlags(1))


@pytest.fixture(name="limited")
def _limited() -> Iterator[ReadableSpan]:
    """A real SDK span that dropped 2 attributes, 1 event and 1 link to its provider's limits."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agent"}),
        span_limits=SpanLimits(max_span_attributes=2, max_events=1, max_links=1),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent.scope", "1.0")
    links = [trace.Link(PARENT, {"n": 1}), trace.Link(PARENT, {"n": 2})]
    context = trace.set_span_in_context(NonRecordingSpan(PARENT))
    with tracer.start_as_current_span("chat m", context=context, kind=SpanKind.CLIENT, links=links) as span:
        for index in range(4):
            span.set_attribute(f"a{index}", index)
        span.add_event("first", {"k": "v"})
        span.add_event("second")
        span.set_status(Status(StatusCode.ERROR, "failed"))
    (ended,) = exporter.get_finished_spans()
    yield ended
    provider.shutdown()


def _fields(span: ReadableSpan) -> dict[str, Any]:
    return {
        "name": span.name,
        "context": span.context,
        "parent": span.parent,
        "kind": span.kind,
        "status": (span.status.status_code, span.status.description),
        "times": (span.start_time, span.end_time),
        "attributes": dict(span.attributes or {}),
        "events": [(event.name, dict(event.attributes or {}), event.timestamp) for event in span.events],
        "links": [(link.context, dict(link.attributes or {})) for link in span.links],
        "resource": span.resource,
        "scope": span.instrumentation_scope,
        "dropped": (span.dropped_attributes, span.dropped_events, span.dropped_links),
    }


def _round_trip(span: ReadableSpan) -> ReadableSpan:
    stream = io.StringIO()
    write_spans_jsonl([span], stream)
    (read,) = parse_spans(stream.getvalue().encode(), "copy.jsonl")
    return read


def test_a_copy_keeps_every_field(limited: ReadableSpan) -> None:
    assert (limited.dropped_attributes, limited.dropped_events, limited.dropped_links) == (2, 1, 1)
    copy = copy_span(limited)
    assert _fields(copy) == _fields(limited)
    assert copy.resource is limited.resource, "the OTLP encoder groups spans by the resource object"


def test_a_copy_with_new_attributes_and_events_keeps_the_dropped_counts(limited: ReadableSpan) -> None:
    copy = copy_span(limited, attributes={"only": "this"}, events=[Event("added", {}, 5)])
    again = copy_span(copy)
    for span in (copy, again, _round_trip(again)):
        assert dict(span.attributes or {}) == {"only": "this"}
        assert [event.name for event in span.events] == ["added"]
        assert (span.dropped_attributes, span.dropped_events, span.dropped_links) == (2, 1, 1)


def test_a_copy_reads_back_as_the_original_does(limited: ReadableSpan) -> None:
    assert _fields(_round_trip(copy_span(limited))) == _fields(_round_trip(limited))


def test_the_codec_writes_sdk_ids_as_the_otlp_json_writer_does() -> None:
    assert trace_id_hex(PARENT.trace_id) == "0af7651916cd43dd8448eb211c80319c"
    assert span_id_hex(PARENT.span_id) == "b7ad6b7169203331"
    assert (trace_id_hex(1), span_id_hex(1)) == ("0" * 31 + "1", "0" * 15 + "1")

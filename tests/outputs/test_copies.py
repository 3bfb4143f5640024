"""The copies the pipeline hands out (enriched, duplicate, run) keep every field of the span they copy."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_shapecheck._attributes import DUPLICATE_OF, EVALUATION_EVENT, RUN_EVALUATED
from otel_shapecheck.checks._base import Verdict
from otel_shapecheck.outputs._enrich import duplicate_copy, enriched_copy, run_copy

LINKED = SpanContext(0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331, True, TraceFlags(1))


@pytest.fixture(name="limited")
def _limited() -> Iterator[ReadableSpan]:
    """A real SDK span that dropped 1 attribute, 2 events and 1 link to its provider's limits."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agent"}),
        span_limits=SpanLimits(max_span_attributes=2, max_events=1, max_links=1),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    links = [trace.Link(LINKED), trace.Link(LINKED)]
    with provider.get_tracer("agent.scope").start_as_current_span(
        "invoke_agent a", kind=SpanKind.CLIENT, links=links
    ) as span:
        span.set_attributes({"a": 1, "b": 2, "c": 3})
        for name in ("one", "two", "three"):
            span.add_event(name)
        span.set_status(Status(StatusCode.ERROR, "failed"))
    (ended,) = exporter.get_finished_spans()
    yield ended
    provider.shutdown()


def _kept(copy: ReadableSpan, original: ReadableSpan) -> None:
    assert (copy.name, copy.context, copy.parent, copy.kind) == (
        original.name,
        original.context,
        original.parent,
        original.kind,
    )
    assert (copy.start_time, copy.end_time, copy.status.status_code, copy.status.description) == (
        original.start_time,
        original.end_time,
        StatusCode.ERROR,
        "failed",
    )
    assert copy.resource is original.resource and copy.instrumentation_scope is original.instrumentation_scope
    assert [link.context for link in copy.links] == [link.context for link in original.links]
    assert (copy.dropped_attributes, copy.dropped_events, copy.dropped_links) == (1, 2, 1)
    assert {**(original.attributes or {})}.items() <= {**(copy.attributes or {})}.items()


def test_enriched_copy_adds_the_verdicts_and_keeps_the_rest(limited: ReadableSpan) -> None:
    verdict = Verdict("shapecheck.figures", {"shapecheck.figures.checked": 2}, "supported", "all carried")
    copy = enriched_copy(limited, [verdict])
    _kept(copy, limited)
    assert (copy.attributes or {})["shapecheck.figures.checked"] == 2
    assert [event.name for event in copy.events] == ["three", EVALUATION_EVENT]


def test_duplicate_copy_adds_the_mark_and_keeps_the_rest(limited: ReadableSpan) -> None:
    copy = duplicate_copy(limited, "b7ad6b7169203331")
    _kept(copy, limited)
    assert (copy.attributes or {})[DUPLICATE_OF] == "b7ad6b7169203331"
    assert [event.name for event in copy.events] == ["three"]


def test_run_copy_adds_the_summary_and_keeps_the_rest(limited: ReadableSpan) -> None:
    copy = run_copy(limited, {RUN_EVALUATED: 3})
    _kept(copy, limited)
    assert (copy.attributes or {})[RUN_EVALUATED] == 3
    assert [event.name for event in copy.events] == ["three"]

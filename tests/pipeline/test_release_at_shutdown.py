"""A processor that is shut down lets go of its traces' spans at once, without a garbage collection.

Its ledger and its trace store refer to each other, so whatever the trace facts still held would
otherwise wait for a full collection, which then runs during whatever the application does next.
"""

from __future__ import annotations

import gc
import weakref

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor

from .agent import RecordingCheck, tool_turn


class _Noting(SpanProcessor):
    """Notes each ended span weakly (the SDK hands every processor the same ended span)."""

    def __init__(self) -> None:
        self.ended: list[weakref.ref[ReadableSpan]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.ended.append(weakref.ref(span))


def test_the_spans_its_trace_facts_kept_are_freed_at_shutdown() -> None:
    exporter = InMemorySpanExporter()
    check = RecordingCheck()
    processor = ShapecheckSpanProcessor(SimpleSpanProcessor(exporter), checks=[check])
    noting = _Noting()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(noting)
    tracer = provider.get_tracer("tests.shutdown")
    handler = TelemetryHandler(tracer_provider=provider)
    gc.collect()
    gc.disable()  # only reference counts may free them
    try:
        for _ in range(3):
            tool_turn(handler, tracer, names_output=False)
        provider.shutdown()
        assert check.subjects  # the calls were evaluated, on facts that held their spans
        exporter.clear()
        check.subjects.clear()
        alive = [ref for ref in noting.ended if ref() is not None]
    finally:
        gc.enable()
    assert len(noting.ended) == 12
    assert alive == []

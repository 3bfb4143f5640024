"""Verdicts handed to the event exporter, and the bounds on per-trace facts."""

from __future__ import annotations

from opentelemetry.context import Context
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import EvaluationEventEmitter, Shapecheck, ShapecheckSpanProcessor
from otel_shapecheck._attributes import EVALUATION_EVENT, EVALUATION_NAME
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import CountingProcessor, RecordingCheck, chat, execute_tool, tool_turn


def test_verdicts_reach_the_event_exporter_parented_to_their_span(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """Verdicts become log records with the trace and span id of their span, flushed by ``force_flush``."""
    log_exporter = InMemoryLogRecordExporter()
    events = EvaluationEventEmitter(log_exporter, forward="all", schedule_delay_millis=60_000)
    shapecheck = Shapecheck(SimpleSpanProcessor(span_exporter), events=events, checks=[RecordingCheck()])
    tracer_provider.add_span_processor(shapecheck.span_processor)
    try:
        tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
        assert shapecheck.force_flush()
        records = log_exporter.get_finished_logs()
        chats = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
        assert len(records) == len(chats) == 2
        assert {(record.log_record.trace_id, record.log_record.span_id) for record in records} == {
            (span.context.trace_id, span.context.span_id) for span in chats if span.context is not None
        }
        for record in records:
            assert record.log_record.event_name == EVALUATION_EVENT
            assert (record.log_record.attributes or {})[EVALUATION_NAME] == "test.recording"
    finally:
        shapecheck.shutdown()
    assert shapecheck.counts().error_count() == 0


def test_per_trace_facts_are_bounded(tracer_provider: TracerProvider) -> None:
    """Past ``max_facts_per_trace`` executions are not kept (counted); the answer sees only the kept ones."""
    check = RecordingCheck()
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_facts_per_trace=4),
    )
    tracer_provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    try:
        with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent many tools"):
            for index in range(10):
                execute_tool(handler, result={"row": index})
            chat(handler, answer="Done.")
        assert processor.force_flush()
    finally:
        processor.shutdown()
    (answer,) = check.subjects
    assert 0 < len(answer.trace_tool_results) <= 4
    assert processor.counts().facts_dropped >= 6
    assert len(downstream.spans) == 12


def test_traces_beyond_max_traces_are_forgotten_oldest_first(tracer_provider: TracerProvider) -> None:
    """With ``max_traces`` traces kept, the least recently active trace's facts go; its spans still pass."""
    check = RecordingCheck()
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_traces=2),
    )
    tracer_provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    try:
        with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent first"):
            execute_tool(handler)
            for _ in range(2):  # two other traces with facts become more recent meanwhile
                execute_tool(handler, context=Context())
            chat(handler, answer="first answer")
        assert processor.force_flush()
    finally:
        processor.shutdown()
    (answer,) = check.subjects
    assert answer.trace_tool_results == ()
    assert processor.counts().facts_dropped >= 1
    assert len(downstream.spans) == 5

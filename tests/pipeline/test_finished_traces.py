"""Finished traces: once a trace's local root ended, its facts go when ``max_finished_traces`` other local
roots ended after it and its held spans were released; the spans those facts referred to are freed
rather than kept until ``max_traces`` newer traces push them out. A span that ends after its root
within that grace still finds its trace's facts; one that ends after it finds them gone, counted."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._hot_state import HotPathState
from otel_shapecheck.pipeline._ledger import Ledger
from otel_shapecheck.pipeline._metrics import ProcessorCounters
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._recorder import SpanRecorder
from otel_shapecheck.readers._classify import OPERATION_NAME

from .agent import ANSWER, CountingProcessor, RecordingCheck, chat, execute_tool, tool_turn

KEPT = 3


class _Weakly(CountingProcessor):
    """A downstream that keeps only weak references to what it is handed, by span name."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, weakref.ReferenceType[ReadableSpan]]] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.refs.append((span.name, weakref.ref(span)))

    def alive(self, prefix: str) -> int:
        gc.collect()
        return sum(1 for name, ref in self.refs if name.startswith(prefix) and ref() is not None)


def _pipeline(
    downstream: CountingProcessor, **options: int
) -> tuple[ShapecheckSpanProcessor, TracerProvider, TelemetryHandler, RecordingCheck]:
    check = RecordingCheck()
    processor = ShapecheckSpanProcessor(
        downstream, checks=[check], options=ProcessorOptions(max_finished_traces=KEPT, **options)
    )
    provider = TracerProvider()
    provider.add_span_processor(processor)
    return processor, provider, TelemetryHandler(tracer_provider=provider), check


@pytest.fixture
def weakly() -> Iterator[_Weakly]:
    yield _Weakly()


def test_only_the_last_finished_traces_keep_their_tool_executions_alive(weakly: _Weakly) -> None:
    processor, provider, handler, _ = _pipeline(weakly)
    tracer = provider.get_tracer("tests.finished")
    for _ in range(KEPT + 7):
        with tracer.start_as_current_span("GET /ask"):
            tool_turn(handler, tracer)
    assert processor.force_flush()
    assert weakly.alive("execute_tool") == KEPT
    assert processor.counts().facts_dropped == 0
    provider.shutdown()


def test_a_trace_whose_spans_are_held_keeps_its_facts_until_they_are_released(weakly: _Weakly) -> None:
    # No worker room to drain on its own schedule: every evaluation waits for the flush below.
    processor, provider, handler, check = _pipeline(weakly, schedule_delay_millis=60_000)
    tracer = provider.get_tracer("tests.finished")
    for _ in range(KEPT + 4):
        with tracer.start_as_current_span("GET /ask"):
            tool_turn(handler, tracer)
    assert processor.force_flush()
    assert len(check.subjects) == 2 * (KEPT + 4)  # every chat call evaluated, with its facts
    assert all(not subject.incomplete for subject in check.subjects)
    assert weakly.alive("execute_tool") == KEPT
    provider.shutdown()


def _root_ended_after_a_tool(tracer: trace.Tracer, handler: TelemetryHandler) -> Context:
    """A root whose tool execution ended before it did; the context a background task goes on in."""
    root = tracer.start_span("GET /ask")
    inside = trace.set_span_in_context(root)
    execute_tool(handler, call_id="call_1", context=inside)
    root.end()  # the response went out; a background task carries on under it
    return inside


def test_a_span_ending_after_its_root_within_the_grace_finds_its_facts() -> None:
    processor, provider, handler, check = _pipeline(CountingProcessor())
    tracer = provider.get_tracer("tests.finished")
    inside = _root_ended_after_a_tool(tracer, handler)
    chat(handler, answer=ANSWER, context=inside)
    assert processor.force_flush()
    assert processor.counts().facts_dropped == 0
    (subject,) = check.subjects
    assert subject.llm_call is not None and not subject.incomplete
    assert len(subject.trace_tool_results) == 1  # the execution that ended before the root
    provider.shutdown()


def test_past_the_grace_a_late_span_finds_its_trace_forgotten_and_the_loss_is_counted() -> None:
    processor, provider, handler, check = _pipeline(CountingProcessor())
    tracer = provider.get_tracer("tests.finished")
    inside = _root_ended_after_a_tool(tracer, handler)
    for _ in range(KEPT):  # as many other traces finish meanwhile
        with tracer.start_as_current_span("GET /other"):
            tool_turn(handler, tracer)
    assert processor.force_flush()
    chat(handler, answer=ANSWER, context=inside)
    assert processor.force_flush()
    assert processor.counts().facts_dropped == 1  # the execution, forgotten with its finished trace
    late = check.subjects[-1]  # evaluated with what its trace shows from here, as after max_traces
    assert late.llm_call is not None and late.trace_tool_results == ()
    provider.shutdown()


def test_a_span_under_a_remote_parent_is_a_local_root_but_one_under_a_live_remote_parent_is_not(
    weakly: _Weakly,
) -> None:
    processor, provider, handler, _ = _pipeline(weakly)
    tracer = provider.get_tracer("tests.finished")
    for number in range(KEPT + 3):
        carried = SpanContext(number + 1, 0xABC, is_remote=True, trace_flags=TraceFlags(1))
        with tracer.start_as_current_span(
            "consume", context=trace.set_span_in_context(NonRecordingSpan(carried))
        ):
            tool_turn(handler, tracer)
    assert processor.force_flush()
    assert weakly.alive("execute_tool") == KEPT
    # A server span whose remote parent is this process's own client span: the client is the root.
    with tracer.start_as_current_span("GET /outer") as client:
        outer = client.get_span_context()
        remote = SpanContext(outer.trace_id, outer.span_id, is_remote=True, trace_flags=TraceFlags(1))
        with tracer.start_as_current_span(
            "GET /inner", context=trace.set_span_in_context(NonRecordingSpan(remote))
        ):
            tool_turn(handler, tracer)
        assert processor.force_flush()
        assert weakly.alive("execute_tool") == KEPT + 1  # the inner server span did not finish it
    assert processor.force_flush()
    assert weakly.alive("execute_tool") == KEPT
    provider.shutdown()


def test_a_processor_that_sees_no_starts_keeps_facts_to_max_traces() -> None:
    """The gateway: spans of one trace arrive from several services in any order, so a root that
    arrives first finishes nothing."""
    recorded = CountingProcessor()
    provider = TracerProvider()
    provider.add_span_processor(recorded)
    handler = TelemetryHandler(tracer_provider=provider)
    tracer = provider.get_tracer("tests.finished")
    for _ in range(KEPT + 5):
        with tracer.start_as_current_span("GET /ask"):
            tool_turn(handler, tracer)
    provider.shutdown()
    weakly = _Weakly()
    processor = ShapecheckSpanProcessor(
        weakly, checks=[RecordingCheck()], options=ProcessorOptions(max_finished_traces=KEPT)
    )
    for span in recorded.spans:  # ended spans only, as the gateway hands them over
        processor.on_end(span)
    recorded.spans.clear()
    assert processor.force_flush()
    assert weakly.alive("execute_tool") == KEPT + 5
    processor.shutdown()


def test_a_root_end_recorded_out_of_order_does_not_finish_its_trace() -> None:
    """With the recording queue full, a root's end is recorded on the application's thread while spans
    of its trace are still queued: the trace must keep the facts they will need (that their parent
    ended), however many traces finish before they are recorded."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.finished")
    for name in ("a", "b", "c"):
        with tracer.start_as_current_span(f"root {name}", context=Context()):
            operation = "chat" if name == "a" else "execute_tool"
            with tracer.start_as_current_span(f"{operation} {name}", attributes={OPERATION_NAME: operation}):
                pass
    spans = {span.name: span for span in memory.get_finished_spans()}
    state = HotPathState(ProcessorCounters(), lambda span: None, max_live=10)
    state.sees_starts = True
    state.counters.started_untracked = 1  # the live spans overflowed once: parents' ends come from facts
    ledger = Ledger(
        state,
        max_wait_seconds=30,
        max_pending_spans=10,
        max_queue_size=10,
        max_traces=10,
        max_facts_per_trace=10,
        max_fact_bytes=1 << 20,
        max_finished_traces=1,
    )
    recorder = SpanRecorder(state, ledger, lambda: None)
    root = spans["root a"].context
    assert root is not None
    recorder.record_forwarded_end(root, out_of_order=True, local_root=True)  # ahead of its queued chat
    for name in ("b", "c"):  # two traces finish, in order, before the chat is recorded
        recorder.record_ended(spans[f"execute_tool {name}"])
        context = spans[f"root {name}"].context
        assert context is not None
        recorder.record_forwarded_end(context, local_root=True)
    assert spans["root b"].context is not None
    assert spans["root b"].context.trace_id not in state.fact_traces  # the bound still lets go of others
    recorder.record_ended(spans["chat a"])
    assert ledger.ready_count() == 1  # final at once: its parent's end was still in its trace's facts
    provider.shutdown()

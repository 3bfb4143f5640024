"""The recording thread: spans queued by ``on_end`` are recorded in end order, against what was live then.

Each test stalls the recording thread on purpose (a downstream that blocks while that thread forwards a
tool-execution span) so that spans pile up in its queue while the application goes on ending others.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext, Tracer

from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    TOOL_CHOICE_MENU_SOURCE,
)
from otel_shapecheck.checks._base import Check
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._hot_state import HotPathState, Item
from otel_shapecheck.pipeline._intake import THREAD_NAME, LedgerIntake
from otel_shapecheck.pipeline._metrics import ProcessorCounters
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

from .agent import RecordingCheck

MENU = json.dumps(
    [
        {"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"},
        {"name": "get_weather", "description": "Get the current weather for a city"},
    ]
)
QUESTION = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "How much storage in Lyon?"}]}])
CALL = json.dumps(
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}]
)


class _StallingDownstream(CollectingSpanProcessor):
    """Collects spans; while ``gate`` is closed, blocks the recording thread when it forwards a span."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.stalled = threading.Event()
        self.threads: dict[str, str] = {}

    def on_end(self, span: ReadableSpan) -> None:
        thread = threading.current_thread().name
        self.threads[span.name] = thread
        if thread == THREAD_NAME and not self.gate.is_set():
            self.stalled.set()
            self.gate.wait(30)
        super().on_end(span)

    def names(self) -> list[str]:
        return [span.name for span in self.spans]

    def attributes(self, name: str) -> dict[str, object]:
        (span,) = [span for span in self.spans if span.name == name]
        return dict(span.attributes or {})


def _stalled_processor(
    checks: Sequence[Check], **options: int
) -> tuple[TracerProvider, Tracer, ShapecheckSpanProcessor, _StallingDownstream]:
    """A processor whose recording thread is stuck forwarding a tool span until its downstream's gate
    opens."""
    downstream = _StallingDownstream()
    processor = ShapecheckSpanProcessor(downstream, checks=list(checks), options=ProcessorOptions(**options))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("tests.recording")
    with tracer.start_as_current_span("execute_tool warm_up") as tool:
        tool.set_attribute("gen_ai.operation.name", "execute_tool")
    assert downstream.stalled.wait(5)
    return provider, tracer, processor, downstream


@contextmanager
def _stalled(
    checks: Sequence[Check], **options: int
) -> Iterator[tuple[Tracer, ShapecheckSpanProcessor, _StallingDownstream]]:
    """:func:`_stalled_processor`, its gate opened and its provider shut down afterwards."""
    provider, tracer, processor, downstream = _stalled_processor(checks, **options)
    try:
        yield tracer, processor, downstream
    finally:
        downstream.gate.set()
        provider.shutdown()


def _chat(tracer: Tracer, name: str, *, output: str | None) -> None:
    with tracer.start_as_current_span(name) as chat:
        chat.set_attribute("gen_ai.operation.name", "chat")
        chat.set_attribute("gen_ai.input.messages", QUESTION)
        if output is not None:
            chat.set_attribute("gen_ai.output.messages", output)


def test_spans_queued_before_their_parent_ended_are_recorded_against_it_live() -> None:
    """A parent that ends while its children still wait to be recorded is forwarded at once, yet the
    children take its menu and the one waiting for its end is released by it, complete."""
    recording = RecordingCheck()
    with _stalled([*build_checks("hashing"), recording]) as (tracer, processor, downstream):
        with tracer.start_as_current_span("loop") as loop:
            loop.set_attribute("gen_ai.tool.definitions", MENU)
            _chat(tracer, "chat names its call", output=CALL)
            _chat(tracer, "chat shows no call", output=None)
        assert downstream.names() == ["loop"]  # forwarded from on_end, not queued behind the stall
        assert downstream.threads["loop"] != THREAD_NAME
        downstream.gate.set()
        assert processor.force_flush(10_000)
        assert downstream.attributes("chat names its call")[TOOL_CHOICE_MENU_SOURCE] == "ancestor"
        assert downstream.attributes("chat shows no call")["test.recording.incomplete"] is False
        counts = processor.counts()
    assert counts.released_by_deadline == counts.released_by_cap == 0
    assert counts.held == counts.evaluated == 2


def test_an_analyst_span_ending_before_its_attempts_are_recorded_is_held() -> None:
    """Its attempts are still queued when it ends: it is held for evaluation all the same."""
    recording = RecordingCheck()
    with _stalled([recording]) as (tracer, processor, downstream):
        with tracer.start_as_current_span("analyze triage") as run:
            for attempt, accepted in ((1, 0), (2, 2)):
                with tracer.start_as_current_span("attempt") as span:
                    span.set_attributes({ANALYST_ID: "triage", ANALYST_ATTEMPT: attempt})
                    span.set_attributes({ROWS_EMITTED: 2, ROWS_ACCEPTED: accepted})
        assert "analyze triage" not in downstream.names()
        downstream.gate.set()
        assert processor.force_flush(10_000)
    analyst_run = recording.subject(run.get_span_context().span_id).analyst_run
    assert analyst_run is not None
    assert [(attempt.attempt, attempt.accepted) for attempt in analyst_run.attempts] == [(1, 0), (2, 2)]


def test_a_full_recording_queue_is_recorded_by_the_ending_thread() -> None:
    """Past ``max_queue_size`` queued spans, ``on_end`` records the oldest itself: nothing goes
    unrecorded although the recording thread is stuck forwarding a span."""
    stalled = _stalled([RecordingCheck()], max_queue_size=2)
    with stalled as (tracer, processor, downstream):
        for index in range(6):
            _chat(tracer, f"chat {index}", output=CALL)
        counts = processor.counts()
        assert counts.seen == 5  # the tool span, and chats 0-3 recorded by the application's thread
        assert counts.forwarded_unrecorded == 0
        downstream.gate.set()
        assert processor.force_flush(10_000)
        names = downstream.names()
        counts = processor.counts()
    assert sorted(names) == [*(f"chat {index}" for index in range(6)), "execute_tool warm_up"]
    assert counts.seen == 7 and counts.held + counts.forwarded_untouched == counts.seen


def test_shutdown_forwards_what_a_stuck_recording_thread_did_not_reach() -> None:
    """Shutdown waits for the recording thread at most its timeout, then forwards the queue as it came."""
    _, tracer, processor, downstream = _stalled_processor([RecordingCheck()], shutdown_timeout_millis=300)
    try:
        for index in range(3):
            _chat(tracer, f"chat {index}", output=CALL)
        started = time.monotonic()
        processor.shutdown()
        assert time.monotonic() - started < 5
        deadline = time.monotonic() + 5
        while len(downstream.names()) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sorted(downstream.names()) == ["chat 0", "chat 1", "chat 2"]
        assert processor.counts().forwarded_unrecorded == 3
    finally:
        downstream.gate.set()
    deadline = time.monotonic() + 5
    while len(downstream.names()) < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert sorted(downstream.names()) == ["chat 0", "chat 1", "chat 2", "execute_tool warm_up"]


def test_a_full_queue_is_made_room_in_by_the_ending_thread_in_order() -> None:
    """With the queue full and the recording thread not stuck, the caller records the oldest items."""
    forwarded: list[str] = []
    recorder = _NamingRecorder()
    state = HotPathState(ProcessorCounters(), lambda span: forwarded.append(span.name), max_live=8)
    intake = LedgerIntake(state, recorder, max_size=2)  # not started: only callers record
    recorded = recorder.recorded
    provider = TracerProvider(shutdown_on_exit=False)
    spans = []
    for name in ("first", "second", "third"):
        span = provider.get_tracer("tests").start_span(name)
        span.end()
        spans.append(span)
    state.queued.extend([spans[0], spans[1].get_span_context()])
    assert intake.make_room()
    assert recorded == ["first"]
    state.queued.append(spans[2])
    assert intake.make_room()
    assert recorded == ["first", f"end {spans[1].get_span_context().span_id}"]
    assert list(state.queued) == [spans[2]]
    assert forwarded == ["first"]


def test_spans_ended_after_shutdown_are_forwarded_and_counted_once() -> None:
    """After shutdown nothing is queued: an analyst span whose attempt was recorded before, a GenAI span
    and an ordinary span are each forwarded once and seen once."""
    downstream = _StallingDownstream()
    downstream.gate.set()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("tests.recording")
    with tracer.start_as_current_span("analyze triage"):
        with tracer.start_as_current_span("attempt") as span:
            span.set_attributes({ANALYST_ID: "triage", ANALYST_ATTEMPT: 1})
        processor.shutdown()
    _chat(tracer, "chat", output=CALL)
    with tracer.start_as_current_span("GET /health"):
        pass
    counts = processor.counts()
    assert sorted(downstream.names()) == ["GET /health", "analyze triage", "attempt", "chat"]
    assert counts.seen == 4 and counts.forwarded_unrecorded == 2


def test_a_closed_queue_takes_nothing_and_gives_back_what_was_appended_late() -> None:
    """After close, ``put`` refuses (its caller forwards); an item appended while it closed is taken
    back by its caller once, unless the queue's last round took it already."""
    state = HotPathState(ProcessorCounters(), lambda span: None, max_live=8)
    intake = LedgerIntake(state, _NamingRecorder(), max_size=4)
    provider = TracerProvider(shutdown_on_exit=False)
    span = provider.get_tracer("tests").start_span("chat")
    span.end()
    assert intake.close(1) == []
    assert not intake.put(span)
    assert not state.queued
    state.queued.append(span)  # what an append racing close() leaves behind
    assert intake._take_back(span)
    assert not intake._take_back(span)
    assert not state.queued


class _NamingRecorder:
    """Records what the queue hands it by name, and forwards every span it is given."""

    def __init__(self) -> None:
        self.recorded: list[str] = []

    def record_ended(self, span: ReadableSpan) -> list[ReadableSpan]:
        self.recorded.append(span.name)
        return [span]

    def record_forwarded_end(
        self, context: SpanContext, *, out_of_order: bool = False, unrecorded: ReadableSpan | None = None
    ) -> list[ReadableSpan]:
        self.recorded.append(f"end {context.span_id}")
        return []


class _AppendLog(deque[Item]):
    """A recording queue that notes the order items were appended in, whichever thread appended them."""

    def __init__(self) -> None:
        super().__init__()
        self.appended: list[Item] = []
        self._lock = threading.Lock()

    def append(self, item: Item) -> None:
        with self._lock:  # the append and its note in one step: the note's order is the queue's
            super().append(item)
            self.appended.append(item)


class _SlowRecorder(_NamingRecorder):
    """Records by identity, with which thread recorded, slower than the threads ending spans."""

    def __init__(self) -> None:
        super().__init__()
        self.items: list[object] = []
        self.threads: set[str] = set()

    def record_ended(self, span: ReadableSpan) -> list[ReadableSpan]:
        sum(range(300))  # slower than an append: the small queue fills and callers make room
        self.items.append(span)
        self.threads.add(threading.current_thread().name)
        return [span]


def test_recording_in_runs_keeps_queue_order_with_callers_making_room() -> None:
    """The recording thread takes several items per holding of the recording lock while four threads
    fill a small queue and make room in it themselves: every span is recorded once, in the order it
    was queued, by both kinds of thread, and forwarded once."""
    forwarded: list[ReadableSpan] = []
    recorder = _SlowRecorder()
    state = HotPathState(ProcessorCounters(), forwarded.append, max_live=8)
    queue = state.queued = _AppendLog()
    intake = LedgerIntake(state, recorder, max_size=3)
    intake.start()
    tracer = TracerProvider(shutdown_on_exit=False).get_tracer("tests")
    spans = []
    for number in range(1200):
        span = tracer.start_span(f"chat {number}")
        span.end()
        spans.append(span)

    def end(share: Sequence[ReadableSpan]) -> None:
        for span in share:
            assert intake.put(span)

    threads = [threading.Thread(target=end, args=(spans[first::4],)) for first in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert intake.flush(10)
    assert recorder.items == queue.appended[: len(recorder.items)]
    assert sorted(map(id, recorder.items)) == sorted(map(id, spans))
    assert sorted(map(id, forwarded)) == sorted(map(id, spans))
    assert THREAD_NAME in recorder.threads and len(recorder.threads) > 1
    assert intake.close(5) == []


def test_a_flush_is_answered_after_the_spans_recorded_before_it_are_forwarded() -> None:
    """A flush request ends the recording thread's run: it is answered only once every span queued
    before it was recorded and forwarded (what ``force_flush`` then flushes downstream)."""
    forwarded: list[str] = []
    state = HotPathState(ProcessorCounters(), lambda span: forwarded.append(span.name), max_live=8)
    intake = LedgerIntake(state, _NamingRecorder(), max_size=64)
    tracer = TracerProvider(shutdown_on_exit=False).get_tracer("tests")
    names = [f"chat {number}" for number in range(20)]
    for name in names:
        span = tracer.start_span(name)
        span.end()
        state.queued.append(span)
    intake.start()  # the queue was filled before: the thread takes it in runs, the flush request among them
    assert intake.flush(5)
    assert forwarded == names
    assert intake.close(5) == []

"""Pacing: while the application ends spans and keeps the interpreter busy, the worker evaluates in short
slices and rests between them, resting less as its backlog nears a bound; a flush, a shutdown, half of
a bound or a second-old ready span make it take whole batches again, so a busy application's spans
are all evaluated as an unpaced worker would evaluate them."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_shapecheck.checks._base import Subject, Verdict
from otel_shapecheck.pipeline._completion import Backlog
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._pacing import (
    CALM_RESTS,
    CONTENDED_SECONDS,
    MAX_DEFER_SECONDS,
    MAX_REST_SECONDS,
    PACED_UP_TO,
    PROBE_SECONDS,
    SLICE_CPU_SECONDS,
    WORKER_SHARE,
    Pacing,
)
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

from .agent import RecordingCheck

MENU = json.dumps([{"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"}])
CALL = json.dumps(
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}]
)
BATCH = 64
NOTHING_WAITS = Backlog(0.0, 0.0)


class _Application:
    """The application's side as the pacing reads it: spans it ended, and the worker's backlog."""

    def __init__(self) -> None:
        self.ended = 0
        self.backlog = NOTHING_WAITS


def _pacing(application: _Application, max_wait_seconds: float = 30.0) -> Pacing:
    return Pacing(
        lambda: application.ended,
        lambda now: application.backlog,
        batch_size=BATCH,
        max_wait_seconds=max_wait_seconds,
    )


def _rest_with(pacing: Pacing, application: _Application, backlog: Backlog) -> tuple[int, float]:
    """The slice and rest a busy application gets with ``backlog`` (a millisecond a span known)."""
    application.ended += 1
    application.backlog = backlog
    size = pacing.next_slice(False, 0.0)
    return size, pacing.rest_after(0.001, 1)


def test_a_busy_application_gets_short_slices_and_rests_sized_by_the_worker_share() -> None:
    application = _Application()
    pacing = _pacing(application)
    application.ended += 1
    assert pacing.next_slice(False, 0.0) == BATCH  # no cost known yet: the first batch measures it
    assert pacing.rest_after(0.064, BATCH) == MAX_REST_SECONDS  # a long slice: the longest rest
    size, rest = _rest_with(pacing, application, NOTHING_WAITS)
    assert size == int(SLICE_CPU_SECONDS / 0.001)
    assert rest == pytest.approx(0.001 * (1 - WORKER_SHARE) / WORKER_SHARE)
    application.ended += 1
    assert pacing.next_slice(False, 0.01) == int(SLICE_CPU_SECONDS / 0.001)
    assert pacing.rest_after(1.0, 2) == MAX_REST_SECONDS


@pytest.mark.parametrize(
    "backlog",
    [
        lambda fraction: Backlog(fraction, 0.0),  # of the queue, waiting spans, traces or fact bytes
        lambda fraction: Backlog(0.0, fraction / PACED_UP_TO * MAX_DEFER_SECONDS),  # the oldest's age
    ],
    ids=["bound", "age"],
)
def test_the_worker_rests_less_as_its_backlog_grows_and_not_at_all_from_half_a_bound(
    backlog: Callable[[float], Backlog],
) -> None:
    application = _Application()
    pacing = _pacing(application)
    pacing.rest_after(0.064, BATCH)  # a millisecond a span
    rests = []
    for fraction in (0.0, 0.1, 0.2, 0.3, 0.4):
        size, rest = _rest_with(pacing, application, backlog(fraction))
        assert size == int(SLICE_CPU_SECONDS / 0.001)
        rests.append(rest)
    assert rests == sorted(rests, reverse=True) and len(set(rests)) == len(rests)
    for fraction in (PACED_UP_TO, 0.9, 1.0):
        assert _rest_with(pacing, application, backlog(fraction)) == (BATCH, 0.0)


def test_a_short_max_wait_shortens_how_long_pacing_may_defer_a_span() -> None:
    application = _Application()
    pacing = _pacing(application, max_wait_seconds=0.2)
    pacing.rest_after(0.064, BATCH)
    assert _rest_with(pacing, application, Backlog(0.0, 0.01))[0] < BATCH
    assert _rest_with(pacing, application, Backlog(0.0, 0.05)) == (BATCH, 0.0)  # a quarter of max_wait


def test_an_idle_application_or_a_flush_get_whole_batches_without_rests() -> None:
    application = _Application()
    pacing = _pacing(application)
    pacing.rest_after(0.064, BATCH)
    assert pacing.next_slice(False, 0.0) == BATCH  # nothing ended since the worker last looked
    assert pacing.rest_after(0.01, BATCH) == 0.0
    application.ended += 1
    assert pacing.next_slice(True, 0.0) == BATCH  # a flush or a shutdown waits
    assert pacing.rest_after(0.01, BATCH) == 0.0


def test_an_application_that_leaves_the_lock_free_gets_whole_batches_until_a_rest_ends_late() -> None:
    application = _Application()
    pacing = _pacing(application)
    pacing.rest_after(0.064, BATCH)  # a millisecond a span
    for _ in range(CALM_RESTS):
        application.ended += 1
        assert pacing.next_slice(False, 0.0) < BATCH
        pacing.rest_after(0.001, 1)
        pacing.rested(0.0)  # on time: nobody wanted the lock
    application.ended += 1
    assert pacing.next_slice(False, 0.0) == BATCH
    assert pacing.rest_after(0.001, BATCH) == PROBE_SECONDS
    pacing.rested(2 * CONTENDED_SECONDS)  # late: another thread held the lock
    application.ended += 1
    assert pacing.next_slice(False, 0.0) < BATCH


class _CostlyCheck(RecordingCheck):
    """The recording check, spending about 0.3 ms of pure Python per subject."""

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        deadline = time.thread_time() + 0.0003 * len(subjects)
        while time.thread_time() < deadline:
            pass
        return super().evaluate(subjects)


class _HeldCheck(RecordingCheck):
    """The recording check, holding the worker in its first batch until the test lets it go."""

    def __init__(self) -> None:
        super().__init__()
        self.entered = threading.Event()
        self.go = threading.Event()

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        self.entered.set()
        self.go.wait(30)
        return super().evaluate(subjects)


def _end_chat(tracer_provider: TracerProvider, number: int) -> None:
    tracer = tracer_provider.get_tracer("test.pacing")
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.tool.definitions": MENU,
        "gen_ai.output.messages": CALL,
    }
    with tracer.start_as_current_span(f"chat {number}", attributes=attributes):
        pass


def _held_up(options: ProcessorOptions) -> tuple[ShapecheckSpanProcessor, TracerProvider, _HeldCheck]:
    """A processor whose worker is held in the check with the first span, so later ones stay ready."""
    check = _HeldCheck()
    processor = ShapecheckSpanProcessor(CollectingSpanProcessor(), checks=[check], options=options)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    _end_chat(provider, 0)
    assert check.entered.wait(10)
    return processor, provider, check


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        (ProcessorOptions(max_queue_size=10), 0.4),  # 4 of 10 ready
        (ProcessorOptions(max_traces=8), 0.375),  # 3 traces started since the oldest (one a span)
    ],
    ids=["queue", "traces"],
)
def test_the_backlog_is_the_share_of_its_tightest_bound(options: ProcessorOptions, expected: float) -> None:
    processor, provider, check = _held_up(options)
    try:
        for number in range(1, 5):
            _end_chat(provider, number)
        assert processor._intake.flush(10)  # recorded: the ledger is exact while the worker is held
        before = time.monotonic()
        backlog = processor._ledger.backlog(before + 5)
        assert backlog.fraction == pytest.approx(expected)
        assert backlog.age_seconds >= 5
    finally:
        check.go.set()
        assert processor.force_flush(30_000)
        provider.shutdown()
    assert processor._ledger.backlog(time.monotonic()) == Backlog(0.0, 0.0)  # nothing ready, none waits


def test_a_busy_application_keeps_every_evaluation_and_a_flush_does_not_wait_for_rests() -> None:
    downstream = CollectingSpanProcessor()
    check = _CostlyCheck()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_evaluation_batch_size=BATCH, schedule_delay_millis=5),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    ended = 0
    start = time.monotonic()
    while time.monotonic() - start < MAX_DEFER_SECONDS + 1.5:
        _end_chat(provider, ended)
        ended += 1
        sum(i * i for i in range(20_000))  # the application's own Python: it keeps the interpreter busy
    busy_batches = list(check.batches)
    assert processor.force_flush(30_000)
    counts = processor.counts()
    provider.shutdown()
    assert counts.evaluated == ended
    assert counts.forwarded_unevaluated == 0
    assert len(downstream.spans) == ended
    assert any(size < BATCH for size in busy_batches)  # slices while the application was busy
    # How far the worker fell behind and how long the flush took are timings: the fleet benchmark
    # reports them (tests assert behaviour, not time).


def test_a_sustained_backlog_is_evaluated_as_an_unpaced_worker_evaluates_it() -> None:
    """The application ends spans faster than the worker's resting share evaluates them, but slower
    than the whole interpreter would: its share rises with the backlog, so the small queue never fills
    and every span is evaluated, as with a worker that never rests; it still rests at times."""
    downstream = CollectingSpanProcessor()
    check = _CostlyCheck()
    queue = 256
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(
            max_queue_size=queue, max_evaluation_batch_size=BATCH, schedule_delay_millis=5
        ),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    ended = 0
    most_ready = 0
    start = time.monotonic()
    # A span every ~1.2 ms of the application's own Python: the check's 0.3 ms a span needs about a
    # fifth of the interpreter, several times the resting share (WORKER_SHARE), and far enough under all
    # of it that a machine busy with other work still leaves the worker room to keep up.
    while time.monotonic() - start < 3.0:  # three times the longest deferral
        _end_chat(provider, ended)
        ended += 1
        sum(i * i for i in range(24_000))
        if ended % 100 == 0:
            most_ready = max(most_ready, processor.counts().ready_spans)
    busy_batches = list(check.batches)
    assert processor.force_flush(30_000)
    counts = processor.counts()
    provider.shutdown()
    assert counts.forwarded_unevaluated == 0
    assert counts.evaluated == ended == len(downstream.spans)
    assert most_ready < queue
    assert any(size < BATCH for size in busy_batches)  # it paced while it kept up

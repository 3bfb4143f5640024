"""Pacing: while the application ends spans and keeps the interpreter busy, the worker evaluates in short
slices and rests between them; a flush, a shutdown, half a full queue or a second of pacing make it take
whole batches again."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import TracerProvider

from otel_shapecheck.checks._base import Subject, Verdict
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._pacing import (
    CALM_RESTS,
    CONTENDED_SECONDS,
    MAX_PACED_SECONDS,
    MAX_REST_SECONDS,
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


class _Application:
    """The application's side as the pacing reads it: spans it ended, spans ready for the worker."""

    def __init__(self) -> None:
        self.ended = 0
        self.ready = 0


def _pacing(application: _Application, max_backlog: int = 2048) -> Pacing:
    return Pacing(
        lambda: application.ended, lambda: application.ready, max_backlog=max_backlog, batch_size=BATCH
    )


def test_an_active_application_gets_short_slices_and_rests_sized_by_the_worker_share() -> None:
    application = _Application()
    pacing = _pacing(application)
    application.ended += 1
    assert pacing.next_slice(False, 0.0) == BATCH  # no cost known yet: the first batch measures it
    assert pacing.rest_after(0.064, BATCH) == MAX_REST_SECONDS  # a long slice: the longest rest
    application.ended += 1
    assert pacing.next_slice(False, 0.0) == int(SLICE_CPU_SECONDS / 0.001)
    assert pacing.rest_after(0.001, 1) == pytest.approx(0.001 * (1 - WORKER_SHARE) / WORKER_SHARE)
    application.ended += 1
    assert pacing.next_slice(False, 0.01) == int(SLICE_CPU_SECONDS / 0.001)
    assert pacing.rest_after(1.0, 2) == MAX_REST_SECONDS


def test_an_idle_application_a_flush_or_a_large_backlog_get_whole_batches_without_rests() -> None:
    application = _Application()
    pacing = _pacing(application, max_backlog=100)
    assert pacing.next_slice(False, 0.0) == BATCH  # nothing ended since the worker last looked
    assert pacing.rest_after(0.01, BATCH) == 0.0
    application.ended += 1
    assert pacing.next_slice(True, 0.0) == BATCH  # a flush or a shutdown waits
    assert pacing.rest_after(0.01, BATCH) == 0.0
    application.ended += 1
    application.ready = 50  # half the queue
    assert pacing.next_slice(False, 0.0) == BATCH
    assert pacing.rest_after(0.01, BATCH) == 0.0


def test_pacing_stops_after_its_longest_stretch_until_the_queue_is_drained() -> None:
    application = _Application()
    pacing = _pacing(application)
    application.ended += 1
    assert pacing.next_slice(False, 10.0) == BATCH
    pacing.rest_after(0.064, BATCH)
    application.ended += 1
    assert pacing.next_slice(False, 10.0 + MAX_PACED_SECONDS + 0.01) == BATCH
    assert pacing.rest_after(0.064, BATCH) == 0.0  # a millisecond a span
    pacing.drained()
    application.ended += 1
    assert pacing.next_slice(False, 20.0) == int(SLICE_CPU_SECONDS / 0.001)
    assert pacing.rest_after(0.002, 2) > 0


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
    while time.monotonic() - start < MAX_PACED_SECONDS + 1.5:
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

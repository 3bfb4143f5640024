"""Failures around the processor: a raising check, a raising or blocking downstream, bad settings."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, TracerProvider
from opentelemetry.sdk.trace.id_generator import IdGenerator
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor, Subject, Verdict
from otel_shapecheck._attributes import EVALUATION_NAME, FLAGGED
from otel_shapecheck.otlp._sdk_fields import HAS_ON_ENDING
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import CountingProcessor, RaisingCheck, RecordingCheck, chat, tool_turn

APPLICATION_BOUND_SECONDS = 0.5
"""Generous bound for one span end on the application's thread while the downstream or a check hangs."""


class _RaisingDownstream(CountingProcessor):
    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        raise RuntimeError("downstream on_start fails")

    def on_end(self, span: ReadableSpan) -> None:
        super().on_end(span)
        raise RuntimeError("downstream on_end fails")


class _BlockingDownstream(CountingProcessor):
    """Blocks the thread that forwards an enriched copy until released; ordinary spans pass."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def on_end(self, span: ReadableSpan) -> None:
        if FLAGGED in (span.attributes or {}):
            self.release.wait(30)
        super().on_end(span)


class _BlockingCheck:
    name = "test.blocking"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        self.entered.set()
        self.release.wait(30)
        return [None] * len(subjects)


def _timed_chats(provider: TracerProvider, count: int) -> float:
    """The longest time one chat span took to start and end on this (the application's) thread."""
    handler = TelemetryHandler(tracer_provider=provider)
    longest = 0.0
    for _ in range(count):
        started = time.perf_counter()
        chat(handler, tool_call="get_capacity")
        longest = max(longest, time.perf_counter() - started)
    return longest


def test_raising_check_leaves_other_verdicts_and_is_logged_once(
    tracer_provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    """A failing check is counted per batch and logged once; the other check's verdicts still apply."""
    downstream = CountingProcessor()
    raising, recording = RaisingCheck(), RecordingCheck()
    processor = ShapecheckSpanProcessor(downstream, checks=[raising, recording])
    tracer_provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
        for _ in range(2):
            chat(handler, tool_call="get_capacity")
            assert processor.force_flush()
    processor.shutdown()
    assert raising.calls == 2
    assert processor.counts().error_count("check:test.raising") == 2
    assert len([record for record in caplog.records if record.exc_info]) == 1
    assert len(downstream.spans) == 2
    for span in downstream.spans:
        names = [event.attributes[EVALUATION_NAME] for event in span.events if event.attributes]
        assert names == ["test.recording"]


def test_raising_downstream_never_reaches_the_application(tracer_provider: TracerProvider) -> None:
    """Exceptions of the downstream's ``on_start``/``on_end`` are counted, not raised into the application."""
    downstream = _RaisingDownstream()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    tracer_provider.add_span_processor(processor)
    tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
    assert processor.force_flush()
    processor.shutdown()
    assert len(downstream.spans) == 4
    assert processor.counts().error_count("downstream") == 8


def test_blocking_downstream_never_blocks_the_application(tracer_provider: TracerProvider) -> None:
    """While the downstream hangs on enriched copies, span ends stay fast and flushes keep their timeout."""
    downstream = _BlockingDownstream()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[RecordingCheck()],
        options=ProcessorOptions(max_evaluation_batch_size=1),
    )
    tracer_provider.add_span_processor(processor)
    try:
        assert _timed_chats(tracer_provider, 20) < APPLICATION_BOUND_SECONDS
        started = time.monotonic()
        assert processor.force_flush(timeout_millis=200) is False
        assert time.monotonic() - started < 0.2 + APPLICATION_BOUND_SECONDS
        assert processor.counts().error_count("flush_timeout") == 1
        assert _timed_chats(tracer_provider, 20) < APPLICATION_BOUND_SECONDS
    finally:
        downstream.release.set()
    assert processor.force_flush()
    processor.shutdown()
    assert len(set(downstream.span_ids())) == len(downstream.spans) == 40


def test_full_worker_queue_forwards_new_spans_unevaluated(tracer_provider: TracerProvider) -> None:
    """With the worker stuck in a check and its queue full, new spans pass through at once, un-evaluated."""
    downstream = CountingProcessor()
    check = _BlockingCheck()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_queue_size=1, max_evaluation_batch_size=1),
    )
    tracer_provider.add_span_processor(processor)
    try:
        handler = TelemetryHandler(tracer_provider=tracer_provider)
        chat(handler, tool_call="get_capacity")
        processor.force_flush(timeout_millis=1)
        assert check.entered.wait(5)
        assert _timed_chats(tracer_provider, 3) < APPLICATION_BOUND_SECONDS
        assert not processor.force_flush(timeout_millis=200)  # records them; the worker is still stuck
        assert processor.counts().forwarded_unevaluated == 2
        assert len(downstream.spans) == 2
    finally:
        check.release.set()
    assert processor.force_flush()
    processor.shutdown()
    assert len(set(downstream.span_ids())) == len(downstream.spans) == 4


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_wait_millis": 0}, "max_wait_millis"),
        ({"max_pending_spans": -1}, "max_pending_spans"),
        ({"max_queue_size": 1.5}, "max_queue_size"),
        ({"schedule_delay_millis": True}, "schedule_delay_millis"),
    ],
)
def test_bad_settings_raise_naming_the_setting(options: dict[str, object], named: str) -> None:
    """A bad constructor value raises ``ValueError`` naming the setting, before any thread starts."""
    threads = threading.active_count()
    with pytest.raises(ValueError, match=named):
        ShapecheckSpanProcessor(CountingProcessor(), checks=[], options=ProcessorOptions(**options))  # type: ignore[arg-type]
    assert threading.active_count() == threads


def test_environment_values_apply(monkeypatch: pytest.MonkeyPatch, tracer_provider: TracerProvider) -> None:
    """``OTEL_SHAPECHECK_MAX_WAIT_MILLIS`` sets the deadline when no argument is given."""
    monkeypatch.setenv("OTEL_SHAPECHECK_MAX_WAIT_MILLIS", "20")
    monkeypatch.setenv("OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS", "5")
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    tracer_provider.add_span_processor(processor)
    parent = tracer_provider.get_tracer("tests").start_span("never ends")
    chat(
        TelemetryHandler(tracer_provider=tracer_provider),
        names_output=False,
        context=trace.set_span_in_context(parent),
    )
    deadline = time.monotonic() + 5
    while not downstream.spans and time.monotonic() < deadline:
        time.sleep(0.01)
    processor.shutdown()
    assert processor.counts().released_by_deadline == 1


def test_wrong_arguments_raise() -> None:
    """A downstream that is not a span processor, or a check without ``evaluate``, is refused."""
    with pytest.raises(ValueError, match="downstream"):
        ShapecheckSpanProcessor(object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="checks"):
        ShapecheckSpanProcessor(CountingProcessor(), checks=[object()])  # type: ignore[list-item]


class _ShortCheck:
    """Returns one result fewer than it was given subjects."""

    name = "test.short"

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        return [None] * (len(subjects) - 1)


def test_check_returning_the_wrong_number_of_results_is_a_counted_failure(
    tracer_provider: TracerProvider,
) -> None:
    """A check that breaks the one-result-per-subject contract is counted; the spans still pass."""
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[_ShortCheck()])
    tracer_provider.add_span_processor(processor)
    tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
    assert processor.force_flush()
    processor.shutdown()
    assert processor.counts().error_count("check:test.short") >= 1
    assert len(downstream.spans) == 4
    assert not any(FLAGGED in (span.attributes or {}) for span in downstream.spans)


class _EndingRecorder(CountingProcessor):
    def __init__(self) -> None:
        super().__init__()
        self.ending: list[str] = []

    def _on_ending(self, span: Span) -> None:
        self.ending.append(span.name)


def test_the_sdk_ending_hook_reaches_the_downstream(tracer_provider: TracerProvider) -> None:
    """``_on_ending`` is passed on, for a downstream that implements it."""
    downstream = _EndingRecorder()
    processor = ShapecheckSpanProcessor(downstream, checks=[])
    tracer_provider.add_span_processor(processor)
    with tracer_provider.get_tracer("tests").start_as_current_span("work"):
        pass
    processor.shutdown()
    # An SDK without the hook (before 1.40) calls no processor's _on_ending, so there is nothing to pass.
    assert downstream.ending == (["work"] if HAS_ON_ENDING else [])


def test_children_released_into_a_full_worker_queue_pass_through(tracer_provider: TracerProvider) -> None:
    """When a parent's end releases waiting chats into a full queue, they are forwarded as they are."""
    downstream = CountingProcessor()
    check = _BlockingCheck()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_queue_size=1, max_evaluation_batch_size=1),
    )
    tracer_provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    tracer = tracer_provider.get_tracer("tests")
    try:
        chat(handler, tool_call="get_capacity")
        processor.force_flush(timeout_millis=1)
        assert check.entered.wait(5)  # the worker is stuck in the check; the queue is empty
        with tracer.start_as_current_span("invoke_agent storage"):
            for _ in range(3):
                chat(handler, names_output=False)
        assert not processor.force_flush(timeout_millis=200)  # records them; the worker is still stuck
        assert processor.counts().ready_spans <= 1
        counts = processor.counts()
        assert counts.forwarded_unevaluated == 3
        assert counts.held + counts.forwarded_untouched == counts.seen
        assert len(downstream.spans) == 4
    finally:
        check.release.set()
    assert processor.force_flush()
    processor.shutdown()
    assert len(set(downstream.span_ids())) == len(downstream.spans) == 5


class _RepeatingIds(IdGenerator):
    """Hands out the given span ids in turn: two spans end up with the same id."""

    def __init__(self, span_ids: list[int]) -> None:
        self._span_ids = iter(span_ids)

    def generate_span_id(self) -> int:
        return next(self._span_ids)

    def generate_trace_id(self) -> int:
        return 0x5EED


def test_spans_repeating_an_id_are_each_forwarded_once() -> None:
    """Two waiting chats with the same span id (a broken id generator, a replayed export) both pass."""
    provider = TracerProvider(id_generator=_RepeatingIds([0xB, 0xA, 0xA]), shutdown_on_exit=False)
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=provider)
    agent = provider.get_tracer("tests").start_span("invoke_agent storage")
    for _ in range(2):
        chat(handler, names_output=False, context=trace.set_span_in_context(agent))
    processor.shutdown()
    assert downstream.span_ids() == [0xA, 0xA]
    assert processor.counts().errors == ()
    provider.shutdown()

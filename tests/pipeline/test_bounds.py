"""Every call into code we do not own is bounded: a hung downstream costs one thread and no caller's time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import RecordingCheck, chat

WATCHDOG_SECONDS = 30.0
"""How long a bounded call may take before the test calls it hung (far above any bound under test)."""


class HangingDownstream(SpanProcessor):
    """A downstream whose chosen hooks block until the test releases them."""

    def __init__(self, *hooks: str) -> None:
        self.hooks = set(hooks)
        self.release = threading.Event()
        self.ended: list[ReadableSpan] = []

    def _maybe_hang(self, hook: str) -> None:
        if hook in self.hooks:
            self.release.wait()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self._maybe_hang("on_end")
        self.ended.append(span)

    def shutdown(self) -> None:
        self._maybe_hang("shutdown")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._maybe_hang("force_flush")
        return True


@pytest.fixture(name="make")
def _make() -> Iterator[Callable[[HangingDownstream], tuple[ShapecheckSpanProcessor, TracerProvider]]]:
    made: list[tuple[HangingDownstream, ShapecheckSpanProcessor]] = []

    def make(downstream: HangingDownstream) -> tuple[ShapecheckSpanProcessor, TracerProvider]:
        options = ProcessorOptions(shutdown_timeout_millis=500, schedule_delay_millis=10)
        processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()], options=options)
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        made.append((downstream, processor))
        return processor, provider

    yield make
    for downstream, processor in made:
        downstream.release.set()
        processor.shutdown()


def _returns(call: Callable[[], object]) -> bool:
    """Whether ``call`` returns within the watchdog (it runs on a thread the test can abandon)."""
    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(WATCHDOG_SECONDS)
    return not thread.is_alive()


@pytest.mark.parametrize("hook", ["on_end", "shutdown"])
def test_shutdown_returns_although_the_downstream_hangs(
    hook: str, make: Callable[[HangingDownstream], tuple[ShapecheckSpanProcessor, TracerProvider]]
) -> None:
    """A downstream hanging in on_end or shutdown cannot hold shutdown past its timeout; it is counted."""
    downstream = HangingDownstream(hook)
    processor, provider = make(downstream)
    chat(TelemetryHandler(tracer_provider=provider), tool_call="get_capacity")
    assert _returns(processor.shutdown)
    errors = dict(processor.counts().errors)
    assert any(kind.startswith("shutdown_timeout") for kind in errors), errors
    downstream.release.set()


def test_spans_a_hung_downstream_had_not_taken_still_reach_it(
    make: Callable[[HangingDownstream], tuple[ShapecheckSpanProcessor, TracerProvider]],
) -> None:
    """After a timed-out shutdown, releasing the downstream delivers every span exactly once."""
    downstream = HangingDownstream("on_end")
    processor, provider = make(downstream)
    handler = TelemetryHandler(tracer_provider=provider)
    for _ in range(5):
        chat(handler, tool_call="get_capacity")
    assert _returns(processor.shutdown)
    downstream.release.set()
    deadline = threading.Event()
    for _ in range(300):
        if len(downstream.ended) == 5:
            break
        deadline.wait(0.1)
    ids = [span.context.span_id for span in downstream.ended if span.context is not None]
    assert len(ids) == 5 and len(set(ids)) == 5


def test_a_hung_flush_costs_one_thread_and_later_flushes_return_at_once(
    make: Callable[[HangingDownstream], tuple[ShapecheckSpanProcessor, TracerProvider]],
) -> None:
    """300 flushes into a hung downstream start one helper thread; every one returns False, counted."""
    processor, _ = make(HangingDownstream("force_flush"))
    before = threading.active_count()
    results = [processor.force_flush(timeout_millis=10) for _ in range(300)]
    assert results == [False] * 300
    assert threading.active_count() - before <= 1
    assert processor.counts().error_count("flush_hung:downstream") == 300

"""Many application threads ending GenAI spans at once: nothing lost, nothing doubled, no deadlock."""

from __future__ import annotations

import threading
from collections import Counter

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import CountingProcessor, RecordingCheck, chat, execute_tool

THREADS = 8
GENAI_SPANS_PER_THREAD = 5000


def _agent_turns(provider: TracerProvider, turns: int, stop: threading.Event | None = None) -> None:
    """Each turn: an agent span over a chat (output captured or not, alternating) and a tool execution."""
    handler = TelemetryHandler(tracer_provider=provider)
    tracer = provider.get_tracer("tests.concurrency")
    for turn in range(turns):
        if stop is not None and stop.is_set():
            return
        agent = tracer.start_span("invoke_agent", context=Context())
        context = trace.set_span_in_context(agent, Context())
        chat(handler, tool_call="get_capacity", names_output=turn % 2 == 0, context=context)
        execute_tool(handler, context=context)
        agent.end()


def _run_threads(
    provider: TracerProvider, turns: int, stop: threading.Event | None = None
) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=_agent_turns, args=(provider, turns, stop), name=f"app-{index}")
        for index in range(THREADS)
    ]
    for thread in threads:
        thread.start()
    return threads


def test_eight_threads_of_genai_spans_lose_nothing() -> None:
    """8 threads × 5 000 GenAI spans: each span reaches the downstream once, each chat is evaluated."""
    downstream, originals = CountingProcessor(), CountingProcessor()
    check = RecordingCheck()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(max_queue_size=100_000),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(originals)
    try:
        threads = _run_threads(provider, GENAI_SPANS_PER_THREAD // 2)
        for thread in threads:
            thread.join(timeout=300)
        assert not any(thread.is_alive() for thread in threads), "an application thread is stuck"
        assert processor.force_flush(60_000)
    finally:
        provider.shutdown()
    ended = Counter(originals.span_ids())
    assert len(ended) == THREADS * GENAI_SPANS_PER_THREAD * 3 // 2
    assert Counter(downstream.span_ids()) == ended
    counts = processor.counts()
    assert counts.seen == len(ended)
    assert counts.evaluated == len(check.subjects) == THREADS * GENAI_SPANS_PER_THREAD // 2
    assert counts.error_count() == 0


def test_shutdown_while_spans_still_arrive_loses_nothing() -> None:
    """Spans ending during and after ``shutdown`` still reach the downstream exactly once."""
    downstream, originals = CountingProcessor(), CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(originals)
    stop = threading.Event()
    threads = _run_threads(provider, 2000, stop)
    try:
        while len(originals.spans) < 2000:
            threading.Event().wait(0.01)
        processor.shutdown()
        shut_at = len(originals.spans)
        while len(originals.spans) < shut_at + 2000 and any(thread.is_alive() for thread in threads):
            threading.Event().wait(0.01)
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=300)
        provider.shutdown()
    assert not any(thread.is_alive() for thread in threads)
    assert len(originals.spans) > shut_at
    assert Counter(downstream.span_ids()) == Counter(originals.span_ids())

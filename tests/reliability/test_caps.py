"""The processor's caps under overload: a worker held inside a check while the application keeps ending spans.

With the worker blocked nothing is evaluated, so whatever the ledger keeps is bounded only by the caps:
``max_pending_spans`` for spans waiting for their parent, ``max_queue_size`` for spans waiting for the
worker, ``max_traces`` and ``max_facts_per_trace`` for the facts kept.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider

from otel_shapecheck import ShapecheckSpanProcessor, Subject, Verdict
from otel_shapecheck.pipeline._metrics import COUNT_FIELDS
from otel_shapecheck.pipeline._options import ProcessorOptions

from .telemetry import IdRecorder, agent_turn, chat_attributes, tool_attributes, wait_recorded

CAP = 16
OVERLOAD = 10 * CAP


class BlockingCheck:
    """A check plug-in whose first batch blocks until released (or 30 s pass)."""

    name = "test.blocking"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        self.entered.set()
        self.release.wait(30)
        return [None] * len(subjects)


@contextmanager
def blocked_processor(
    *,
    max_queue_size: int | None = None,
    max_pending_spans: int | None = None,
    max_traces: int | None = None,
    max_facts_per_trace: int | None = None,
    max_fact_bytes: int | None = None,
) -> Iterator[tuple[ShapecheckSpanProcessor, IdRecorder, trace.Tracer]]:
    """A processor whose worker is inside :class:`BlockingCheck` until the block ends; shut down after."""
    check = BlockingCheck()
    downstream = IdRecorder()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=[check],
        options=ProcessorOptions(
            schedule_delay_millis=10,
            max_queue_size=max_queue_size,
            max_pending_spans=max_pending_spans,
            max_traces=max_traces,
            max_facts_per_trace=max_facts_per_trace,
            max_fact_bytes=max_fact_bytes,
        ),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("tests.caps")
    try:
        agent_turn(tracer)
        assert check.entered.wait(10)
        yield processor, downstream, tracer
    finally:
        check.release.set()
        provider.shutdown()


def test_ready_queue_is_held_to_max_queue_size_when_parents_release_children() -> None:
    """Chats that waited for their agent span count against ``max_queue_size`` once the agent span ends."""
    with blocked_processor(max_queue_size=CAP, max_pending_spans=CAP) as (processor, _, tracer):
        for number in range(OVERLOAD):
            agent_turn(tracer, number, names_output=False)
        assert processor.counts().ready_spans <= CAP


def test_new_ready_spans_past_max_queue_size_are_forwarded_unevaluated() -> None:
    """Chats final at their own end are not held once ``max_queue_size`` spans wait: forwarded at once."""
    with blocked_processor(max_queue_size=CAP) as (processor, downstream, tracer):
        before = len(downstream)
        for number in range(OVERLOAD):
            agent_turn(tracer, number, names_output=True)
        wait_recorded(processor)
        counts = processor.counts()
        assert counts.ready_spans <= CAP
        assert counts.forwarded_unevaluated >= 2 * OVERLOAD - CAP
        assert len(downstream) - before >= 4 * OVERLOAD - 2 * CAP


def test_counts_report_the_spans_and_fact_bytes_held_now() -> None:
    """The snapshot's levels say what waits for the blocked worker and what its facts keep alive; no
    span is ready once the worker took everything, and the observable counters leave the levels out."""
    with blocked_processor() as (processor, _, tracer):
        for number in range(3):
            agent_turn(tracer, number, names_output=True)
        wait_recorded(processor)
        held = processor.counts()
        assert held.ready_spans >= 3
        assert held.fact_bytes > 0
    drained = processor.counts()
    assert drained.ready_spans == 0
    assert {"ready_spans", "fact_bytes"}.isdisjoint(COUNT_FIELDS)


def test_waiting_spans_are_held_to_max_pending_spans() -> None:
    """Chats whose agent span never ends: past ``max_pending_spans`` the oldest is released as incomplete."""
    with blocked_processor(max_pending_spans=CAP, max_queue_size=10 * OVERLOAD) as (processor, _, tracer):
        agents = []
        for _ in range(OVERLOAD):
            agent = tracer.start_span("invoke_agent storage", context=Context())
            agents.append(agent)
            context = trace.set_span_in_context(agent, Context())
            tracer.start_span("chat gpt-4o-mini", context=context, attributes=chat_attributes(None)).end()
        wait_recorded(processor)
        counts = processor.counts()
        for agent in agents:
            agent.end()
    assert counts.released_by_cap == OVERLOAD - CAP
    assert counts.held == OVERLOAD + 2  # + the two chats of the turn that blocked the worker


def test_facts_are_held_to_max_facts_per_trace_and_max_traces() -> None:
    """Past the per-trace cap facts are dropped and counted; finished traces past ``max_traces`` are
    forgotten without counting, and a forgotten trace that shows up again counts what it lost."""
    with blocked_processor(max_facts_per_trace=CAP, max_traces=CAP) as (processor, downstream, tracer):
        before = len(downstream)
        first = tracer.start_span("invoke_agent storage", context=Context())
        first_context = trace.set_span_in_context(first, Context())
        for number in range(OVERLOAD):
            tracer.start_span(
                "execute_tool get_capacity",
                context=first_context,
                attributes=tool_attributes(f"c{number}", "{}"),
            ).end()
        wait_recorded(processor)
        one_trace = processor.counts().facts_dropped
        for _ in range(OVERLOAD):
            root = tracer.start_span("invoke_agent storage", context=Context())
            context = trace.set_span_in_context(root, Context())
            tracer.start_span(
                "execute_tool get_capacity", context=context, attributes=tool_attributes("c", "{}")
            ).end()
            root.end()
        wait_recorded(processor)
        finished_traces = processor.counts().facts_dropped - one_trace
        tracer.start_span(
            "execute_tool get_capacity", context=first_context, attributes=tool_attributes("late", "{}")
        ).end()
        first.end()
        wait_recorded(processor)
        returned = processor.counts().facts_dropped - one_trace - finished_traces
        forwarded = len(downstream) - before
    assert one_trace == OVERLOAD - CAP
    assert finished_traces == 0
    assert returned == CAP
    assert forwarded == 2 * OVERLOAD + 2 + OVERLOAD  # facts are kept by reference; every span goes on


def test_facts_are_held_to_max_fact_bytes() -> None:
    """Large tool results past the byte budget forget the oldest traces; one larger than it is dropped."""
    budget = 100_000
    with blocked_processor(max_fact_bytes=budget) as (processor, downstream, tracer):
        before = len(downstream)
        for number in range(50):
            root = tracer.start_span("invoke_agent storage", context=Context())
            context = trace.set_span_in_context(root, Context())
            result = json.dumps({"rows": "x" * 10_000})
            tracer.start_span(
                "execute_tool get_capacity", context=context, attributes=tool_attributes(f"c{number}", result)
            ).end()
            root.end()
        wait_recorded(processor)
        assert processor.counts().fact_bytes <= budget
        assert processor.counts().fact_bytes_exceeded > 0
        assert processor.counts().facts_dropped == 0  # finished traces were forgotten: nobody needed them
        root = tracer.start_span("invoke_agent storage", context=Context())
        context = trace.set_span_in_context(root, Context())
        huge = json.dumps({"rows": "x" * (2 * budget)})
        tracer.start_span(
            "execute_tool get_capacity", context=context, attributes=tool_attributes("huge", huge)
        ).end()
        wait_recorded(processor)
        assert processor.counts().facts_dropped == 1
        wait_recorded(processor)
        assert processor.counts().fact_bytes <= budget
        root.end()
        forwarded = len(downstream) - before
    assert forwarded == 2 * 51

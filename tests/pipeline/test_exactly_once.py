"""Any interleaving of span starts and ends: every ended span reaches the downstream exactly once.

Agent spans take part: a run's agent span waits for the spans of its run, nested ones are no run, and
either way each reaches the downstream once.
"""

from __future__ import annotations

import contextvars
from collections import Counter
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import OutputMessage, TextPart, ToolCallRequestPart

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck._attributes import ANALYST_ATTEMPT, ANALYST_ID, ROWS_ACCEPTED, ROWS_EMITTED
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import CountingProcessor, RecordingCheck

KINDS = ("chat_named", "chat_unnamed", "tool", "attempt", "agent", "plain")
PARENTS = st.one_of(st.none(), st.just("remote"), st.integers(min_value=0, max_value=50))


@dataclass
class _Open:
    kind: str
    span_id: int
    parent: int | str | None
    end: Any


class SpanInterleavings(RuleBasedStateMachine):
    """Starts and ends GenAI and ordinary spans across traces in any order through a real provider."""

    def __init__(self) -> None:
        super().__init__()
        self.downstream = CountingProcessor()
        self.opened: list[_Open] = []
        self.ended: dict[int, _Open] = {}
        self.open_ids: set[int] = set()
        self.processor: ShapecheckSpanProcessor | None = None

    @initialize(pending=st.sampled_from([1, 3, 10_000]), queue=st.sampled_from([1, 2048]))
    def build(self, pending: int, queue: int) -> None:
        self.processor = ShapecheckSpanProcessor(
            self.downstream,
            checks=[RecordingCheck()],
            options=ProcessorOptions(
                max_pending_spans=pending, max_queue_size=queue, schedule_delay_millis=5
            ),
        )
        self.provider = TracerProvider(shutdown_on_exit=False)
        self.provider.add_span_processor(self.processor)
        self.handler = TelemetryHandler(tracer_provider=self.provider)
        self.tracer = self.provider.get_tracer("tests.interleavings")
        self.spans: dict[int, trace.Span] = {}

    def _context(self, parent: int | str | None) -> tuple[Context, int | str | None]:
        if parent == "remote":
            remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
            return trace.set_span_in_context(NonRecordingSpan(remote), Context()), "remote"
        if isinstance(parent, int) and self.opened:
            chosen = self.opened[parent % len(self.opened)]
            return trace.set_span_in_context(self.spans[chosen.span_id], Context()), chosen.span_id
        return Context(), None

    @rule(kind=st.sampled_from(KINDS), parent=PARENTS)
    def start(self, kind: str, parent: int | str | None) -> None:
        # Each span starts and ends in a context of its own: the handler attaches its span to the current
        # context and detaches it at stop, which would leak into other tests when stops come out of order.
        isolated = contextvars.Context()
        isolated.run(self._start, kind, parent, isolated)

    def _start(self, kind: str, parent: int | str | None, isolated: contextvars.Context) -> None:
        context, parent_ref = self._context(parent)
        if kind.startswith("chat"):
            invocation = self.handler.inference("openai", request_model="m", context=context)
            if kind == "chat_named":
                invocation.output_messages = [
                    OutputMessage(
                        role="assistant",
                        parts=[ToolCallRequestPart(arguments={}, name="t", id="c"), TextPart(content="x")],
                        finish_reason="tool_calls",
                    )
                ]
            span, end = invocation.span, invocation.stop
        elif kind == "tool":
            invocation = self.handler.tool("t", context=context)
            span, end = invocation.span, invocation.stop
        elif kind == "agent":
            agent = self.handler.invoke_local_agent(agent_name="a", context=context)
            span, end = agent.span, agent.stop
        else:
            attributes = (
                {ANALYST_ID: "a", ANALYST_ATTEMPT: 1, ROWS_EMITTED: 1, ROWS_ACCEPTED: 0}
                if kind == "attempt"
                else {}
            )
            span = self.tracer.start_span(kind, context=context, attributes=attributes)
            end = span.end
        span_id = span.get_span_context().span_id
        self.spans[span_id] = span
        self.opened.append(_Open(kind, span_id, parent_ref, lambda: isolated.run(end)))
        self.open_ids.add(span_id)

    @precondition(lambda self: bool(self.opened))
    @rule(index=st.integers(min_value=0, max_value=50))
    def end(self, index: int) -> None:
        opened = self.opened.pop(index % len(self.opened))
        self.open_ids.discard(opened.span_id)
        opened.end()
        self.ended[opened.span_id] = opened

    @rule()
    def flush(self) -> None:
        assert self.processor is not None
        assert self.processor.force_flush(5000)
        delivered = set(self.downstream.span_ids())
        for span_id, ended in self.ended.items():
            # A call may wait for its parent's end, and a run's agent span for such a call.
            may_wait = ended.kind in ("chat_unnamed", "agent") and (
                isinstance(ended.parent, int) or ended.kind == "agent"
            )
            assert may_wait or span_id in delivered, ended

    @invariant()
    def never_twice(self) -> None:
        counts = Counter(self.downstream.span_ids())
        assert not [span_id for span_id, count in counts.items() if count > 1]
        assert set(counts) <= set(self.ended)

    def teardown(self) -> None:
        if self.processor is None:
            return
        self.processor.shutdown()
        try:
            delivered = Counter(self.downstream.span_ids())
            assert delivered == Counter(set(self.ended)), (delivered, self.ended)
            counts = self.processor.counts()
            assert counts.seen == len(self.ended)
            assert counts.held + counts.runs + counts.forwarded_untouched == counts.seen, counts
            assert counts.evaluated + counts.duplicates == counts.held, counts
        finally:
            for opened in self.opened:
                opened.end()
            self.provider.shutdown()


SpanInterleavings.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSpanInterleavings = SpanInterleavings.TestCase

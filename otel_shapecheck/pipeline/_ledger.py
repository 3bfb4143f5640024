"""The ledger: which ended spans are held for evaluation, what facts they wait for, and when they are final.

Keyed by span id (integers, as the SDK holds them). The application's threads record facts here from
``on_end`` and ``on_emit`` under one short lock: references to spans and log records, never parsed
content. The evaluation worker takes released spans out in groups, with a snapshot of the facts of
their trace.

Completion rules (a span is *final* when every fact its verdict needs is known):

- an LLM-call span whose own output (or content log record) names its tool calls is final at its end;
- one whose tool calls are only visible as sibling tool-execution spans is final when its parent ends;
  a parent that already ended, a remote parent or no parent make it final at its own end;
- an analyst span (a span with analyst-attempt children) is final at its end.

Bounds: a span waits at most ``max_wait`` seconds and at most ``max_pending_spans`` spans wait at once
(past either, the oldest is released as *incomplete*); at most ``max_queue_size`` spans wait for the
worker (past it a new span is not held, and the caller forwards it as it is). Facts are kept for at
most ``max_traces`` traces (least recently active evicted first) and ``max_facts_per_trace`` each, and,
when ``max_fact_bytes`` is given, for at most that many bytes of facts in all (estimated by
:func:`~otel_shapecheck.pipeline._sizes.fact_bytes`; least recently active traces evicted first).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field

from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._model import ToolExecution
from otel_shapecheck.pipeline._metrics import ProcessorCounters
from otel_shapecheck.pipeline._sizes import fact_bytes
from otel_shapecheck.readers._classify import SpanClass, SpanRole


@dataclass(eq=False, slots=True)
class HeldSpan:
    """An ended span kept for evaluation."""

    span: ReadableSpan
    span_id: int
    trace_id: int
    parent_id: int | None
    classified: SpanClass
    """The hot path's classification, so the worker reads the span without classifying it again."""
    analyst: bool
    deadline: float
    """``time.monotonic()`` past which the span is released as incomplete."""
    awaits_parent: bool = False
    """Whether it waits for its parent to end (its tool calls come from sibling executions)."""
    incomplete: bool = False

    @property
    def llm_call(self) -> bool:
        """Whether the span is an LLM call (else it is an analyst span)."""
        return self.classified.role is SpanRole.LLM_CALL


@dataclass(eq=False)
class ExecutionFact:
    """A tool-execution span of a trace; the worker reads it once and keeps the reading here."""

    span: ReadableSpan
    parent_id: int | None
    classified: SpanClass
    reading: ToolExecution | None = None
    read: bool = False


@dataclass(frozen=True)
class Release:
    """Held spans the worker evaluates together, with the facts of their trace at take-out time."""

    spans: tuple[HeldSpan, ...]
    executions: tuple[ExecutionFact, ...] = ()
    """Executions under the spans themselves or under the parent they waited for (for the join)."""
    trace_executions: tuple[ExecutionFact, ...] = ()
    """Every execution of the trace that was kept (the figures basis)."""
    sibling_calls: tuple[tuple[ReadableSpan, SpanClass], ...] = ()
    """Other LLM-call spans under the parent the spans waited for: they bound which executions are whose."""
    content: Mapping[int, tuple[LogRecord, ...]] = field(default_factory=dict)
    """Content log records by span id."""
    attempts: Mapping[int, tuple[ReadableSpan, ...]] = field(default_factory=dict)
    """Analyst-attempt spans by the span id of their analyst span."""


class _TraceFacts:
    """What one trace has shown so far, bounded by ``limit`` entries in all."""

    __slots__ = (
        "attempts",
        "bytes",
        "calls",
        "content",
        "content_names_calls",
        "ended",
        "executions",
        "limit",
        "size",
    )

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.bytes = 0
        self.executions: list[ExecutionFact] = []
        self.calls: list[tuple[int | None, ReadableSpan, SpanClass]] = []
        self.attempts: dict[int, list[ReadableSpan]] = {}
        self.content: dict[int, list[LogRecord]] = {}
        self.content_names_calls: set[int] = set()
        self.ended: set[int] = set()

    def room(self) -> bool:
        if self.size >= self.limit:
            return False
        self.size += 1
        return True


class Ledger:
    """Facts and held spans, shared by the span processor, its log processor and its worker."""

    def __init__(
        self,
        counters: ProcessorCounters,
        *,
        max_wait_seconds: float,
        max_pending_spans: int,
        max_queue_size: int,
        max_traces: int,
        max_facts_per_trace: int,
        wake_at: int = 1,
        max_fact_bytes: int | None = None,
    ) -> None:
        self._counters = counters
        self._wake_at = wake_at
        self._max_wait = max_wait_seconds
        self._max_pending = max_pending_spans
        self._max_queue = max_queue_size
        self._max_traces = max_traces
        self._max_facts = max_facts_per_trace
        self._max_fact_bytes = max_fact_bytes
        self._init_state()

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._traces: OrderedDict[int, _TraceFacts] = OrderedDict()
        self._waiting: dict[HeldSpan, None] = {}
        """Waiting spans in deadline order, keyed by identity: ids are not trusted to be unique."""
        self._waiting_by_parent: dict[int, list[HeldSpan]] = {}
        self._analyst_parents: dict[int, int] = {}
        self._ready: deque[tuple[HeldSpan, ...]] = deque()
        self._ready_spans = 0
        self._overflow: list[ReadableSpan] = []
        self._closed = False
        self._fact_bytes = 0

    def reset_after_fork(self) -> None:
        """Forget everything: spans held by the parent process are the parent's to forward."""
        self._init_state()

    # Application threads.

    def concerns(self, span_id: int) -> bool:
        """Whether a span that is not GenAI must still go through :meth:`span_ended` (a lock-free check).

        It must when held spans wait for its end or it has analyst-attempt children.
        """
        return span_id in self._waiting_by_parent or span_id in self._analyst_parents

    def span_ended(
        self, span: ReadableSpan, classified: SpanClass, *, names_own_tool_calls: bool = False
    ) -> tuple[bool, bool, list[ReadableSpan] | None]:
        """Record an ended span; return ``(held, wake, overflow)``.

        ``held`` says the ledger keeps the span (the caller must not forward it); ``wake`` says at least
        ``wake_at`` spans are ready for the worker; ``overflow`` holds earlier spans this end released
        that found the worker's queue full (the caller forwards them as they are).
        """
        context = span.context
        if context is None:
            return False, False, None
        with self._lock:
            if self._closed:
                return False, False, None
            held, wake = self._record(
                span, context.span_id, context.trace_id, classified, names_own_tool_calls
            )
            overflow = self._take_overflow() if self._overflow else None
        return held, wake, overflow

    def _record(
        self,
        span: ReadableSpan,
        span_id: int,
        trace_id: int,
        classified: SpanClass,
        names_own_tool_calls: bool,
    ) -> tuple[bool, bool]:
        role = classified.role
        llm_call = role is SpanRole.LLM_CALL
        tool_execution = role is SpanRole.TOOL_EXECUTION
        analyst_attempt = role is SpanRole.ANALYST_ATTEMPT
        parent = span.parent
        parent_id = parent.span_id if parent is not None else None
        counts = self._counters
        wake = span_id in self._waiting_by_parent and self._release_children(span_id)
        facts = self._traces.get(trace_id)
        if facts is not None:
            self._traces.move_to_end(trace_id)
        elif llm_call or tool_execution or analyst_attempt:
            facts = self._new_trace(trace_id)
        if facts is not None:
            if len(facts.ended) < self._max_facts:
                facts.ended.add(span_id)
            if tool_execution or (analyst_attempt and parent_id is not None):
                if not facts.room():
                    counts.facts_dropped += 1
                elif tool_execution:
                    facts.executions.append(ExecutionFact(span, parent_id, classified))
                    self._weigh(facts, span)
                elif parent_id is not None:
                    facts.attempts.setdefault(parent_id, []).append(span)
                    self._analyst_parents[parent_id] = trace_id
                    self._weigh(facts, span)
            if llm_call and facts.size < facts.limit:
                facts.size += 1
                facts.calls.append((parent_id, span, classified))
                self._weigh(facts, span)
        analyst = self._analyst_parents.pop(span_id, None) is not None
        if not (llm_call or analyst):
            return False, wake
        held = HeldSpan(
            span, span_id, trace_id, parent_id, classified, analyst, time.monotonic() + self._max_wait
        )
        awaits_parent = (
            llm_call
            and parent is not None
            and not parent.is_remote
            and not names_own_tool_calls
            and (
                facts is None
                or (parent.span_id not in facts.ended and span_id not in facts.content_names_calls)
            )
        )
        if awaits_parent and parent_id is not None:
            if len(self._waiting) >= self._max_pending:
                self._release_oldest_waiting()
            held.awaits_parent = True
            self._waiting[held] = None
            self._waiting_by_parent.setdefault(parent_id, []).append(held)
        elif self._ready_spans >= self._max_queue:
            counts.forwarded_unevaluated += 1
            return False, wake
        else:
            self._push_ready((held,))
            wake = wake or self._ready_spans >= self._wake_at
        counts.held += 1
        return True, wake

    def content_recorded(
        self, trace_id: int, span_id: int, record: LogRecord, *, names_own_tool_calls: bool
    ) -> None:
        """Keep a GenAI content log record for the span it belongs to."""
        with self._lock:
            if self._closed:
                return
            facts = self._traces.get(trace_id)
            if facts is None:
                facts = self._new_trace(trace_id)
            else:
                self._traces.move_to_end(trace_id)
            if not facts.room():
                self._counters.facts_dropped += 1
                return
            facts.content.setdefault(span_id, []).append(record)
            self._weigh(facts, record)
            if names_own_tool_calls:
                facts.content_names_calls.add(span_id)

    # The worker.

    def release_expired(self, now: float) -> list[ReadableSpan]:
        """Release waiting spans whose deadline passed (as incomplete).

        Returns the released spans that found the worker's queue full: the caller forwards them as they are.
        """
        released = 0
        with self._lock:
            while self._waiting:
                held = next(iter(self._waiting))
                if held.deadline > now:
                    break
                self._release_waiting(held)
                released += 1
            overflow = self._take_overflow() if self._overflow else []
        if released:
            self._counters.released_by_deadline += released
        return overflow

    def close(self) -> int:
        """Refuse new spans and release every waiting span as incomplete; how many were released."""
        with self._lock:
            self._closed = True
            waiting = list(self._waiting)
            for held in waiting:
                self._release_waiting(held, capped=False)
        if waiting:
            self._counters.released_by_shutdown += len(waiting)
        return len(waiting)

    def ready_count(self) -> int:
        """Spans ready for the worker."""
        return self._ready_spans

    def take_ready(self, max_spans: int) -> list[Release]:
        """Up to about ``max_spans`` ready spans, in groups, with the facts of their traces."""
        releases: list[Release] = []
        taken = 0
        with self._lock:
            while self._ready and taken < max_spans:
                group = self._ready.popleft()
                self._ready_spans -= len(group)
                taken += len(group)
                releases.append(self._release(group))
        return releases

    # Internals (lock held).

    def _new_trace(self, trace_id: int) -> _TraceFacts:
        facts = _TraceFacts(self._max_facts)
        self._traces[trace_id] = facts
        while len(self._traces) > self._max_traces:
            self._evict_oldest()
        return facts

    def _evict_oldest(self) -> None:
        _, evicted = self._traces.popitem(last=False)
        for parent_id in evicted.attempts:
            self._analyst_parents.pop(parent_id, None)
        if evicted.size:
            self._counters.facts_dropped += evicted.size
        self._fact_bytes -= evicted.bytes

    def _weigh(self, facts: _TraceFacts, item: object) -> None:
        """Count a fact's bytes; past ``max_fact_bytes`` evict the least recently active other traces."""
        if self._max_fact_bytes is None:
            return
        size = fact_bytes(item)
        facts.bytes += size
        self._fact_bytes += size
        while self._fact_bytes > self._max_fact_bytes and len(self._traces) > 1:
            if next(iter(self._traces.values())) is facts:
                break
            self._evict_oldest()

    def _unweigh(self, facts: _TraceFacts, items: tuple[object, ...]) -> None:
        if self._max_fact_bytes is None:
            return
        size = sum(fact_bytes(item) for item in items)
        facts.bytes -= size
        self._fact_bytes -= size

    def _push_ready(self, group: tuple[HeldSpan, ...], capped: bool = True) -> None:
        """Queue a group for the worker; past ``max_queue_size`` its spans go to the overflow instead."""
        if capped and self._ready_spans + len(group) > self._max_queue:
            self._overflow.extend(held.span for held in group)
            counts = self._counters  # no longer held: they join the spans passed on as they came
            counts.held -= len(group)
            counts.forwarded_untouched += len(group)
            counts.forwarded_unevaluated += len(group)
            return
        self._ready.append(group)
        self._ready_spans += len(group)

    def _take_overflow(self) -> list[ReadableSpan]:
        overflow, self._overflow = self._overflow, []
        return overflow

    def _release_children(self, span_id: int) -> bool:
        children = self._waiting_by_parent.pop(span_id, None)
        if not children:
            return False
        for held in children:
            del self._waiting[held]
        self._push_ready(tuple(children))
        return True

    def _release_waiting(self, held: HeldSpan, capped: bool = True) -> None:
        del self._waiting[held]
        if held.parent_id is not None:
            siblings = self._waiting_by_parent.get(held.parent_id)
            if siblings is not None:
                siblings.remove(held)
                if not siblings:
                    del self._waiting_by_parent[held.parent_id]
        held.incomplete = True
        self._push_ready((held,), capped)

    def _release_oldest_waiting(self) -> None:
        self._release_waiting(next(iter(self._waiting)))
        self._counters.released_by_cap += 1

    def _release(self, group: tuple[HeldSpan, ...]) -> Release:
        facts = self._traces.get(group[0].trace_id)
        if facts is None:
            return Release(group)
        owners = {held.span_id for held in group}
        owners.update(held.parent_id for held in group if held.awaits_parent and held.parent_id is not None)
        content: dict[int, tuple[LogRecord, ...]] = {}
        attempts: dict[int, tuple[ReadableSpan, ...]] = {}
        for held in group:
            records = facts.content.pop(held.span_id, None)
            if records:
                content[held.span_id] = tuple(records)
                facts.size -= len(records)
                self._unweigh(facts, content[held.span_id])
            facts.content_names_calls.discard(held.span_id)
            if held.analyst:
                attempt_spans = facts.attempts.pop(held.span_id, None)
                if attempt_spans:
                    attempts[held.span_id] = tuple(attempt_spans)
                    facts.size -= len(attempt_spans)
                    self._unweigh(facts, attempts[held.span_id])
        trace_executions = tuple(facts.executions)
        executions = tuple(fact for fact in trace_executions if fact.parent_id in owners)
        awaited = {held.parent_id for held in group if held.awaits_parent}
        siblings = (
            tuple(
                (span, classified)
                for parent_id, span, classified in facts.calls
                if parent_id in awaited and span.context is not None and span.context.span_id not in owners
            )
            if awaited
            else ()
        )
        return Release(group, executions, trace_executions, siblings, content, attempts)

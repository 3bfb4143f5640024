"""The ledger: which ended spans are held for evaluation, what facts they wait for, and when they are final.

Keyed by span id (integers, as the SDK holds them). The recording thread (for ``on_end``) and the
application's threads (for ``on_emit``) record facts here under one short lock: references to spans
and log records, never parsed content. The evaluation worker takes released spans out in groups, with
a snapshot of the facts of their trace.

Completion rules (a span is *final* when every fact its verdict needs is known):

- an LLM-call span whose own output (or content log record) names its tool calls is final at its end;
- one whose tool calls are only visible as sibling tool-execution spans is final when its parent ends;
  a parent that already ended, a remote parent or no parent make it final at its own end;
- an analyst span (a span with analyst-attempt children) is final at its end;
- a run's agent span (the outermost agent span of a trace) is final when every held span of its run
  was evaluated: each LLM-call or analyst span that ends under a live agent span counts for the
  outermost one (the processor walks the live ancestors), and the agent span, once ended, waits for the
  ones not yet evaluated. Spans whose ancestry is not known (the gateway sees no starts) are claimed by
  the first agent span of their trace that ends and whose time window holds them.

A span is evaluated on the LLM calls and tool executions its trace showed when it became final (not
on those recorded by the time the worker takes it out), so its verdict does not depend on how far the
worker is behind. A trace notes when spans ended whose facts it could not keep (a bound refused them,
they were forwarded unrecorded, or its facts were forgotten and started again): a request and a
response side by side are not joined across such a gap.

Bounds: a span waits at most ``max_wait`` seconds and at most ``max_pending_spans`` spans wait at once
(past either, the oldest is released as *incomplete*; a run's agent span released so before its spans
were evaluated says ``shapecheck.run.incomplete``); at most ``max_queue_size`` spans wait for the
worker (past it a new span is not held, and the caller forwards it as it is). Facts are kept for at
most ``max_traces`` traces (least recently active evicted first) and ``max_facts_per_trace`` each, and
once a trace's local root ended, until ``max_finished_traces`` other local roots ended after it and
its held spans were released.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from otel_shapecheck.otlp._sdk_fields import own_attributes
from otel_shapecheck.pipeline._completion import Backlog, Completion, WaitBounds
from otel_shapecheck.pipeline._facts import (
    ExecutionFact,
    HeldSpan,
    Release,
    TraceFacts,
    approximate_bytes,
)
from otel_shapecheck.pipeline._hot_state import HotPathState
from otel_shapecheck.pipeline._run_book import UNKNOWN_ANCESTRY, Ancestry, RunBook
from otel_shapecheck.pipeline._runs import RunTally
from otel_shapecheck.pipeline._trace_store import TraceStore
from otel_shapecheck.readers._classify import (
    ROLE_AGENT,
    ROLE_ANALYST_ATTEMPT,
    ROLE_LLM_CALL,
    ROLE_TOOL_EXECUTION,
    SpanClass,
)


class Ledger:
    """Facts and held spans, shared by the span processor, its log processor and its worker.

    The span ids ``on_end`` tests without the lock (``awaited_ends``, ``analyst_parents``) are the
    hot-path state's; which held spans wait and which are ready is :class:`Completion`'s.
    """

    def __init__(
        self,
        state: HotPathState,
        *,
        max_wait_seconds: float,
        max_pending_spans: int,
        max_queue_size: int,
        max_traces: int,
        max_facts_per_trace: int,
        max_fact_bytes: int,
        max_finished_traces: int | None = None,
        wake_at: int = 1,
    ) -> None:
        self._state = state
        self._counters = state.counters
        self._wake_at = wake_at
        self._bounds = WaitBounds(max_wait_seconds, max_pending_spans, max_queue_size)
        self._max_traces = max_traces
        self._max_facts = max_facts_per_trace
        self._max_fact_bytes = max_fact_bytes
        self._max_finished = max_finished_traces
        self._init_state()

    def _init_state(self) -> None:
        self._lock = threading.Lock()
        self._store = TraceStore(
            self._counters,
            max_traces=self._max_traces,
            max_facts_per_trace=self._max_facts,
            max_fact_bytes=self._max_fact_bytes,
            on_forget=self._forget_attempts,
            max_finished_traces=self._max_finished,
        )
        self._state.fact_traces = self._store.traces
        self._closed = False
        self._runs = RunBook(self._bounds.max_pending_spans)
        self._completion = Completion(self._state, self._store, self._runs, self._bounds)

    def reset_after_fork(self) -> None:
        """Forget everything: spans held by the parent process are the parent's to forward (the
        hot-path state was cleared already)."""
        self._init_state()

    # Application threads.

    def concerns(self, span_id: int) -> bool:
        """Whether a span that is not GenAI must still go through :meth:`span_ended` (a lock-free check).

        It must when held spans wait for its end, it has analyst-attempt children, or a GenAI child
        started under it (so a child ending after it knows it need not wait).
        """
        state = self._state
        return span_id in state.awaited_ends or span_id in state.analyst_parents

    def has_attempts(self, span_id: int) -> bool:
        """Whether analyst-attempt children of the span ended (it will be held as an analyst span)."""
        return span_id in self._state.analyst_parents

    def span_ended(
        self,
        span: ReadableSpan,
        context: SpanContext | None,
        parent: SpanContext | None,
        classified: SpanClass,
        *,
        names_own_tool_calls: bool = False,
        parent_ended: bool = False,
        ancestor_menu: Mapping[str, object] | None = None,
        ancestry: Ancestry = UNKNOWN_ANCESTRY,
        attributes: Mapping[str, object] | None = None,
        local_root: bool = False,
    ) -> tuple[bool, bool, list[ReadableSpan] | None]:
        """Record an ended span; return ``(held, wake, overflow)``.

        ``parent_ended`` says the caller knows the span's parent already ended (it saw it start and
        end), so an LLM span needing sibling executions is final now instead of waiting for that end.
        ``ancestry`` is what the caller found among the span's live ancestors: the run an LLM-call or
        analyst span counts for, or whether an agent span is nested in another one (then it is no run).
        ``context`` and ``parent``: the span's own and its parent's, as the caller read them;
        ``attributes``: the span's own, when the caller read them already; ``local_root``: the span has
        no parent here (none, or a remote one that is not live), so its trace is finished once none of
        its spans is held.

        ``held`` says the ledger keeps the span (the caller must not forward it); ``wake`` says at least
        ``wake_at`` spans are ready for the worker; ``overflow`` holds earlier spans this end released
        that found the worker's queue full (the caller forwards them as they are).
        """
        if context is None:
            return False, False, None
        role = classified.role
        # A fact's size is estimated before the lock is taken: it walks the span's attribute values.
        nbytes = (
            approximate_bytes(own_attributes(span) if attributes is None else attributes)
            if role is ROLE_LLM_CALL or role is ROLE_TOOL_EXECUTION or role is ROLE_ANALYST_ATTEMPT
            else 0
        )
        with self._lock:
            if self._closed:
                return False, False, None
            held, wake = self._record(
                span,
                context[1],  # a SpanContext is a tuple: (trace id, span id, is remote, ...)
                context[0],
                parent,
                classified,
                names_own_tool_calls or parent_ended,
                ancestor_menu,
                ancestry,
                nbytes,
            )
            if local_root:
                self._store.root_ended(context[0])
            overflow = self._completion.take_overflow() or None
        return held, wake, overflow

    def span_forwarded(
        self,
        trace_id: int,
        span_id: int,
        *,
        out_of_order: bool = False,
        unrecorded: ReadableSpan | None = None,
        local_root: bool = False,
    ) -> tuple[bool, list[ReadableSpan]]:
        """Record the end of a span that was forwarded as it came; return ``(wake, overflow)``.

        Held spans waiting for its end are released; a trace with facts notes it ended (a child ending
        later need not wait for it). ``out_of_order``: spans that ended before it may not be recorded
        yet, so its trace's facts are started if need be, for those to find its end there.
        ``unrecorded``: the span itself, one to record that was forwarded unrecorded (no room in the
        recording queue in time): its trace's facts note it as lost. ``local_root``, ``wake`` and
        ``overflow`` are as in :meth:`span_ended`.
        """
        with self._lock:
            if self._closed:
                return False, []
            completion = self._completion
            wake = span_id in self._state.awaited_ends and completion.release_children(span_id)
            facts = self._store.active(trace_id)
            if facts is None and out_of_order:
                facts = self._store.new(trace_id)
            if facts is not None:
                if len(facts.ended) < self._max_facts:
                    facts.ended.add(span_id)
                if unrecorded is not None:
                    facts.lose(unrecorded.end_time)
                if local_root:
                    self._store.root_ended(trace_id)
            return wake, completion.take_overflow()

    def _record(
        self,
        span: ReadableSpan,
        span_id: int,
        trace_id: int,
        parent: SpanContext | None,
        classified: SpanClass,
        final_at_end: bool,
        ancestor_menu: Mapping[str, object] | None = None,
        ancestry: Ancestry = UNKNOWN_ANCESTRY,
        nbytes: int = 0,
    ) -> tuple[bool, bool]:
        role = classified.role
        llm_call = role is ROLE_LLM_CALL
        tool_execution = role is ROLE_TOOL_EXECUTION
        analyst_attempt = role is ROLE_ANALYST_ATTEMPT
        parent_id = parent[1] if parent is not None else None
        counts = self._counters
        completion = self._completion
        analyst_parents = self._state.analyst_parents
        store = self._store
        facts = store.active(trace_id)
        if facts is None and (llm_call or tool_execution or analyst_attempt):
            facts = store.new(trace_id)
        if facts is not None:
            if len(facts.ended) < self._max_facts:
                facts.ended.add(span_id)
            if tool_execution or (analyst_attempt and parent_id is not None):
                admitted = store.admit(trace_id, facts, nbytes)
                if admitted < 0:
                    counts.facts_dropped += 1
                    facts.lose(span.end_time)
                elif tool_execution:
                    facts.executions.append(ExecutionFact(span, parent_id, classified))
                elif parent_id is not None:
                    facts.add_attempt(parent_id, span, admitted)
                    analyst_parents[parent_id] = trace_id
            if llm_call:
                if store.admit(trace_id, facts, nbytes) >= 0:
                    facts.calls.append((parent_id, span, classified))
                else:
                    facts.lose(span.end_time)
                if facts.lost_content and facts.content_lost(span_id):  # its reading lacks some content
                    facts.lose(span.end_time)
        # Its children waiting for its end are final now, with this span's own facts among theirs (a
        # request nested in its response's span pairs with it).
        wake = span_id in self._state.awaited_ends and completion.release_children(span_id)
        analyst = analyst_parents.pop(span_id, None) is not None
        if role is ROLE_AGENT and ancestry.run_id is None:
            return self._hold_run(span, span_id, trace_id, classified, facts), wake
        if not (llm_call or analyst):
            return False, wake
        held = HeldSpan(span, span_id, trace_id, parent_id, classified, analyst, 0.0)
        held.ancestor_menu = ancestor_menu
        if ancestry.run_id is not None:
            self._runs.join(held, trace_id, ancestry.run_id)
            held.agents = ancestry.agents
        elif not ancestry.known and facts is not None:
            held.unclaimed = self._runs.unclaimed(span, facts)
        awaits_parent = (
            llm_call
            and parent is not None
            and not parent[2]  # is remote
            and not final_at_end
            and (facts is None or (parent_id not in facts.ended and not facts.logged_calls(span_id)))
        )
        if awaits_parent and parent_id is not None:
            completion.wait_for_parent(held, parent_id)
        elif completion.ready_one(held, facts):
            wake = wake or completion.ready_spans >= self._wake_at
        else:
            return False, wake
        counts.held += 1
        if facts is not None:
            facts.held += 1
        return True, wake

    def _hold_run(
        self,
        span: ReadableSpan,
        span_id: int,
        trace_id: int,
        classified: SpanClass,
        facts: TraceFacts | None,
    ) -> bool:
        """Hold a run's agent span: ready now if its run has no span left to evaluate, else waiting."""
        forgotten = self._store.was_forgotten(trace_id)
        run = self._runs.agent_ended(trace_id, span_id, trace_forgotten=forgotten)
        if facts is not None:
            self._runs.claim(run, facts, span.start_time or 0, span.end_time or 0)
        deadline = time.monotonic() + self._bounds.max_wait_seconds
        held = HeldSpan(span, span_id, trace_id, None, classified, False, deadline)
        held.run = run
        self._counters.runs += 1
        if run.pending == 0:
            self._completion.push_ready((held,))
        else:
            self._completion.wait_for_run(held)
            run.agent = held
        return True

    def members_done(self, results: Sequence[tuple[HeldSpan, RunTally | None]]) -> list[ReadableSpan]:
        """Count evaluated spans for their runs (``None``: forwarded without evaluation).

        A run's agent span whose last awaited span this was becomes ready. Returns spans that found
        the worker's queue full (the caller forwards them as they are).
        """
        with self._lock:
            completion = self._completion
            for held, tally in results:
                completion.member_done(held, tally)
            return completion.take_overflow()

    def finish_run(self, held: HeldSpan) -> tuple[RunTally, bool]:
        """Close the run of an agent span about to be forwarded: its counts, and whether it is short
        (see :meth:`RunBook.finish`)."""
        with self._lock:
            return self._runs.finish(held)

    def content_recorded(
        self, trace_id: int, span_id: int, record: LogRecord, *, names_own_tool_calls: bool
    ) -> None:
        """Keep a GenAI content log record for the span it belongs to."""
        attributes = record.attributes if isinstance(record.attributes, Mapping) else None
        size = approximate_bytes(attributes, record.body)  # before the lock: it walks the body
        with self._lock:
            if self._closed:
                return
            facts = self._store.active(trace_id) or self._store.new(trace_id)
            nbytes = self._store.admit(trace_id, facts, size)
            if nbytes < 0:
                self._counters.facts_dropped += 1
                facts.lose_content(span_id)
                return
            facts.add_content(span_id, record, nbytes)
            if names_own_tool_calls:
                facts.note_content_names_calls(span_id)

    # The worker.

    def release_expired(self, now: float) -> list[ReadableSpan]:
        """Release waiting spans whose deadline passed (as incomplete).

        Returns the released spans that found the worker's queue full: the caller forwards them as they are.
        """
        with self._lock:
            released = self._completion.release_expired(now)
            overflow = self._completion.take_overflow()
        if released:
            self._counters.released_by_deadline += released
        return overflow

    def close(self) -> int:
        """Refuse new spans and release every waiting span as incomplete; how many were released.

        Runs' agent spans go last, so that the spans of their runs are evaluated before them.
        """
        with self._lock:
            self._closed = True
            released = self._completion.release_all()
        if released:
            self._counters.released_by_shutdown += released
        return released

    def forget_facts(self) -> None:
        """Drop every trace's facts once the worker is done with them (after :meth:`close`).

        They refer to the traces' spans, and the store and the ledger refer to each other, so a
        processor that is shut down and dropped would otherwise leave its spans for a full collection
        to find, during whatever the application runs next.
        """
        with self._lock:
            self._store.clear()

    @property
    def fact_bytes(self) -> int:
        """The estimated bytes the kept facts hold now (at most ``max_fact_bytes``)."""
        return self._store.fact_bytes

    def ready_count(self) -> int:
        """Spans ready for the worker."""
        return self._completion.ready_spans

    def backlog(self, now: float) -> Backlog:
        """How near the spans awaiting the worker are to the bounds that would cost them their
        evaluation or their trace's facts (``now``: ``time.monotonic()``)."""
        with self._lock:
            return self._completion.backlog(now)

    def take_ready(self, max_spans: int) -> list[Release]:
        """Up to about ``max_spans`` ready spans, in groups, with the facts of their traces."""
        with self._lock:
            return [self._store.release(group) for group in self._completion.take_ready(max_spans)]

    # Internals (lock held).

    def _forget_attempts(self, facts: TraceFacts) -> None:
        """A trace's facts were forgotten: its analyst spans no longer have attempts to be held for."""
        analyst_parents = self._state.analyst_parents
        for parent_id in facts.attempts:
            analyst_parents.pop(parent_id, None)

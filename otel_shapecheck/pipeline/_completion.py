"""The ledger's completion bookkeeping: which held spans wait, for what, and which are ready.

A held span either waits (for its parent's end, for the spans of its run, or for its deadline) or is
ready for the worker. :class:`Completion` keeps both sides and moves spans between them; it enforces
``max_pending_spans`` (past it the oldest waiting span is released as incomplete) and
``max_queue_size`` (past it a released group overflows: its spans are forwarded as they are). The
ledger calls it with its lock held; the facts the spans wait for are the ledger's. It also says how
near the spans awaiting the worker are to those bounds and to the trace store's (:meth:`backlog`): the
worker's pacing ends before any of them is reached.
"""

from __future__ import annotations

import time
from collections import deque
from typing import NamedTuple

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.pipeline._facts import HeldSpan, TraceFacts
from otel_shapecheck.pipeline._hot_state import HotPathState
from otel_shapecheck.pipeline._run_book import RunBook
from otel_shapecheck.pipeline._runs import RunTally
from otel_shapecheck.pipeline._trace_store import TraceStore


class WaitBounds(NamedTuple):
    """How long a held span waits and how many spans wait or are ready at once: the ledger's settings,
    kept once and handed to each :class:`Completion` it makes (a new one after a fork)."""

    max_wait_seconds: float
    """Longest a span waits for its facts."""
    max_pending_spans: int
    """Spans waiting at once, at most."""
    max_queue_size: int
    """Spans ready for the worker, at most."""


class Backlog(NamedTuple):
    """How near the spans awaiting the worker are to the bounds that would cost them their evaluation."""

    fraction: float
    """The largest share of a bound in use: ready spans of ``max_queue_size``, waiting spans of
    ``max_pending_spans``, and traces started and fact bytes admitted since the oldest ready span was
    queued, of ``max_traces`` and ``max_fact_bytes`` (past either its trace's facts may be forgotten
    before the worker takes it)."""
    age_seconds: float
    """How long the oldest ready span has been ready (0 with none ready)."""


class Completion:
    """Waiting spans in deadline order, the worker's ready groups, and what overflowed (lock held).

    Args:
        state: the hot path's state, whose ``awaited_ends`` this keeps (``on_end`` reads it).
        store: the ledger's trace facts (a held span keeps its trace's facts alive).
        runs: the ledger's runs (an evaluated span counts for its run's agent span).
        bounds: how long spans wait, and how many wait or are ready at once.
    """

    def __init__(self, state: HotPathState, store: TraceStore, runs: RunBook, bounds: WaitBounds) -> None:
        self._state = state
        self._counters = state.counters
        self._store = store
        self._runs = runs
        self._max_wait, self._max_pending, self._max_queue = bounds  # read on every span: plain attributes
        self.waiting: dict[HeldSpan, None] = {}
        """Waiting spans in deadline order, keyed by identity: ids are not trusted to be unique."""
        self._ready: deque[tuple[HeldSpan, ...]] = deque()
        self._marks: deque[tuple[float, int, int]] = deque()
        """For each ready group, in step with ``_ready``: when it was queued, and the trace store's
        traces started and fact bytes admitted until then."""
        self.ready_spans = 0
        """Spans in the ready groups."""
        self._overflow: list[ReadableSpan] = []

    def wait_for_parent(self, held: HeldSpan, parent_id: int) -> None:
        """Hold ``held`` until its parent ends or its deadline passes."""
        if len(self.waiting) >= self._max_pending:
            self._release_oldest_waiting()
        held.deadline = time.monotonic() + self._max_wait  # only a waiting span has one
        held.awaits_parent = True
        self.waiting[held] = None
        self._state.awaited_ends.setdefault(parent_id, []).append(held)

    def wait_for_run(self, agent: HeldSpan) -> None:
        """Hold a run's agent span until its run's spans are evaluated or its deadline passes."""
        if len(self.waiting) >= self._max_pending:
            self._release_oldest_waiting()
        self.waiting[agent] = None

    def ready_one(self, held: HeldSpan, facts: TraceFacts | None) -> bool:
        """Queue one final span of the trace whose facts are ``facts`` (the store's, or ``None`` if it
        keeps none) for the worker; False when the queue is full (forward it as it is).

        What :meth:`push_ready` does for a group, in line: the recording thread calls this for most
        spans it holds.
        """
        if self.ready_spans >= self._max_queue:
            self._counters.forwarded_unevaluated += 1
            self.member_done(held, None)  # forwarded as it is: its run does not wait for it
            return False
        store = self._store
        self._ready.append((held,))
        self._marks.append((time.monotonic(), store.traces_started, store.bytes_admitted))
        self.ready_spans += 1
        if facts is not None:  # TraceStore.note_final(), with the facts in hand
            held.known_facts = (facts.serial, len(facts.calls), len(facts.executions))
        return True

    def push_ready(self, group: tuple[HeldSpan, ...], capped: bool = True) -> None:
        """Queue a group for the worker; past ``max_queue_size`` its spans go to the overflow instead.

        Groups are all LLM-call or analyst spans, or one run's agent span alone.
        """
        if capped and self.ready_spans + len(group) > self._max_queue:
            self._overflow.extend(held.span for held in group)
            self._store.unhold(group)
            counts = self._counters  # no longer held: they join the spans passed on as they came
            run = group[0].run
            if run is not None:
                run.finished = True
                run.agent = None
                counts.runs -= 1
            else:
                counts.held -= len(group)
                for held in group:
                    self.member_done(held, None)
            counts.forwarded_untouched += len(group)
            counts.forwarded_unevaluated += len(group)
            return
        self._queue(group)
        self.ready_spans += len(group)
        if group[0].run is None:
            self._store.note_final(group)

    def _queue(self, group: tuple[HeldSpan, ...]) -> None:
        store = self._store
        self._ready.append(group)
        self._marks.append((time.monotonic(), store.traces_started, store.bytes_admitted))

    def take_ready(self, max_spans: int) -> list[tuple[HeldSpan, ...]]:
        """Up to about ``max_spans`` ready spans, in their groups, oldest first."""
        groups: list[tuple[HeldSpan, ...]] = []
        taken = 0
        while self._ready and taken < max_spans:
            group = self._ready.popleft()
            self._marks.popleft()
            self.ready_spans -= len(group)
            taken += len(group)
            groups.append(group)
        return groups

    def backlog(self, now: float) -> Backlog:
        """How near the spans awaiting the worker are to the bounds (``now``: ``time.monotonic()``)."""
        fraction = max(self.ready_spans / self._max_queue, len(self.waiting) / self._max_pending)
        if not self._marks:
            return Backlog(fraction, 0.0)
        queued_at, traces, fact_bytes = self._marks[0]
        store = self._store
        fraction = max(
            fraction,
            (store.traces_started - traces) / store.max_traces,
            (store.bytes_admitted - fact_bytes) / store.max_fact_bytes,
        )
        return Backlog(fraction, max(0.0, now - queued_at))

    def take_overflow(self) -> list[ReadableSpan]:
        """The spans that overflowed since the last call (the caller forwards them as they are)."""
        if not self._overflow:
            return []
        overflow, self._overflow = self._overflow, []
        return overflow

    def member_done(self, held: HeldSpan, tally: RunTally | None) -> None:
        """``held`` was evaluated (``tally``) or forwarded without evaluation (``None``): count it once;
        its run's agent span becomes ready when it waited for this one last."""
        agent = self._runs.member_done(held, tally)
        if agent is not None and agent in self.waiting:
            del self.waiting[agent]
            self.push_ready((agent,))

    def release_children(self, span_id: int) -> bool:
        """The span ended: the spans waiting for it are ready; whether there were any."""
        children = self._state.awaited_ends.pop(span_id, None)
        if not children:
            return False
        for held in children:
            del self.waiting[held]
        self.push_ready(tuple(children))
        return True

    def release_expired(self, now: float) -> int:
        """Release the waiting spans whose deadline passed (as incomplete); how many."""
        released = 0
        waiting = self.waiting
        while waiting:
            held = next(iter(waiting))
            if held.deadline > now:
                break
            self._release_waiting(held)
            released += 1
        return released

    def release_all(self) -> int:
        """Release every waiting span as incomplete, runs' agent spans last; how many.

        The worker's queue bound does not apply: nothing new is held after this.
        """
        waiting = sorted(self.waiting, key=lambda held: held.run is not None)
        for held in waiting:
            self._release_waiting(held, capped=False)
        return len(waiting)

    def _release_waiting(self, held: HeldSpan, capped: bool = True) -> None:
        del self.waiting[held]
        if held.awaits_parent and held.parent_id is not None:
            awaited_ends = self._state.awaited_ends
            siblings = awaited_ends.get(held.parent_id)
            if siblings is not None:
                siblings.remove(held)
                if not siblings:
                    del awaited_ends[held.parent_id]
        if held.run is not None:  # a run's agent span: whether its run is short is decided when it is taken
            held.run.agent = None
        else:
            held.incomplete = True
        self.push_ready((held,), capped)

    def _release_oldest_waiting(self) -> None:
        self._release_waiting(next(iter(self.waiting)))
        self._counters.released_by_cap += 1

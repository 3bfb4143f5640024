"""The ledger's facts by trace, held to their bounds: traces kept, facts per trace, and bytes in all.

Facts are references to ended tool executions, analyst attempts, content log records and LLM calls
(:class:`~otel_shapecheck.pipeline._facts.TraceFacts`), kept for the held spans of their trace. At most
``max_traces`` traces are kept, least recently active forgotten first; at most ``max_facts_per_trace``
facts each; and at most ``max_fact_bytes`` estimated bytes in all, forgetting the least recently active
other traces to make room. A forgotten trace counts its facts as dropped only if they were still needed:
spans of it were held, or it shows up again. The store has no lock of its own: the ledger calls it
under its lock.

A trace is *finished* once its local root span ended. Its facts then refer to spans nothing will
evaluate again (the SDK objects of a model call and a tool execution, about a dozen objects the
collector tracks each) once its held spans are released, so a finished trace is forgotten when
``max_finished_traces`` other local roots ended after its own, or at its held spans' release if that
comes later, rather than when ``max_traces`` newer traces push it out. Kept that long, every trace's
spans would outlive two young collections and be promoted, and each full collection of the
application's heap would walk them. The order is the order of the roots' ends, which the recording
thread sees as the application ended them, not the order in which the worker took spans out.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable

from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.pipeline._facts import ALL_LOST, NO_LOSSES, HeldSpan, Release, TraceFacts
from otel_shapecheck.pipeline._metrics import ProcessorCounters

_FORGOTTEN_PER_KEPT_TRACE = 16


class TraceStore:
    """Trace facts by trace id, least recently active first.

    Args:
        counters: where dropped facts and byte-budget pressure are counted.
        on_forget: called with the facts of each trace forgotten (the ledger drops what points into them).
    """

    def __init__(
        self,
        counters: ProcessorCounters,
        *,
        max_traces: int,
        max_facts_per_trace: int,
        max_fact_bytes: int,
        on_forget: Callable[[TraceFacts], None],
        max_finished_traces: int | None = None,
    ) -> None:
        self._counters = counters
        self.max_traces = max_traces
        self._max_finished = max_traces if max_finished_traces is None else max_finished_traces
        self._finished: deque[tuple[int, int]] = deque()
        """Finished traces, longest finished first: (trace id, facts serial); integers only."""
        self._max_facts = max_facts_per_trace
        self.max_fact_bytes = max_fact_bytes
        self._on_forget = on_forget
        self.traces: OrderedDict[int, TraceFacts] = OrderedDict()
        self.fact_bytes = 0
        """The estimated bytes every trace's facts keep alive, held to ``max_fact_bytes``."""
        self._serial = 0
        self.traces_started = 0
        """Traces whose facts were started, ever: a trace is forgotten once ``max_traces`` others
        started after it was last active."""
        self.bytes_admitted = 0
        """Estimated fact bytes admitted, ever: a trace is forgotten at the latest once ``max_fact_bytes``
        were admitted for others after it was last active."""
        self._forgotten: OrderedDict[int, int] = OrderedDict()
        """Facts of recently forgotten traces, counted as dropped if the trace shows up again (0: counted
        when forgotten, spans of it being held); facts started again for one know they lack the earlier."""

    def was_forgotten(self, trace_id: int) -> bool:
        """Whether facts of the trace were forgotten while it may still have had spans to come."""
        return self._forgotten.get(trace_id, 0) > 0

    def active(self, trace_id: int) -> TraceFacts | None:
        """The trace's facts, now its most recently active, or None."""
        facts = self.traces.get(trace_id)
        if facts is not None:
            self.traces.move_to_end(trace_id)
        return facts

    def new(self, trace_id: int) -> TraceFacts:
        """Start the facts of a trace (forgetting the least recently active past ``max_traces``)."""
        lost = self._forgotten.pop(trace_id, None)
        if lost:  # the trace was forgotten while it still had spans to come that needed its facts
            self._counters.facts_dropped += lost
        self._serial += 1
        facts = TraceFacts(self._max_facts, self._serial)
        if lost is not None:  # what it showed before is gone (content of spans still open among it)
            facts.lost_since = 0
        self.traces[trace_id] = facts
        self.traces_started += 1
        while len(self.traces) > self.max_traces:
            self._forget_oldest()
        return facts

    def admit(self, trace_id: int, facts: TraceFacts, nbytes: int) -> int:
        """Make room for one more fact of ``trace_id`` of ``nbytes`` estimated bytes (see
        :func:`~otel_shapecheck.pipeline._facts.approximate_bytes`); ``nbytes``, or -1 when it cannot
        be kept.

        Past ``max_facts_per_trace`` it is not kept; past ``max_fact_bytes`` the least recently active
        other traces are forgotten first, and a fact that still does not fit is not kept.
        """
        if facts.size >= facts.limit:
            return -1
        if self.fact_bytes + nbytes > self.max_fact_bytes:
            self._counters.fact_bytes_exceeded += 1
            while self.fact_bytes + nbytes > self.max_fact_bytes and next(iter(self.traces)) != trace_id:
                self._forget_oldest()
            if self.fact_bytes + nbytes > self.max_fact_bytes:
                return -1
        facts.size += 1
        facts.bytes += nbytes
        self.fact_bytes += nbytes
        self.bytes_admitted += nbytes
        return nbytes

    def note_final(self, group: tuple[HeldSpan, ...]) -> None:
        """The group's spans became final: note which LLM calls of their trace were known then."""
        facts = self.traces.get(group[0].trace_id)
        if facts is not None:
            known = (facts.serial, len(facts.calls), len(facts.executions))
            for held in group:
                held.known_facts = known

    def root_ended(self, trace_id: int) -> None:
        """The trace's local root span ended: its facts go once ``max_finished_traces`` other local
        roots ended after it and none of its spans is held."""
        facts = self.traces.get(trace_id)
        if facts is None or facts.finished:
            return  # no facts to let go of, or a second local root of the trace (a fan-out)
        facts.finished = True
        finished = self._finished
        finished.append((trace_id, facts.serial))
        while len(finished) > self._max_finished:
            old_id, serial = finished.popleft()
            old = self.traces.get(old_id)
            if old is None or old.serial != serial:
                continue  # forgotten meanwhile (and perhaps started again)
            if old.held:
                old.forget_when_released = True  # its held spans still need these facts
            else:
                self._forget(old_id, old)

    def release_bytes(self, facts: TraceFacts, nbytes: int) -> None:
        """Facts of ``nbytes`` were handed to the worker: they no longer count against the budget."""
        facts.bytes -= nbytes
        self.fact_bytes -= nbytes

    def unhold(self, group: tuple[HeldSpan, ...]) -> None:
        """The group's spans no longer keep their trace's facts alive (released, or forwarded as they are)."""
        if group[0].run is not None:  # a run's agent span keeps no facts of its trace alive
            return
        trace_id = group[0].trace_id
        facts = self.traces.get(trace_id)
        if facts is not None:
            facts.held = max(0, facts.held - len(group))
            if facts.forget_when_released and not facts.held:
                self._forget(trace_id, facts)

    def release(self, group: tuple[HeldSpan, ...]) -> Release:
        """Hand a ready group to the worker with the facts of its trace it needs, which stop counting
        against the bounds (the facts are read first: the group's release may let go of its trace)."""
        release = self._release(group)
        self.unhold(group)
        return release

    def _release(self, group: tuple[HeldSpan, ...]) -> Release:
        facts = self.traces.get(group[0].trace_id)
        if group[0].run is not None:
            return Release(group)
        if facts is None:
            # Recording a model call starts its trace's facts: a held one that finds none, they were let go.
            return Release(group, losses=ALL_LOST if any(held.llm_call for held in group) else NO_LOSSES)
        owners = {held.span_id for held in group}
        owners.update(held.parent_id for held in group if held.awaits_parent and held.parent_id is not None)
        content: dict[int, tuple[LogRecord, ...]] = {}
        attempts: dict[int, tuple[ReadableSpan, ...]] = {}
        for held in group:
            records = facts.content.pop(held.span_id, None)
            if records:
                content[held.span_id] = tuple(records)
                facts.size -= len(records)
                self.release_bytes(facts, facts.content_bytes.pop(held.span_id, 0))
            if facts.content_names_calls:
                facts.content_names_calls.discard(held.span_id)
            if held.analyst:
                attempt_spans = facts.attempts.pop(held.span_id, None)
                if attempt_spans:
                    attempts[held.span_id] = tuple(attempt_spans)
                    facts.size -= len(attempt_spans)
                    self.release_bytes(facts, facts.attempt_bytes.pop(held.span_id, 0))
        losses = facts.losses()
        calls, kept_executions = facts.calls, facts.executions
        known = group[0].known_facts  # one group became final at once
        if known is not None and known[0] == facts.serial:
            calls, kept_executions = calls[: known[1]], kept_executions[: known[2]]
        elif known is not None:  # the facts it became final with were forgotten since
            losses = ALL_LOST
        trace_executions = tuple(kept_executions)
        executions = tuple(fact for fact in trace_executions if fact.parent_id in owners)
        awaited = {held.parent_id for held in group if held.awaits_parent}
        siblings = (
            tuple(
                (span, classified)
                for parent_id, span, classified in calls
                if parent_id in awaited and span.context is not None and span.context.span_id not in owners
            )
            if awaited
            else ()
        )
        trace_calls = tuple((span, classified) for _, span, classified in calls)
        return Release(
            group,
            executions,
            trace_executions,
            siblings,
            trace_calls=trace_calls,
            content=content,
            attempts=attempts,
            losses=losses,
        )

    def clear(self) -> None:
        """Forget every trace (nothing counted: no span is left to need them)."""
        self.traces.clear()
        self._forgotten.clear()
        self._finished.clear()
        self.fact_bytes = 0

    def _forget_oldest(self) -> None:
        """Forget the least recently active trace; its facts count as dropped only if still needed.

        They are needed when spans of the trace are still held, or when the trace shows up again later
        (a finished trace never does, so a healthy run drops nothing).
        """
        trace_id, forgotten = self.traces.popitem(last=False)
        self._note_forgotten(trace_id, forgotten)

    def _forget(self, trace_id: int, facts: TraceFacts) -> None:
        """Forget a finished trace (nothing counted unless a span of it ends later)."""
        del self.traces[trace_id]
        self._note_forgotten(trace_id, facts)

    def _note_forgotten(self, trace_id: int, forgotten: TraceFacts) -> None:
        """Account for a trace just taken out of ``traces``: its bytes, and its facts if still needed."""
        self.fact_bytes -= forgotten.bytes
        self._on_forget(forgotten)
        if not forgotten.size:
            return
        if forgotten.held:  # counted now; remembered (as 0) so that facts started again know of the loss
            self._counters.facts_dropped += forgotten.size
        self._forgotten[trace_id] = 0 if forgotten.held else forgotten.size
        # Two integers a trace: remembering 16 times as many forgotten traces as kept ones is cheap.
        if len(self._forgotten) > _FORGOTTEN_PER_KEPT_TRACE * self.max_traces:
            self._forgotten.popitem(last=False)

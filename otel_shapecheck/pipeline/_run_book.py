"""The ledger's book of runs: which held spans each run's agent span waits for, and what they counted.

A run is the outermost agent span of a trace. A held LLM-call or analyst span that ended under a live
agent span joins that run (:meth:`RunBook.join`); one of unknown ancestry (the gateway sees no starts)
is left in its trace's facts for the first agent span that is its parent or whose time window holds it
(:meth:`RunBook.unclaimed`, :meth:`RunBook.claim`). Each member counts once, evaluated or not
(:meth:`RunBook.member_done`); the agent span is ready when none is left. The book has no lock of its
own: the ledger calls it under its lock.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.pipeline._facts import HeldSpan, Member, RunState, TraceFacts
from otel_shapecheck.pipeline._runs import RunTally

CLOCK_SLACK_NS = 1_000_000
"""How far past an agent span's time window a member of unknown ancestry may reach and still be its."""


class Ancestry(NamedTuple):
    """What the processor found among a span's live ancestors: the run it belongs to, and agent spans.

    A named tuple of references: the hot path builds one per LLM call, reads no name, and a tuple costs
    less than a frozen dataclass.
    """

    run_id: int | None
    """The span id of the outermost agent span above it (for an agent span: above it, so it is nested)."""
    known: bool
    """Every ancestor was seen (up to the root): ``run_id is None`` then means it belongs to no run."""
    agents: tuple[ReadableSpan | None, ReadableSpan | None] = (None, None)
    """The nearest and the outermost agent span above it, live (for the metrics' agent name)."""


UNKNOWN_ANCESTRY = Ancestry(None, False)


class RunBook:
    """Runs whose agent span has not ended yet, and those forgotten for the bound.

    Args:
        max_runs: runs followed at once (``max_pending_spans``): past it the oldest is forgotten, and
            its summary, once its agent span ends, says it is incomplete.
    """

    def __init__(self, max_runs: int) -> None:
        self._max_runs = max_runs
        self._open: OrderedDict[tuple[int, int], RunState] = OrderedDict()
        """Runs whose agent span has not ended yet, by (trace id, agent span id), oldest first."""
        self._lost: OrderedDict[tuple[int, int], None] = OrderedDict()
        """Runs forgotten for the bound before their agent span ended."""

    def join(self, held: HeldSpan, trace_id: int, run_id: int) -> None:
        """Count ``held`` for the run of the agent span ``run_id`` (found above it), which waits for it."""
        key = (trace_id, run_id)
        run = self._open.get(key)
        if run is None:
            run = self._new(key)
        run.pending += 1
        held.run_of = run

    def agent_ended(self, trace_id: int, span_id: int, *, trace_forgotten: bool) -> RunState:
        """The run of an agent span that just ended, no longer open (new if no member joined it)."""
        key = (trace_id, span_id)
        run = self._open.pop(key, None)
        if run is None:
            run = RunState(trace_id, span_id)
            run.lost = self._lost.pop(key, None) is not None or trace_forgotten
        return run

    @staticmethod
    def unclaimed(span: ReadableSpan, facts: TraceFacts) -> Member | None:
        """Leave a span of unknown ancestry for an agent span of its trace to claim by time window."""
        unclaimed = facts.unclaimed
        if unclaimed is not None and len(unclaimed) >= facts.limit:
            facts.lost_members = True
            return None
        parent = span.parent
        member = Member(span.start_time or 0, span.end_time or 0, parent.span_id if parent is not None else 0)
        if unclaimed is None:
            facts.unclaimed = [member]
        else:
            unclaimed.append(member)
        return member

    @staticmethod
    def claim(run: RunState, facts: TraceFacts, start: int, end: int) -> None:
        """Count for ``run`` the trace's members of unknown ancestry that are its agent span's children
        or ran inside its time window, and the trace's tool executions found so.

        The window is widened by :data:`CLOCK_SLACK_NS` at each end: an SDK that takes start times from
        a millisecond clock and durations from a finer one (OpenTelemetry JS) can put a child's end up
        to a millisecond past its parent's (further, when the wall clock moved in between: its own
        children are claimed whatever their times).
        """
        if facts.lost_members:
            run.lost = True
        start, end = start - CLOCK_SLACK_NS, end + CLOCK_SLACK_NS
        # Tool executions are facts, not members: counted by the same window, live and offline alike.
        run.tally.tool_executions += sum(
            1
            for execution in facts.executions
            if execution.parent_id == run.agent_id
            or start <= (execution.span.start_time or 0) <= (execution.span.end_time or 0) <= end
        )
        if not facts.unclaimed:
            return
        kept: list[Member] = []
        for member in facts.unclaimed:
            if member.parent_id != run.agent_id and not (
                start <= member.start_time and member.end_time <= end
            ):
                kept.append(member)
            elif member.done:
                if member.tally is None:
                    run.lost = True
                else:
                    run.tally.add(member.tally)
            else:
                member.run = run
                run.pending += 1
        facts.unclaimed = kept or None

    @staticmethod
    def member_done(held: HeldSpan, tally: RunTally | None) -> HeldSpan | None:
        """``held`` was evaluated (``tally``) or forwarded without evaluation (``None``): count it once.

        Returns its run's agent span when this was the last member it waited for.
        """
        run = held.run_of
        member = held.unclaimed
        if member is not None:
            if member.done:
                return None
            member.done = True
            member.tally = tally
            run = member.run  # claimed by an agent span since it ended, or not (yet)
        elif run is None:
            return None
        held.run_of = None
        if run is None or run.finished:
            return None
        if tally is None:
            run.lost = True
        else:
            run.tally.add(tally)
        run.pending -= 1
        agent = run.agent
        if run.pending <= 0 and agent is not None:
            run.agent = None
            return agent
        return None

    @staticmethod
    def finish(held: HeldSpan) -> tuple[RunTally, bool]:
        """Close the run of an agent span about to be forwarded: its counts, and whether it is short.

        A run is short (*incomplete*) when spans of it were still being awaited, were forwarded without
        evaluation or were evaluated as incomplete, or when its facts were forgotten for a bound.
        """
        run = held.run
        if run is None:
            return RunTally(), True
        run.finished = True
        run.agent = None
        incomplete = run.pending > 0 or run.lost or run.tally.incomplete > 0
        return run.tally.copy(), incomplete

    def _new(self, key: tuple[int, int]) -> RunState:
        run = RunState(key[0], key[1])
        self._open[key] = run
        while len(self._open) > self._max_runs:  # agent spans that never end must not pile up
            forgotten_key, forgotten = self._open.popitem(last=False)
            forgotten.lost = True
            self._lost[forgotten_key] = None
            if len(self._lost) > self._max_runs:
                self._lost.popitem(last=False)
        return run

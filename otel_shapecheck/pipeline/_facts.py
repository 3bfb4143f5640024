"""What the ledger holds: held spans, the facts of each trace, and what a release hands the worker.

Facts are bounded by count per trace (``max_facts_per_trace``) and by bytes over the whole ledger
(``max_fact_bytes``). Bytes are estimated from what the facts keep alive (attribute strings, log bodies),
cheaply enough to run for every fact: long sequences are sampled, not walked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._model import ToolExecution
from otel_shapecheck.otlp._sdk_fields import own_attributes
from otel_shapecheck.pipeline._runs import RunTally
from otel_shapecheck.readers._classify import ROLE_LLM_CALL, SpanClass

_SAMPLED_ITEMS = 16
"""Items of a long sequence or mapping that are measured; the rest are assumed of the same size."""
_SCALAR_BYTES = 8
_SCALAR_TYPES = frozenset({int, float, bool})
"""Values that count as :data:`_SCALAR_BYTES` (what the general walk answers for them)."""
_NONE_YET: Final[dict[Any, Any]] = {}
"""What a trace's facts hold for attempts and content until they have some: read, never written."""
_MAX_LOSSES = 32
"""End times of lost spans kept per trace; past it, the earliest of the others stands for them all."""


@dataclass(eq=False, slots=True)
class RunState:
    """One run as the ledger follows it: the evaluated spans counted so far, and those still to come.

    Created when the first span of the run ends (or when its agent span ends, if that comes first);
    members and the agent span refer to it directly, so forgetting a trace's facts never loses it.
    """

    trace_id: int
    agent_id: int
    pending: int = 0
    """Members ended and held, not yet evaluated: the agent span waits for them."""
    tally: RunTally = field(default_factory=RunTally)
    lost: bool = False
    """A member was forwarded without evaluation, or the run's facts were forgotten: the summary is short."""
    agent: HeldSpan | None = None
    """The agent span, once it ended and while it waits for ``pending`` members."""
    finished: bool = False
    """The summary was taken (the agent span was forwarded): later members are no longer counted."""


@dataclass(eq=False, slots=True)
class Member:
    """A held span of unknown ancestry: when it ran, the run that claimed it, and what it counts for.

    Kept in its trace's facts after the span is forwarded (a few integers, not the span), until an
    agent span of the trace that is its parent, or whose time window holds it, claims it.
    """

    start_time: int
    end_time: int
    parent_id: int = 0
    """The span's parent span id (0: none): an agent span claims its own children whatever their times."""
    run: RunState | None = None
    done: bool = False
    """Evaluated (or forwarded without evaluation); ``tally`` holds what it counts for."""
    tally: RunTally | None = None


@dataclass(eq=False, slots=True)
class HeldSpan:
    """An ended span kept for evaluation."""

    span: ReadableSpan
    span_id: int
    trace_id: int
    parent_id: int | None
    classified: SpanClass
    """The recorder's classification, so the worker reads the span without classifying it again."""
    analyst: bool
    deadline: float
    """``time.monotonic()`` past which the span is released as incomplete (set when it starts to wait)."""
    awaits_parent: bool = False
    """Whether it waits for its parent to end (its tool calls come from sibling executions)."""
    incomplete: bool = False
    ancestor_menu: Mapping[str, object] | None = None
    """The menu attributes of its nearest ancestor with a menu, copied when it ended without one."""
    run_of: RunState | None = None
    """For an LLM-call or analyst span under a live agent span: the run it counts for."""
    unclaimed: Member | None = None
    """For one of unknown ancestry: its entry among its trace's unclaimed members."""
    agents: tuple[ReadableSpan | None, ReadableSpan | None] = (None, None)
    """The nearest and the outermost agent span above it, when known (the metrics read their names)."""
    run: RunState | None = None
    """For a run's agent span: the run it summarises."""
    known_facts: tuple[int, int, int] | None = None
    """What its trace's facts held when it became final (ready for the worker): their ``serial``, and
    how many LLM calls and tool executions. It is evaluated on those alone, so its verdict does not
    depend on what else was recorded by the time the worker took it out."""

    @property
    def llm_call(self) -> bool:
        """Whether the span is an LLM call (else an analyst span, or a run's agent span if ``run`` is set)."""
        return self.classified.role is ROLE_LLM_CALL


@dataclass(eq=False, slots=True)
class ExecutionFact:
    """A tool-execution span of a trace; the worker reads it once and keeps the reading here."""

    span: ReadableSpan
    parent_id: int | None
    classified: SpanClass
    reading: ToolExecution | None = None
    read: bool = False


@dataclass(frozen=True, slots=True)
class Losses:
    """When spans of a trace ended whose facts were not kept (a bound refused them, or they were forwarded
    unrecorded): what ran between two spans of the trace may be missing from its facts.

    ``ends`` are the end times (ns) of lost spans; ``since``, when set, says any span ending at or after it
    may be lost (a trace whose facts were forgotten and started again: ``0``, from its start).
    """

    ends: tuple[int, ...] = ()
    since: int | None = None

    def between(self, first: int, last: int) -> bool:
        """Whether a lost span may have ended between ``first`` and ``last`` (ns, both included)."""
        if self.since is not None and self.since <= last:
            return True
        return any(first <= end <= last for end in self.ends)


NO_LOSSES: Final = Losses()
ALL_LOST: Final = Losses(since=0)
"""Any span of the trace may be lost (its facts were forgotten and started again)."""


@dataclass(frozen=True)
class Release:
    """Held spans the worker evaluates together, with the facts of their trace: the LLM calls and tool
    executions known when the spans became final (see :attr:`HeldSpan.known_facts`), content and attempts
    as they are at take-out time."""

    spans: tuple[HeldSpan, ...]
    executions: tuple[ExecutionFact, ...] = ()
    """Executions under the spans themselves or under the parent they waited for (for the join)."""
    trace_executions: tuple[ExecutionFact, ...] = ()
    """Every execution of the trace that was kept (the figures basis, and what ran between two calls)."""
    sibling_calls: tuple[tuple[ReadableSpan, SpanClass], ...] = ()
    """Other LLM-call spans under the parent the spans waited for: they bound which executions are whose."""
    trace_calls: tuple[tuple[ReadableSpan, SpanClass], ...] = ()
    """Every LLM-call span of the trace kept so far (a second span of one call is found among them)."""
    content: Mapping[int, tuple[LogRecord, ...]] = field(default_factory=dict)
    """Content log records by span id."""
    attempts: Mapping[int, tuple[ReadableSpan, ...]] = field(default_factory=dict)
    """Analyst-attempt spans by the span id of their analyst span."""
    losses: Losses = NO_LOSSES
    """When spans of the trace ended whose facts are missing (a request/response pair across them is
    not decided)."""


class TraceFacts:
    """What one trace has shown so far, bounded by ``limit`` entries in all.

    ``bytes`` is the estimated size of what its facts keep alive, ``held`` the number of its spans the
    ledger holds (waiting or ready): a trace with held spans still needs its facts. What most traces
    never need (members of unknown ancestry, losses, content that names calls) starts empty without a
    container of its own: every kept trace's containers are walked by each full collection.
    """

    __slots__ = (
        "attempt_bytes",
        "attempts",
        "bytes",
        "calls",
        "content",
        "content_bytes",
        "content_names_calls",
        "ended",
        "executions",
        "finished",
        "forget_when_released",
        "held",
        "limit",
        "lost_content",
        "lost_ends",
        "lost_members",
        "lost_since",
        "serial",
        "size",
        "unclaimed",
    )

    def __init__(self, limit: int, serial: int = 0) -> None:
        self.limit = limit
        self.serial = serial
        """Tells these facts from those of the same trace forgotten before or started after."""
        self.size = 0
        self.bytes = 0
        self.held = 0
        self.finished = False
        """A local root span of the trace ended (a processor that sees spans start only)."""
        self.forget_when_released = False
        """Enough local roots ended after the trace's own: its facts go when its held spans are released."""
        # Analyst attempts and content log records are rare: until a trace has one, these four are the
        # one shared empty dict, only read (add_attempt() and add_content() give the trace its own).
        self.content_bytes: dict[int, int] = _NONE_YET
        self.attempt_bytes: dict[int, int] = _NONE_YET
        self.executions: list[ExecutionFact] = []
        self.calls: list[tuple[int | None, ReadableSpan, SpanClass]] = []
        self.attempts: dict[int, list[ReadableSpan]] = _NONE_YET
        self.content: dict[int, list[LogRecord]] = _NONE_YET
        self.content_names_calls: set[int] | None = None
        """Spans whose content log records name their tool calls (``None``: none)."""
        self.ended: set[int] = set()
        self.unclaimed: list[Member] | None = None
        """Members whose run was not known when they ended (no starts seen, or a broken ancestry):
        the next agent span of the trace whose time window holds them claims them (``None``: none)."""
        self.lost_members = False
        """Some member could not be kept in ``unclaimed``: a run claiming members here is short."""
        self.lost_ends: tuple[int, ...] = ()
        """End times (ns) of the trace's spans whose facts were not kept (see :class:`Losses`); a tuple
        of integers, which the collector does not track."""
        self.lost_since: int | None = None
        """Any span of the trace ending at or after this (ns) may be lost (see :class:`Losses`)."""
        self.lost_content: set[int] | None = None
        """Spans not yet ended some of whose content log records were not kept: lost at their end
        (``None``: none)."""

    def add_attempt(self, parent_id: int, span: ReadableSpan, nbytes: int) -> None:
        """Keep an analyst-attempt span of the analyst span ``parent_id`` (``nbytes`` admitted for it)."""
        if self.attempts is _NONE_YET:
            self.attempts, self.attempt_bytes = {}, {}
        self.attempts.setdefault(parent_id, []).append(span)
        self.attempt_bytes[parent_id] = self.attempt_bytes.get(parent_id, 0) + nbytes

    def add_content(self, span_id: int, record: LogRecord, nbytes: int) -> None:
        """Keep a content log record of span ``span_id`` (``nbytes`` admitted for it)."""
        if self.content is _NONE_YET:
            self.content, self.content_bytes = {}, {}
        self.content.setdefault(span_id, []).append(record)
        self.content_bytes[span_id] = self.content_bytes.get(span_id, 0) + nbytes

    def lose(self, end_time: int | None) -> None:
        """A span of the trace that ended at ``end_time`` (ns; ``None``: unknown) has no facts here."""
        if end_time is None:
            self.lost_since = 0
        elif len(self.lost_ends) < _MAX_LOSSES:
            self.lost_ends = (*self.lost_ends, end_time)
        elif self.lost_since is None or end_time < self.lost_since:
            self.lost_since = end_time

    def lose_content(self, span_id: int) -> None:
        """A content log record of span ``span_id`` was not kept: its reading may lack what it held."""
        for _, span, _ in self.calls:  # it ended already (a record after its end): lost at its end
            if span.context is not None and span.context.span_id == span_id:
                self.lose(span.end_time)
                return
        if self.lost_content is None:
            self.lost_content = {span_id}
        elif len(self.lost_content) < self.limit:
            self.lost_content.add(span_id)
        else:
            self.lost_since = 0

    def content_lost(self, span_id: int) -> bool:
        """Whether content log records of span ``span_id`` were not kept (it is no longer noted after)."""
        lost = self.lost_content
        if not lost or span_id not in lost:
            return False
        lost.discard(span_id)
        return True

    def note_content_names_calls(self, span_id: int) -> None:
        """A content log record of span ``span_id`` names its tool calls."""
        if self.content_names_calls is None:
            self.content_names_calls = {span_id}
        else:
            self.content_names_calls.add(span_id)

    def logged_calls(self, span_id: int) -> bool:
        """Whether a content log record of span ``span_id`` named its tool calls."""
        return self.content_names_calls is not None and span_id in self.content_names_calls

    def losses(self) -> Losses:
        """A snapshot of what the trace lost so far."""
        if not self.lost_ends and self.lost_since is None:
            return NO_LOSSES
        return Losses(self.lost_ends, self.lost_since)

    def room(self) -> bool:
        if self.size >= self.limit:
            return False
        self.size += 1
        return True


def attribute_mapping(span: ReadableSpan) -> Mapping[str, object]:
    """The span's attributes, read without the per-call cost of ``ReadableSpan.attributes`` (see
    :func:`~otel_shapecheck.otlp._sdk_fields.own_attributes`)."""
    return own_attributes(span)


def approximate_bytes(attributes: Mapping[str, object] | None, body: object = None) -> int:
    """What a span's or log record's attributes (and a record's body) keep alive, roughly, in bytes.

    Runs for every recorded GenAI span and content log record (the latter on the application's
    thread): the value types attributes hold (text, numbers, tuples) are told apart by exact type
    before the general (ABC-based) walk.
    """
    total = _value_bytes(body, 3) if body is not None else 0
    if not attributes:
        return total
    total += sum(map(len, attributes))  # the keys
    for value in attributes.values():
        if type(value) is str:
            total += len(value)
        elif type(value) in _SCALAR_TYPES:
            total += _SCALAR_BYTES
        elif type(value) is tuple and len(value) <= _SAMPLED_ITEMS:
            # _value_bytes(value, 3) in line for a short tuple (a list of finish reasons, say): every
            # item is measured, so the sample is the whole.
            for item in value:
                total += len(item) if type(item) is str else _value_bytes(item, 2)
        else:
            total += _value_bytes(value, 3)
    return total


def _value_bytes(value: object, depth: int) -> int:
    if type(value) is str or type(value) is bytes:
        return len(value)
    if type(value) is tuple and depth > 0:  # a Sequence: the branch below, without the ABC checks
        first = value[:_SAMPLED_ITEMS]
        sample = 0
        for item in first:
            sample += len(item) if type(item) is str else _value_bytes(item, depth - 1)
        return sample * len(value) // max(len(first), 1)
    if isinstance(value, str | bytes):
        return len(value)
    if depth <= 0:
        return _SCALAR_BYTES
    if isinstance(value, Mapping):
        items = list(value.items())[:_SAMPLED_ITEMS] if len(value) > _SAMPLED_ITEMS else value.items()
        sample = sum(_value_bytes(k, 0) + _value_bytes(v, depth - 1) for k, v in items)
        return sample * len(value) // max(len(items), 1)
    if isinstance(value, Sequence):
        head = value[:_SAMPLED_ITEMS]
        sample = sum(_value_bytes(item, depth - 1) for item in head)
        return sample * len(value) // max(len(head), 1)
    return _SCALAR_BYTES

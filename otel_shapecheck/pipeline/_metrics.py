"""The span processor's counters: readable in-process, and observable through the OpenTelemetry metrics API.

Counts are kept as plain integers behind one lock; the hot path adds to them without allocating. A
``MeterProvider`` given to the processor (or the global one) gets one observable counter per outcome,
read from the same integers at collection time.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from opentelemetry.metrics import CallbackOptions, MeterProvider, Observation, get_meter_provider

from otel_shapecheck._version import __version__

logger = logging.getLogger(__name__)

METER_NAME = "otel_shapecheck"
SPANS_METRIC = "shapecheck.processor.spans"
"""Observable counter of spans by ``shapecheck.outcome`` (the fields of :class:`ProcessorCounts`)."""
ERRORS_METRIC = "shapecheck.processor.errors"
"""Observable counter of errors survived inside the processor's hooks, by ``error.type``."""
OUTCOME_ATTRIBUTE = "shapecheck.outcome"
ERROR_TYPE_ATTRIBUTE = "error.type"


@dataclass(frozen=True)
class ProcessorCounts:
    """A snapshot of what the span processor did since it was built."""

    seen: int = 0
    """Spans handed to ``on_end``."""
    forwarded_untouched: int = 0
    """Spans passed to the downstream as they came: nothing to evaluate, or no room left to evaluate them."""
    held: int = 0
    """Spans kept for evaluation (waiting for facts or for the worker).

    A waiting span released into a full worker queue is forwarded as it is and moves from ``held`` to
    ``forwarded_untouched``: ``held + runs + forwarded_untouched == seen``, and after a flush
    ``evaluated + duplicates == held``.
    """
    runs: int = 0
    """Runs' agent spans kept until their run was summarised (forwarded with ``shapecheck.run.*``)."""
    runs_incomplete: int = 0
    """Runs summarised short: spans of theirs were still awaited, lost or evaluated as incomplete."""
    evaluated: int = 0
    """Held spans that went through the checks."""
    enriched: int = 0
    """Evaluated spans forwarded as an enriched copy (at least one verdict)."""
    flagged: int = 0
    """Enriched spans with at least one flag."""
    released_by_deadline: int = 0
    """Spans evaluated as incomplete because ``max_wait`` passed before their facts arrived."""
    released_by_cap: int = 0
    """Spans evaluated as incomplete because ``max_pending_spans`` spans were already waiting."""
    released_by_shutdown: int = 0
    """Spans evaluated as incomplete because the processor shut down while they waited."""
    forwarded_unevaluated: int = 0
    """Spans forwarded un-enriched without evaluation: the worker's queue was full, or it was gone."""
    forwarded_unrecorded: int = 0
    """Spans the checks may have cared about, forwarded as they came without being recorded: the
    recording queue was full (``max_queue_size``) and no recording under way finished within 0.5 s, or
    the recording thread did not finish at shutdown."""
    facts_dropped: int = 0
    """Tool executions, attempts or content records lost while a held span still needed them: not kept
    for a per-trace or byte bound, or forgotten with a trace whose spans were still held."""
    fact_bytes_exceeded: int = 0
    """Times a new fact found ``max_fact_bytes`` full (least recently active traces were forgotten)."""
    duplicates: int = 0
    """Held LLM-call spans that record a call another span of the trace already records (a second
    instrumentation); forwarded with ``shapecheck.duplicate_of``, not evaluated again."""
    ancestor_menus: int = 0
    """LLM-call spans with no menu of their own that took the menu of their nearest live ancestor."""
    started_untracked: int = 0
    """Started spans not kept as possible menu ancestors, because ``max_pending_spans`` already were."""
    errors: tuple[tuple[str, int], ...] = ()
    """Errors survived inside the processor, by kind (``check:<name>``, ``downstream``, ``events``, ...)."""
    ready_spans: int = 0
    """Not a count: held spans ready for the evaluation worker when the snapshot was taken (at most
    ``max_queue_size``)."""
    fact_bytes: int = 0
    """Not a count: the estimated bytes the kept facts held when the snapshot was taken (at most
    ``max_fact_bytes``)."""
    classified: tuple[tuple[str, int], ...] = ()
    """Recorded spans by how they were classified (``llm_call:genai``, ``llm_call:genai-content`` for a
    model call known by its GenAI content alone, ``llm_call:ai-sdk``, ``agent:ai-sdk``, ...), sorted by
    label; spans that are nothing to the checks are not counted."""

    def error_count(self, kind: str | None = None) -> int:
        """Errors of one kind, or of every kind."""
        return sum(count for name, count in self.errors if kind is None or name == kind)

    def classified_count(self, label: str) -> int:
        """Recorded spans classified as ``label``."""
        return dict(self.classified).get(label, 0)


_LEVELS = ("ready_spans", "fact_bytes")
"""Snapshot fields that are levels, not counts: the processor fills them in, no counter observes them."""
COUNT_FIELDS = tuple(
    name
    for name in ProcessorCounts.__dataclass_fields__
    if name not in ("errors", "classified") and name not in _LEVELS
)
"""The snapshot's counts: one ``shapecheck.outcome`` each on the observable counter."""


class ProcessorCounters:
    """Counters as plain integer attributes, with a once-per-kind error log.

    Increments are single ``+=`` statements on integer attributes, taken without a lock: CPython's
    interpreter only switches threads at calls and backward jumps, never inside such a statement, so
    the counts are exact there (on a free-threaded build they may undercount under contention). Error
    counts, which are rare, are kept under a lock.

    ``passed_at_once`` counts the spans ``on_end`` forwarded without looking further (no classifying
    key, nothing waiting for them): one increment instead of two on the path every ordinary span takes,
    added to both ``seen`` and ``forwarded_untouched`` in :meth:`snapshot`.
    """

    def __init__(self) -> None:
        self.reset()

    def error(self, kind: str, message: str, *args: object, exc_info: bool = True) -> None:
        """Count an error of ``kind``; log it only the first time this kind occurs."""
        with self._lock:
            first = kind not in self._errors
            self._errors[kind] = self._errors.get(kind, 0) + 1
        if first:
            logger.warning(message, *args, exc_info=exc_info)
            logger.warning("Further errors of kind %r are counted, not logged", kind)

    def count_class(self, label: str) -> None:
        """Count one recorded span of the class ``label`` (on the recording thread, its only writer)."""
        classified = self._classified
        classified[label] = classified.get(label, 0) + 1

    def snapshot(self) -> ProcessorCounts:
        """The counts as they are now."""
        with self._lock:
            errors = tuple(sorted(self._errors.items()))
        classified = tuple(sorted(self._classified.copy().items()))
        counts = {name: getattr(self, name) for name in COUNT_FIELDS}
        passed = self.passed_at_once
        counts["seen"] += passed
        counts["forwarded_untouched"] += passed
        return ProcessorCounts(**counts, errors=errors, classified=classified)

    def reset(self) -> None:
        """Start from zero with a fresh lock (a forked child counts only its own work)."""
        self._lock = threading.Lock()
        self._errors: dict[str, int] = {}
        self._classified: dict[str, int] = {}
        self.passed_at_once = 0
        self.seen = 0
        self.forwarded_untouched = 0
        self.held = 0
        self.runs = 0
        self.runs_incomplete = 0
        self.evaluated = 0
        self.enriched = 0
        self.flagged = 0
        self.released_by_deadline = 0
        self.released_by_cap = 0
        self.released_by_shutdown = 0
        self.forwarded_unevaluated = 0
        self.forwarded_unrecorded = 0
        self.facts_dropped = 0
        self.fact_bytes_exceeded = 0
        self.duplicates = 0
        self.ancestor_menus = 0
        self.started_untracked = 0

    def observe_with(self, meter_provider: MeterProvider | None) -> None:
        """Register observable counters reading these counts on ``meter_provider`` (or the global one)."""
        meter = (meter_provider or get_meter_provider()).get_meter(METER_NAME, __version__)
        meter.create_observable_counter(
            SPANS_METRIC,
            callbacks=[self._observe_spans],
            unit="{span}",
            description="Spans the shapecheck span processor handled, by outcome.",
        )
        meter.create_observable_counter(
            ERRORS_METRIC,
            callbacks=[self._observe_errors],
            unit="{error}",
            description="Errors the shapecheck span processor survived, by kind.",
        )

    def _observe_spans(self, options: CallbackOptions) -> Iterable[Observation]:
        snapshot = self.snapshot()
        return [Observation(getattr(snapshot, name), {OUTCOME_ATTRIBUTE: name}) for name in COUNT_FIELDS]

    def _observe_errors(self, options: CallbackOptions) -> Iterable[Observation]:
        return [Observation(count, {ERROR_TYPE_ATTRIBUTE: kind}) for kind, count in self.snapshot().errors]

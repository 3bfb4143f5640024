"""The conformance record of one analyst run, and the one function that builds it from attempt counts.

Both the retry wrapper (from the counts an analyst logs) and the conformance check (from attempt spans,
whoever wrote them) build their record here, so the two can never disagree on what a collapse is.

Definitions:

- An attempt *collapsed* when it emitted rows and the schema accepted none of them
  (``emitted > 0 and accepted == 0``): the model answered in a shape nobody can use.
- A run is ``collapsed`` when at least one of its attempts collapsed.
- A run is ``recovered`` when it collapsed and its final attempt had at least one row accepted. A run
  whose re-sample came back empty (nothing emitted) or collapsed again is not recovered.
- ``conformance_rate`` is ``accepted / emitted_final`` of the final attempt, 1 when the final attempt
  emitted nothing, and capped at 1 for emitters that report more accepted than emitted rows. It is the
  reference's rate, kept as is; the verdict's score of an unrecovered collapse is 0, not this rate.
- A count an attempt reported that cannot be read (``"abc"``, NaN, a negative) is *unreadable*: it adds
  nothing to ``emitted`` or ``accepted`` and is counted apart, so an attempt whose only counts were
  unreadable is never taken for a genuine empty.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_shapecheck._attributes import (
    CONFORMANCE_ACCEPTED,
    CONFORMANCE_ANALYST_ID,
    CONFORMANCE_ATTEMPTS,
    CONFORMANCE_COLLAPSED,
    CONFORMANCE_EMITTED_FINAL,
    CONFORMANCE_EMITTED_PEAK,
    CONFORMANCE_RATE,
    CONFORMANCE_RECOVERED,
    CONFORMANCE_UNREADABLE,
)


@dataclass(frozen=True)
class AttemptCounts:
    """What one attempt reported: rows emitted by the model and rows the schema accepted."""

    emitted: int
    accepted: int
    unreadable: int = 0
    """Counts the attempt reported that could not be read; they add to neither emitted nor accepted."""

    @property
    def collapsed(self) -> bool:
        """Rows were emitted and none was accepted."""
        return self.emitted > 0 and self.accepted == 0


@dataclass(frozen=True)
class AnalystConformanceRecord:
    """How one ``analyze()`` of an analyst went once its retries settled."""

    analyst_id: str
    """The analyst's ``id``."""
    attempts: int
    """Samples taken: 1 plus the re-samples."""
    emitted_peak: int
    """Most rows emitted by any attempt."""
    emitted_final: int
    """Rows emitted by the final attempt."""
    accepted: int
    """Rows the schema accepted in the final attempt."""
    collapsed: bool
    """At least one attempt emitted rows of which none was accepted."""
    recovered: bool
    """The run collapsed and its final attempt had rows accepted."""
    conformance_rate: float
    """``accepted / emitted_final`` (1 when the final attempt emitted nothing)."""


def build_conformance_record(analyst_id: str, attempts: Sequence[AttemptCounts]) -> AnalystConformanceRecord:
    """The record of a run from its attempts in order; a run without attempts counts as one empty attempt."""
    final = attempts[-1] if attempts else AttemptCounts(emitted=0, accepted=0)
    collapsed = any(attempt.collapsed for attempt in attempts)
    rate = 1.0 if final.emitted == 0 else min(1.0, final.accepted / final.emitted)
    return AnalystConformanceRecord(
        analyst_id=analyst_id,
        attempts=max(1, len(attempts)),
        emitted_peak=max((attempt.emitted for attempt in attempts), default=0),
        emitted_final=final.emitted,
        accepted=final.accepted,
        collapsed=collapsed,
        recovered=collapsed and final.accepted > 0,
        conformance_rate=rate,
    )


def unreadable_counts(attempts: Sequence[AttemptCounts]) -> int:
    """How many counts the attempts reported that could not be read."""
    return sum(attempt.unreadable for attempt in attempts)


def conformance_attributes(
    record: AnalystConformanceRecord, unreadable: int = 0
) -> dict[str, str | bool | int | float]:
    """The ``shapecheck.conformance.*`` attributes of the public contract for ``record``.

    ``shapecheck.conformance.unreadable`` is added only when some count could not be read.
    """
    attributes: dict[str, str | bool | int | float] = {
        CONFORMANCE_ANALYST_ID: record.analyst_id,
        CONFORMANCE_ATTEMPTS: record.attempts,
        CONFORMANCE_EMITTED_PEAK: record.emitted_peak,
        CONFORMANCE_EMITTED_FINAL: record.emitted_final,
        CONFORMANCE_ACCEPTED: record.accepted,
        CONFORMANCE_COLLAPSED: record.collapsed,
        CONFORMANCE_RECOVERED: record.recovered,
        CONFORMANCE_RATE: record.conformance_rate,
    }
    if unreadable:
        attributes[CONFORMANCE_UNREADABLE] = unreadable
    return attributes

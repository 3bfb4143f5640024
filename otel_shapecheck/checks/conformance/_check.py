"""The conformance check: did a structured-output analyst emit rows that its schema all rejected?

It reads analyst runs (an analyst span and the attempt spans under it, from the retry wrapper or any
emitter following the same attribute convention), rebuilds the conformance record with the same function
the wrapper uses, and returns a verdict:

- label ``conformant``: no attempt collapsed (score = conformance rate of the final attempt);
- label ``recovered``: an attempt collapsed and the final attempt had rows accepted; flag
  ``conformance.collapsed``, since a recovered collapse still cost a re-sample;
- label ``collapsed``: an attempt collapsed and the final one had no row accepted; flags
  ``conformance.collapsed`` and ``conformance.unrecovered``.

See :mod:`otel_shapecheck.checks.conformance._record` for the exact definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_shapecheck._attributes import (
    EVALUATION_CONFORMANCE,
    FLAG_CONFORMANCE_COLLAPSED,
    FLAG_CONFORMANCE_UNRECOVERED,
)
from otel_shapecheck._model import AnalystRun
from otel_shapecheck.checks._base import Subject, Verdict
from otel_shapecheck.checks.conformance._record import (
    AnalystConformanceRecord,
    AttemptCounts,
    build_conformance_record,
    conformance_attributes,
)

LABEL_CONFORMANT = "conformant"
LABEL_RECOVERED = "recovered"
LABEL_COLLAPSED = "collapsed"


class ConformanceCheck:
    """Turns each analyst run into a conformance verdict; subjects without an analyst run get ``None``."""

    name = EVALUATION_CONFORMANCE

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        """One verdict per subject that carries an analyst run with at least one attempt."""
        return [_verdict(subject.analyst_run) if subject.analyst_run else None for subject in subjects]


def run_record(run: AnalystRun) -> AnalystConformanceRecord | None:
    """The conformance record of an analyst run, or ``None`` when no attempt of it is known."""
    if not run.attempts:
        return None
    attempts = sorted(run.attempts, key=lambda attempt: attempt.attempt)
    counts = [AttemptCounts(max(0, attempt.emitted), max(0, attempt.accepted)) for attempt in attempts]
    return build_conformance_record(attempts[0].analyst_id, counts)


def _verdict(run: AnalystRun) -> Verdict | None:
    record = run_record(run)
    if record is None:
        return None
    flags: tuple[str, ...] = ()
    if record.collapsed:
        flags = (FLAG_CONFORMANCE_COLLAPSED,)
        if not record.recovered:
            flags += (FLAG_CONFORMANCE_UNRECOVERED,)
    return Verdict(
        evaluation=EVALUATION_CONFORMANCE,
        attributes=conformance_attributes(record),
        label=_label(record),
        explanation=_explanation(record),
        score=record.conformance_rate,
        flags=flags,
    )


def _label(record: AnalystConformanceRecord) -> str:
    if not record.collapsed:
        return LABEL_CONFORMANT
    return LABEL_RECOVERED if record.recovered else LABEL_COLLAPSED


def _explanation(record: AnalystConformanceRecord) -> str:
    tries = f"{record.attempts} attempt{'s' if record.attempts != 1 else ''}"
    outcome = f"{record.accepted} of {record.emitted_final} emitted rows accepted"
    if not record.collapsed:
        if record.emitted_final == 0:
            return f"Analyst {record.analyst_id!r} emitted no rows (nothing to find) in {tries}."
        return f"Analyst {record.analyst_id!r} had {outcome} in {tries}, with no shape collapse."
    if record.recovered:
        return f"Analyst {record.analyst_id!r} recovered from a shape collapse: {outcome} after {tries}."
    return (
        f"Analyst {record.analyst_id!r} collapsed: rows were emitted but none accepted, "
        f"{outcome} after {tries} (peak {record.emitted_peak} emitted)."
    )

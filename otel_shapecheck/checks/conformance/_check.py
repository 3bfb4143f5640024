"""The conformance check: did a structured-output analyst emit rows that its schema all rejected?

It reads analyst runs (an analyst span and the attempt spans under it, from the retry wrapper or any
emitter following the same attribute convention), rebuilds the conformance record with the same function
the wrapper uses, and returns a verdict:

- label ``conformant``: no attempt collapsed (score = conformance rate of the final attempt);
- label ``recovered``: an attempt collapsed and the final attempt had rows accepted; flag
  ``conformance.collapsed``, since a recovered collapse still cost a re-sample;
- label ``collapsed``: an attempt collapsed and the final one had no row accepted; flags
  ``conformance.collapsed`` and ``conformance.unrecovered``. The score is 0: the record keeps the
  reference's rate (1 when the final re-sample emitted nothing), but a run that never recovered failed;
- label ``unreadable``: no collapse is known, the final attempt reported no readable emitted rows and
  some of its counts could not be read (``"abc"``, NaN); flag ``conformance.unreadable`` and no score,
  since the run cannot be told from a genuine empty or from a collapse.

See :mod:`otel_shapecheck.checks.conformance._record` for the exact definitions.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_shapecheck._attributes import (
    EVALUATION_CONFORMANCE,
    FLAG_CONFORMANCE_COLLAPSED,
    FLAG_CONFORMANCE_UNREADABLE,
    FLAG_CONFORMANCE_UNRECOVERED,
)
from otel_shapecheck._model import AnalystRun
from otel_shapecheck.checks._base import Subject, Verdict
from otel_shapecheck.checks.conformance._record import (
    AnalystConformanceRecord,
    AttemptCounts,
    build_conformance_record,
    conformance_attributes,
    unreadable_counts,
)

LABEL_CONFORMANT = "conformant"
LABEL_RECOVERED = "recovered"
LABEL_COLLAPSED = "collapsed"
LABEL_UNREADABLE = "unreadable"


class ConformanceCheck:
    """Turns each analyst run into a conformance verdict; subjects without an analyst run get ``None``."""

    name = EVALUATION_CONFORMANCE

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        """One verdict per subject that carries an analyst run with at least one attempt."""
        return [_verdict(subject.analyst_run) if subject.analyst_run else None for subject in subjects]


def run_record(run: AnalystRun) -> AnalystConformanceRecord | None:
    """The conformance record of an analyst run, or ``None`` when no attempt of it is known."""
    counts = _attempt_counts(run)
    return build_conformance_record(run.attempts[0].analyst_id, counts) if counts else None


def _attempt_counts(run: AnalystRun) -> list[AttemptCounts]:
    attempts = sorted(run.attempts, key=lambda attempt: attempt.attempt)
    return [
        AttemptCounts(max(0, attempt.emitted), max(0, attempt.accepted), max(0, attempt.unreadable))
        for attempt in attempts
    ]


def _verdict(run: AnalystRun) -> Verdict | None:
    counts = _attempt_counts(run)
    if not counts:
        return None
    record = build_conformance_record(run.attempts[0].analyst_id, counts)
    unreadable = unreadable_counts(counts)
    label = _label(record, counts[-1])
    flags: tuple[str, ...] = ()
    if record.collapsed:
        flags = (FLAG_CONFORMANCE_COLLAPSED,)
        if not record.recovered:
            flags += (FLAG_CONFORMANCE_UNRECOVERED,)
    elif label == LABEL_UNREADABLE:
        flags = (FLAG_CONFORMANCE_UNREADABLE,)
    return Verdict(
        evaluation=EVALUATION_CONFORMANCE,
        attributes=conformance_attributes(record, unreadable),
        label=label,
        explanation=_explanation(record, unreadable, label),
        score=_score(record, label),
        flags=flags,
    )


def _label(record: AnalystConformanceRecord, final: AttemptCounts) -> str:
    if record.collapsed:
        return LABEL_RECOVERED if record.recovered else LABEL_COLLAPSED
    if final.unreadable and final.emitted == 0 and final.accepted == 0:
        return LABEL_UNREADABLE
    return LABEL_CONFORMANT


def _score(record: AnalystConformanceRecord, label: str) -> float | None:
    """The rate, except that an unrecovered collapse scores 0 and an unreadable run has no score."""
    if label == LABEL_COLLAPSED:
        return 0.0
    return None if label == LABEL_UNREADABLE else record.conformance_rate


def _explanation(record: AnalystConformanceRecord, unreadable: int, label: str) -> str:
    sentence = _outcome_sentence(record, label)
    if unreadable:
        sentence = sentence.removesuffix(".")
        sentence += f"; {unreadable} reported row count{'s' if unreadable != 1 else ''} could not be read."
    return sentence


def _outcome_sentence(record: AnalystConformanceRecord, label: str) -> str:
    tries = f"{record.attempts} attempt{'s' if record.attempts != 1 else ''}"
    outcome = f"{record.accepted} of {record.emitted_final} emitted rows accepted"
    if label == LABEL_UNREADABLE:
        return (
            f"Analyst {record.analyst_id!r} returned no readable row count in {tries}, so its empty "
            "result cannot be told from a shape collapse."
        )
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

"""The conformance check over plain analyst-run records: labels, flags, score, attributes."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from otel_shapecheck import AnalystConformanceRecord, Check, ConformanceCheck, Subject
from otel_shapecheck._attributes import (
    CONFORMANCE_ACCEPTED,
    CONFORMANCE_ANALYST_ID,
    CONFORMANCE_ATTEMPTS,
    CONFORMANCE_COLLAPSED,
    CONFORMANCE_EMITTED_FINAL,
    CONFORMANCE_EMITTED_PEAK,
    CONFORMANCE_RATE,
    CONFORMANCE_RECOVERED,
    EVALUATION_CONFORMANCE,
    EVALUATION_EXPLANATION,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    FLAG_CONFORMANCE_COLLAPSED,
    FLAG_CONFORMANCE_UNRECOVERED,
    FLAGGED,
    FLAGS,
)
from otel_shapecheck._model import AnalystAttempt, AnalystRun, LLMCall
from otel_shapecheck.checks._base import Verdict, enrichment_attributes
from otel_shapecheck.checks.conformance._record import conformance_attributes

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
RUN_SPAN_ID = "00f067aa0ba902b7"


def _run(*counts: tuple[int, int], analyst_id: str = "triage", order: list[int] | None = None) -> AnalystRun:
    """An analyst run whose attempts emitted/accepted ``counts`` (optionally listed out of order)."""
    attempts = [
        AnalystAttempt(
            span_id=f"{index + 1:016x}",
            trace_id=TRACE_ID,
            analyst_id=analyst_id,
            attempt=index + 1,
            emitted=emitted,
            accepted=accepted,
            parent_id=RUN_SPAN_ID,
        )
        for index, (emitted, accepted) in enumerate(counts)
    ]
    if order is not None:
        attempts = [attempts[i] for i in order]
    return AnalystRun(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, attempts=tuple(attempts))


def _verdict(run: AnalystRun) -> Verdict:
    (verdict,) = ConformanceCheck().evaluate(
        [Subject(span_id=run.span_id, trace_id=run.trace_id, analyst_run=run)]
    )
    assert verdict is not None
    return verdict


class TestConformanceCheck:
    """Verdicts for the three outcomes, and subjects the check leaves alone."""

    def test_is_a_check(self) -> None:
        """Constructible without arguments and satisfies the Check protocol."""
        check = ConformanceCheck()
        assert isinstance(check, Check)
        assert check.name == EVALUATION_CONFORMANCE

    def test_conformant_run(self) -> None:
        """No collapse: label conformant, no flags, score = accepted / emitted."""
        verdict = _verdict(_run((4, 3)))
        assert verdict.evaluation == EVALUATION_CONFORMANCE
        assert verdict.label == "conformant"
        assert verdict.flags == ()
        assert verdict.score == 0.75
        assert dict(verdict.attributes) == {
            CONFORMANCE_ANALYST_ID: "triage",
            CONFORMANCE_ATTEMPTS: 1,
            CONFORMANCE_EMITTED_PEAK: 4,
            CONFORMANCE_EMITTED_FINAL: 4,
            CONFORMANCE_ACCEPTED: 3,
            CONFORMANCE_COLLAPSED: False,
            CONFORMANCE_RECOVERED: False,
            CONFORMANCE_RATE: 0.75,
        }
        assert (
            verdict.explanation
            == "Analyst 'triage' had 3 of 4 emitted rows accepted in 1 attempt, with no shape collapse."
        )

    def test_genuine_empty_is_conformant_with_rate_one(self) -> None:
        """Nothing emitted: nothing to find, rate 1, not flagged."""
        verdict = _verdict(_run((0, 0)))
        assert (verdict.label, verdict.score, verdict.flags) == ("conformant", 1.0, ())
        assert "nothing to find" in verdict.explanation

    def test_recovered_run(self) -> None:
        """Collapse then accepted rows: label recovered, flagged collapsed only."""
        verdict = _verdict(_run((3, 0), (3, 3)))
        assert verdict.label == "recovered"
        assert verdict.flags == (FLAG_CONFORMANCE_COLLAPSED,)
        assert verdict.score == 1.0
        assert verdict.attributes[CONFORMANCE_RECOVERED] is True
        assert verdict.attributes[CONFORMANCE_ATTEMPTS] == 2

    def test_unrecovered_run(self) -> None:
        """Collapse on every attempt: label collapsed, flagged collapsed and unrecovered, score 0."""
        verdict = _verdict(_run((5, 0), (2, 0), (4, 0), (1, 0)))
        assert verdict.label == "collapsed"
        assert verdict.flags == (FLAG_CONFORMANCE_COLLAPSED, FLAG_CONFORMANCE_UNRECOVERED)
        assert verdict.score == 0.0
        assert verdict.attributes[CONFORMANCE_EMITTED_PEAK] == 5
        assert verdict.attributes[CONFORMANCE_EMITTED_FINAL] == 1
        assert verdict.explanation.startswith("Analyst 'triage' collapsed")

    def test_attempts_are_read_in_attempt_order(self) -> None:
        """Attempt spans may end up listed in any order; the attempt number decides which is final."""
        verdict = _verdict(_run((3, 0), (3, 2), order=[1, 0]))
        assert verdict.label == "recovered"
        assert verdict.attributes[CONFORMANCE_ACCEPTED] == 2

    def test_accepted_above_emitted_from_a_foreign_emitter_caps_the_rate(self) -> None:
        """A rate above 1 cannot come out of inconsistent counts."""
        assert _verdict(_run((2, 5))).score == 1.0

    def test_other_subjects_get_none(self) -> None:
        """LLM-call subjects and runs without attempts are not this check's business."""
        llm = Subject(
            span_id="a" * 16, trace_id=TRACE_ID, llm_call=LLMCall(span_id="a" * 16, trace_id=TRACE_ID)
        )
        empty_run = AnalystRun(span_id=RUN_SPAN_ID, trace_id=TRACE_ID)
        bare = Subject(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, analyst_run=empty_run)
        collapsed = Subject(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, analyst_run=_run((1, 0)))
        verdicts = ConformanceCheck().evaluate([llm, bare, collapsed])
        assert verdicts[:2] == [None, None]
        assert verdicts[2] is not None and verdicts[2].label == "collapsed"

    def test_event_and_enrichment_attributes(self) -> None:
        """The verdict becomes a gen_ai.evaluation.result event and flags the span."""
        verdict = _verdict(_run((3, 0), (3, 0)))
        event = verdict.event_attributes()
        assert event[EVALUATION_NAME] == EVALUATION_CONFORMANCE
        assert event[EVALUATION_SCORE_LABEL] == "collapsed"
        assert event[EVALUATION_SCORE_VALUE] == 0.0
        assert isinstance(event[EVALUATION_EXPLANATION], str)
        enriched = enrichment_attributes([verdict])
        assert enriched[FLAGGED] is True
        assert tuple(enriched[FLAGS]) == (FLAG_CONFORMANCE_COLLAPSED, FLAG_CONFORMANCE_UNRECOVERED)  # type: ignore[arg-type]

    @given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=8))
    def test_record_invariants(self, counts: list[tuple[int, int]]) -> None:
        """For any attempts: rate in [0, 1], recovered implies collapsed, label agrees with flags."""
        verdict = _verdict(_run(*counts))
        attributes = verdict.attributes
        assert verdict.score is not None and 0.0 <= verdict.score <= 1.0 and not math.isnan(verdict.score)
        assert attributes[CONFORMANCE_ATTEMPTS] == len(counts)
        assert attributes[CONFORMANCE_EMITTED_PEAK] == max(emitted for emitted, _ in counts)
        collapsed = any(emitted > 0 and accepted == 0 for emitted, accepted in counts)
        assert attributes[CONFORMANCE_COLLAPSED] is collapsed
        assert attributes[CONFORMANCE_RECOVERED] is (collapsed and counts[-1][1] > 0)
        assert verdict.flagged is collapsed
        assert (FLAG_CONFORMANCE_UNRECOVERED in verdict.flags) is (verdict.label == "collapsed")


class TestConformanceAttributes:
    def test_each_field_of_the_record_has_its_own_attribute(self) -> None:
        """The public names of a record's fields, pinned with values that all differ."""
        record = AnalystConformanceRecord(
            analyst_id="triage",
            attempts=3,
            emitted_peak=7,
            emitted_final=5,
            accepted=2,
            collapsed=True,
            recovered=True,
            conformance_rate=0.4,
        )
        assert conformance_attributes(record) == {
            CONFORMANCE_ANALYST_ID: "triage",
            CONFORMANCE_ATTEMPTS: 3,
            CONFORMANCE_EMITTED_PEAK: 7,
            CONFORMANCE_EMITTED_FINAL: 5,
            CONFORMANCE_ACCEPTED: 2,
            CONFORMANCE_COLLAPSED: True,
            CONFORMANCE_RECOVERED: True,
            CONFORMANCE_RATE: 0.4,
        }

"""FiguresCheck over plain subjects: when it applies, and the verdict it gives."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from otel_shapecheck import Check, FiguresCheck, Subject
from otel_shapecheck._attributes import (
    EVALUATION_FIGURES,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    FIGURES_CARRIED,
    FIGURES_CHECKED,
    FIGURES_COMPUTED,
    FIGURES_DERIVATIONS,
    FIGURES_INFERRED,
    FIGURES_SKIPPED,
    FIGURES_TRUNCATED,
    FIGURES_UNSUPPORTED,
    FIGURES_UNSUPPORTED_COUNT,
    FLAG_FIGURES_UNSUPPORTED,
    RESPONSE_ID,
)
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolResult
from otel_shapecheck.checks._base import Verdict, enrichment_attributes
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.environment_variables import OTEL_SHAPECHECK_FIGURES_MIN_DIGITS

from .fixtures import capacity_result

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"


def answer_subject(
    answer: str | None,
    *,
    tool_results: tuple[ToolResult, ...] = (),
    trace_tool_results: tuple[ToolResult, ...] = (),
    tool_calls: tuple[ToolCall, ...] | None = (),
    offered_tools: tuple[OfferedTool, ...] | None = None,
    user_texts: tuple[str, ...] = ("How full is CLUSTER-A01?",),
    span_id: str = "b7ad6b7169203331",
) -> Subject:
    call = LLMCall(
        span_id=span_id,
        trace_id=TRACE_ID,
        answer_text=answer,
        tool_results=tool_results,
        tool_calls=tool_calls,
        offered_tools=offered_tools,
        user_texts=user_texts,
        response_id="chatcmpl-42",
    )
    return Subject(span_id=span_id, trace_id=TRACE_ID, llm_call=call, trace_tool_results=trace_tool_results)


def _verdict(subject: Subject, check: FiguresCheck | None = None) -> Verdict:
    """The one verdict ``check`` (default settings when omitted) gives ``subject``; there must be one."""
    (verdict,) = (check or FiguresCheck()).evaluate([subject])
    assert verdict is not None
    return verdict


class TestApplies:
    def test_is_a_check(self) -> None:
        """FiguresCheck is constructible without arguments and satisfies the Check protocol."""
        check = FiguresCheck()
        assert isinstance(check, Check)
        assert check.name == EVALUATION_FIGURES
        assert check.min_digits == 4

    def test_one_entry_per_subject_in_order(self) -> None:
        """evaluate returns one entry per subject, None where the check does not apply.

        An answer that could not be read where tool results exist is a skipped verdict, not silence.
        """
        subjects = [
            answer_subject("CLUSTER-A01 is 59.2% used.", tool_results=(capacity_result(),)),
            Subject(span_id="00f067aa0ba902b7", trace_id=TRACE_ID),
            answer_subject(None, tool_results=(capacity_result(),)),
            answer_subject(
                "Checking.", tool_results=(capacity_result(),), tool_calls=(ToolCall("get_capacity", "c2"),)
            ),
        ]
        verdicts = FiguresCheck().evaluate(subjects)
        assert len(verdicts) == 4
        assert verdicts[0] is not None
        assert verdicts[1] is None and verdicts[3] is None
        assert verdicts[2] is not None and verdicts[2].attributes == {
            "shapecheck.figures.skipped": "no-content"
        }
        assert verdicts[2].label == "skipped" and not verdicts[2].flagged

    def test_plain_chat_without_tools_gets_no_verdict(self) -> None:
        """An answer that saw no tool result and was offered no tool is not an agent's answer."""
        assert FiguresCheck().evaluate([answer_subject("Revenue was 12,500 USD.")]) == [None]

    def test_offered_tools_but_none_called_is_checked(self) -> None:
        """An answer given without calling any offered tool is checked (every figure is unsupported)."""
        subject = answer_subject("Revenue was 12,500.", offered_tools=(OfferedTool("get_revenue"),))
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_UNSUPPORTED] == ("12,500",)

    def test_trace_tool_results_are_part_of_the_basis(self) -> None:
        """Results of earlier tool executions in the trace support the answer too."""
        subject = answer_subject("1,526.3 TB are usable.", trace_tool_results=(capacity_result(),))
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_COMPUTED] == 1
        assert verdict.flags == ()

    def test_a_fraction_written_as_a_percent_is_a_conversion_under_extended_only(self) -> None:
        """A tool's share of 0.4567 written as 45.67% (or 46%) is as-percent; the closed set keeps the
        reference's derivations and flags it; 45.6% is not what it rounds to."""
        share = (ToolResult(json.dumps({"region": "EMEA", "share": 0.4567})),)
        verdict = _verdict(answer_subject("EMEA's share was 45.67%, about 46%.", trace_tool_results=share))
        assert verdict.attributes[FIGURES_DERIVATIONS] == (
            "45.67 = as-percent: 100 × share",
            "46 = as-percent: 100 × share",
        )
        assert verdict.flags == ()
        closed = FiguresCheck(derivations="closed")
        assert _verdict(answer_subject("It was 45.67%.", trace_tool_results=share), closed).flags
        assert _verdict(answer_subject("It was 45.6%.", trace_tool_results=share)).attributes[
            FIGURES_UNSUPPORTED
        ] == ("45.6%",)

    def test_a_scaled_amount_is_checked_against_the_raw_one(self) -> None:
        """$1.23M of a carried 1234567 is unit-scale; an invented $9.87M, silent before, is flagged."""
        revenue = (ToolResult(json.dumps({"revenue": 1234567})),)
        verdict = _verdict(answer_subject("Revenue was $1.23M, or 1.2 million.", trace_tool_results=revenue))
        assert verdict.attributes[FIGURES_COMPUTED] == 2 and verdict.flags == ()
        invented = _verdict(answer_subject("Revenue was $9.87M.", trace_tool_results=revenue))
        assert invented.attributes[FIGURES_UNSUPPORTED] == ("9.87M",)

    def test_a_negative_is_read_with_its_typographic_minus_and_as_a_magnitude_under_words(self) -> None:
        """−5.2% (U+2212) is −5.2, carried; "fell 5.2%" and an accounting (1,234) in a sentence naming a
        fall state a carried negative's magnitude (extended only); 5.3% is neither, nor 5.2% unworded."""
        changes = (ToolResult(json.dumps({"change_pct": -5.2, "delta": -1234})),)
        signed = _verdict(
            answer_subject("It fell \u22125.2%, a delta of \u22121,234.", trace_tool_results=changes)
        )
        assert (signed.attributes[FIGURES_CARRIED], signed.flags) == (2, ())
        unsigned = _verdict(answer_subject("It fell 5.2%, a delta of (1,234).", trace_tool_results=changes))
        assert unsigned.attributes[FIGURES_DERIVATIONS] == (
            "5.2 = magnitude: |change_pct|",
            "1234 = magnitude: |delta|",
        )
        closed = FiguresCheck(derivations="closed")
        assert _verdict(answer_subject("It fell 5.2%.", trace_tool_results=changes), closed).flags
        wrong = _verdict(answer_subject("It fell 5.3%.", trace_tool_results=changes))
        assert wrong.attributes[FIGURES_UNSUPPORTED] == ("5.3%",)
        unworded = _verdict(answer_subject("It was 5.2%.", trace_tool_results=changes))  # no fall named
        assert unworded.attributes[FIGURES_UNSUPPORTED] == ("5.2%",)

    def test_result_seen_twice_is_read_once(self) -> None:
        """A result captured both as an input message and as a tool execution is read once."""
        fields = {f"f{i}_tb": float(i + 1) for i in range(64)}
        same = ToolResult(json.dumps([{**fields, "group": str(r % 3)} for r in range(6)]))
        # Read twice, this result's derived values would pass the 50 000 bound.
        assert check_figures("It holds 12.5 TB.", [same, same]).truncated
        subject = answer_subject("It holds 12.5 TB.", tool_results=(same,), trace_tool_results=(same,))
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_TRUNCATED] is False


class TestVerdict:
    def test_grounded_answer(self) -> None:
        """Carried and computed figures give a grounded verdict with score 1 and the derivations listed."""
        answer = "CLUSTER-A01 is 59.2% used: 1,526.3 TB usable; f710_pool is at 61.1%."
        verdict = _verdict(answer_subject(answer, tool_results=(capacity_result(),)))
        assert dict(verdict.attributes) == {
            FIGURES_CHECKED: 3,
            FIGURES_CARRIED: 1,
            FIGURES_COMPUTED: 2,
            FIGURES_INFERRED: 0,
            FIGURES_UNSUPPORTED: (),
            FIGURES_UNSUPPORTED_COUNT: 0,
            FIGURES_DERIVATIONS: (
                "59.2 = column-ratio: 100 × rows[].used_tb ÷ rows[].total_tb",
                "1526.3 = column-sum: sum of rows[].usable_tb",
            ),
            FIGURES_TRUNCATED: False,
        }
        assert (verdict.label, verdict.score, verdict.flags) == ("grounded", 1.0, ())
        assert verdict.explanation == (
            "3 of 3 figures in the answer are carried by a tool result (1) or derived from one (2)."
        )

    def test_unsupported_answer(self) -> None:
        """Invented figures are flagged as written, with the share supported as the score."""
        answer = "CLUSTER-A01 is 53.2% used, with 6.3 TB free, 1,526.3 TB usable."
        verdict = _verdict(answer_subject(answer, tool_results=(capacity_result(),)))
        assert verdict.attributes[FIGURES_UNSUPPORTED] == ("53.2%", "6.3 TB")
        assert verdict.attributes[FIGURES_UNSUPPORTED_COUNT] == 2
        assert verdict.content_keys == {FIGURES_UNSUPPORTED, FIGURES_DERIVATIONS}
        assert verdict.flags == (FLAG_FIGURES_UNSUPPORTED,)
        assert verdict.label == "unsupported"
        assert verdict.score == pytest.approx(1 / 3)
        assert verdict.explanation.endswith("; 2 are neither.")
        assert "53.2" not in verdict.explanation

    def test_a_figure_in_no_kept_result_is_not_judged_when_results_of_the_trace_were_lost(self) -> None:
        """Spans of the trace let go by a bound may have held the figure: skipped, not flagged."""
        answer = "CLUSTER-A01 is 53.2% used, with 1,526.3 TB usable."
        subject = replace(answer_subject(answer, trace_tool_results=(capacity_result(),)), results_lost=True)
        verdict = _verdict(subject)
        assert dict(verdict.attributes) == {FIGURES_SKIPPED: "results-lost"}
        assert (verdict.label, verdict.flags, verdict.flagged) == ("skipped", (), False)

    def test_an_answer_whose_figures_are_all_supported_stays_grounded_when_results_were_lost(self) -> None:
        """More results could only support more: a grounded answer is grounded whatever was lost."""
        answer = "CLUSTER-A01 has 1,526.3 TB usable."
        subject = replace(answer_subject(answer, trace_tool_results=(capacity_result(),)), results_lost=True)
        verdict = _verdict(subject)
        assert (verdict.label, verdict.attributes[FIGURES_COMPUTED]) == ("grounded", 1)

    def test_event_and_enrichment_attributes(self) -> None:
        """The verdict becomes the evaluation event and the span's flag attributes of the contract."""
        answer = "CLUSTER-A01 is 53.2% used."
        verdict = _verdict(answer_subject(answer, tool_results=(capacity_result(),)))
        event = verdict.event_attributes()
        assert event[EVALUATION_NAME] == EVALUATION_FIGURES
        assert event[EVALUATION_SCORE_LABEL] == "unsupported"
        assert event[EVALUATION_SCORE_VALUE] == 0.0
        assert event[RESPONSE_ID] == "chatcmpl-42"
        enriched = enrichment_attributes([verdict])
        assert enriched["shapecheck.flagged"] is True
        assert enriched["shapecheck.flags"] == (FLAG_FIGURES_UNSUPPORTED,)

    def test_answer_without_figures(self) -> None:
        """An answer with no candidate figures gets a grounded verdict with checked = 0 and score 1."""
        subject = answer_subject("The cluster is healthy.", tool_results=(capacity_result(),))
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_CHECKED] == 0
        assert (verdict.label, verdict.score, verdict.flagged) == ("grounded", 1.0, False)
        assert verdict.explanation == "The answer states no figures to check."

    def test_user_numbers_are_exempt(self) -> None:
        """A figure the user supplied counts as carried."""
        subject = answer_subject(
            "At a 2,500 IOPS budget the pool fits.",
            tool_results=(capacity_result(),),
            user_texts=("Our budget is 2500 IOPS.",),
        )
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_CARRIED] == 1
        assert verdict.flags == ()

    def test_current_user_message_is_exempt_without_history(self) -> None:
        """When only the current user message was captured, its numbers are exempt too."""
        call = LLMCall(
            span_id="b7ad6b7169203331",
            trace_id=TRACE_ID,
            answer_text="Budget: 7,500 IOPS.",
            tool_results=(capacity_result(),),
            user_text="Plan for 7500 IOPS.",
        )
        subject = Subject(span_id=call.span_id, trace_id=TRACE_ID, llm_call=call)
        verdict = _verdict(subject)
        assert verdict.attributes[FIGURES_CARRIED] == 1

    def test_truncated_basis_is_reported(self) -> None:
        """A bound that cut the basis shows on the verdict and in its explanation."""
        huge = ToolResult(list(range(60_000)))
        verdict = _verdict(answer_subject("It holds 12.5 TB.", tool_results=(huge,)))
        assert verdict.attributes[FIGURES_TRUNCATED] is True
        assert "could not be read in full (too large" in verdict.explanation

    def test_a_result_cut_short_when_recorded_is_reported_as_a_cut_basis(self) -> None:
        """A JSON result an attribute length limit cut (its brackets still open) is read as text up to
        the cut, and the verdict says the basis is cut: the figure may be past it."""
        rows = json.dumps({"rows": [{"pool": f"p{i}", "usable_tb": 1000 + 111 * i} for i in range(10)]})
        cut = ToolResult(rows[: len(rows) // 2])
        verdict = _verdict(answer_subject("Pool p9 has 1999 TB usable.", tool_results=(cut,)))
        assert verdict.attributes[FIGURES_UNSUPPORTED] == ("1999 TB",)
        assert verdict.attributes[FIGURES_TRUNCATED] is True
        assert "cut short when recorded" in verdict.explanation
        whole = _verdict(answer_subject("Pool p1 has 1111 TB usable.", tool_results=(ToolResult(rows),)))
        assert (whole.label, whole.attributes[FIGURES_TRUNCATED]) == ("grounded", False)

    def test_malformed_json_that_is_not_cut_is_read_as_text_without_a_cut(self) -> None:
        """JSON whose brackets all close is malformed, not cut: nothing says "cut"."""
        malformed = ToolResult('{"usable_tb": 1111,, "total_tb": 2000}')
        verdict = _verdict(answer_subject("It has 1111 TB, of 2000 TB.", tool_results=(malformed,)))
        assert verdict.attributes[FIGURES_TRUNCATED] is False


class TestConfiguration:
    def test_min_digits_argument(self) -> None:
        """min_digits=2 makes two-digit bare numbers candidates."""
        subject = answer_subject("There are 17 pools.", tool_results=(capacity_result(),))
        verdict = _verdict(subject, FiguresCheck(min_digits=2))
        assert verdict.attributes[FIGURES_UNSUPPORTED] == ("17",)

    def test_min_digits_from_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OTEL_SHAPECHECK_FIGURES_MIN_DIGITS is used when no argument is given; the argument wins."""
        monkeypatch.setenv(OTEL_SHAPECHECK_FIGURES_MIN_DIGITS, "3")
        assert FiguresCheck().min_digits == 3
        assert FiguresCheck(min_digits=5).min_digits == 5

    @pytest.mark.parametrize("value", [0, -1, True])
    def test_bad_argument(self, value: int) -> None:
        """A bad argument is a ValueError naming the setting."""
        with pytest.raises(ValueError, match="min_digits"):
            FiguresCheck(min_digits=value)

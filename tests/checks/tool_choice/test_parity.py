"""Parity vectors M1–M8 of the ported reference, and its exact text constructions.

Its lint vectors L1–L3 are in ``tests/catalog/test_parity.py``, its hash vectors H1 in
``tests/embedding/test_parity.py``.
"""

from __future__ import annotations

import pytest
from embedding.embedders import CharCountEmbedder, CountingEmbedder, PlantedEmbedder

from otel_shapecheck import Subject, ToolChoiceCheck
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolResult
from otel_shapecheck.checks.tool_choice._calls import ToolChoiceSummary
from otel_shapecheck.checks.tool_choice._margin import MarginResult, choice_context, score_margin
from otel_shapecheck.embedding._tool_index import confusability_text

CONTEXT = "query the FC name server database registrations from influx time series"
INFLUX = ("influx_get_fcns_database", "Get FC name server database registrations from influx time series.")
JUNK = ("send_email", "!!! ### 0101010101 zzzzzz qqqq 9999 ****")
TWIN_LIVE = ("get_fcns_database", "Get FC name server database registrations from the fabric live.")
TWIN_HISTORY = ("influx_get_fcns_database", "Get FC name server database registrations from influx history.")


def _mock_margin(candidates: list[tuple[str, str]], chosen: list[str]) -> MarginResult:
    vectors = CharCountEmbedder().embed([CONTEXT] + [text for _, text in candidates])
    return score_margin(vectors[0], [name for name, _ in candidates], vectors[1:], chosen)


class TestScoreMarginWithTheMock:
    def test_m1_clear_choice(self) -> None:
        """M1: the matching tool tops the junk one by 0.690619 and raises no flag."""
        result = _mock_margin([INFLUX, JUNK], ["influx_get_fcns_database"])
        assert result.top == "influx_get_fcns_database"
        assert [s.score for s in result.scores] == pytest.approx([0.990085, 0.299465], abs=1e-6)
        assert result.margin == pytest.approx(0.690619, abs=1e-6)
        assert not result.narrow and not result.proxy_disagreement

    def test_m2_twin_catalog_is_narrow(self) -> None:
        """M2: choosing the live twin leaves a margin of −0.000791: narrow, and the other twin tops it."""
        result = _mock_margin([TWIN_LIVE, TWIN_HISTORY, JUNK], ["get_fcns_database"])
        assert result.margin == pytest.approx(-0.000791, abs=1e-6)
        assert result.narrow and result.proxy_disagreement
        assert [(s.name, round(s.score, 6)) for s in result.scores[:2]] == [
            ("influx_get_fcns_database", 0.974536),
            ("get_fcns_database", 0.973745),
        ]

    def test_m3_junk_chosen(self) -> None:
        """M3: choosing the junk tool gives −0.690619, narrow and in disagreement."""
        result = _mock_margin([INFLUX, JUNK], ["send_email"])
        assert result.margin == pytest.approx(-0.690619, abs=1e-6)
        assert result.narrow and result.proxy_disagreement

    def test_m4_both_twins_chosen(self) -> None:
        """M4: with both twins chosen the margin is best chosen − junk, 0.675071, with no disagreement."""
        result = _mock_margin(
            [TWIN_LIVE, TWIN_HISTORY, JUNK], ["get_fcns_database", "influx_get_fcns_database"]
        )
        assert result.margin == pytest.approx(0.675071, abs=1e-6)
        assert not result.narrow and not result.proxy_disagreement

    @pytest.mark.parametrize(
        ("candidates", "chosen"),
        [
            ([INFLUX, JUNK], ["influx_get_fcns_database", "send_email"]),
            ([INFLUX], ["influx_get_fcns_database"]),
        ],
    )
    def test_m5_all_chosen_has_no_margin(self, candidates: list[tuple[str, str]], chosen: list[str]) -> None:
        """M5: when every candidate was chosen (or the menu has one tool) the margin is absent, not narrow."""
        result = _mock_margin(candidates, chosen)
        assert result.margin is None
        assert not result.narrow and not result.proxy_disagreement


def _subject(
    span: str, menu: list[tuple[str, str]], chosen: list[str], user: str = "why did fc1/3 drop?"
) -> Subject:
    call = LLMCall(
        span_id=span,
        trace_id="0" * 32,
        offered_tools=tuple(OfferedTool(name, text) for name, text in menu),
        tool_calls=tuple(ToolCall(name, f"call_{i}") for i, name in enumerate(chosen)),
        user_text=user,
    )
    return Subject(span_id=span, trace_id="0" * 32, llm_call=call)


PLANTED_MENU = [
    ("get_fcns", "Read the FC name server database."),
    ("influx_get_fcns", "Read the FC name server database history."),
    ("send_email", "Send an email message."),
]


class TestPlantedVectors:
    def test_m6_tie_is_narrow_only_and_the_summary_counts(self) -> None:
        """M6: identical twins tie at margin 0 (narrow, no disagreement); the summary has the seven counts."""
        planted = PlantedEmbedder(
            [("user:", [1, 0.1, 0]), ("fcns", [1, 0.12, 0]), ("email", [0, 0, 1])], fallback=[0, 1, 0]
        )
        check = ToolChoiceCheck(planted, scoring="seed")
        check.record(
            [
                _subject("a" * 16, PLANTED_MENU, ["get_fcns"]),
                _subject("b" * 16, PLANTED_MENU, []),
                _subject("c" * 16, PLANTED_MENU, ["hallucinated_tool"]),
            ]
        )
        first = check.calls()[0]
        assert first.result is not None
        assert first.result.margin == 0.0
        assert first.result.narrow and not first.result.proxy_disagreement
        assert first.result.top == "get_fcns"
        assert [call.skipped for call in check.calls()] == [None, "nothing-chosen", "chosen-not-offered"]
        assert check.summary() == ToolChoiceSummary(
            llm_calls_with_tools=3, choices=2, scored=1, flagged=1, narrow=1, proxy_disagreement=0, skipped=2
        )

    def test_m7_disagreement(self) -> None:
        """M7: choosing the email tool against a fcns-shaped context is flagged with margin −0.99875."""
        planted = PlantedEmbedder(
            [("user:", [1, 0, 0]), ("fcns", [1, 0.05, 0]), ("email", [0, 0, 1])], fallback=[0, 1, 0]
        )
        check = ToolChoiceCheck(planted, scoring="seed")
        check.record(_subject("a" * 16, PLANTED_MENU, ["send_email"]))
        (flagged,) = check.flagged()
        assert flagged.result is not None
        assert flagged.result.proxy_disagreement
        assert flagged.result.margin == pytest.approx(-0.99875, abs=1e-5)

    def test_m8_clear_choice_is_not_flagged(self) -> None:
        """M8: an email-shaped context and the email tool chosen: margin 0.98058, nothing flagged."""
        planted = PlantedEmbedder(
            [("user:", [0, 0, 1]), ("fcns", [1, 0, 0]), ("email", [0, 0.2, 1])], fallback=[0, 1, 0]
        )
        check = ToolChoiceCheck(planted, scoring="seed")
        check.record(_subject("a" * 16, PLANTED_MENU, ["send_email"]))
        (call,) = check.calls()
        assert call.result is not None and call.result.margin == pytest.approx(0.98058, abs=1e-5)
        assert check.flagged() == ()


class TestTextConstruction:
    def test_user_only_context(self) -> None:
        """The first call of a turn has only the user slot."""
        assert choice_context("why did fc1/3 drop?") == "user: why did fc1/3 drop?"

    def test_context_with_assistant_text(self) -> None:
        """The trimmed latest assistant text follows in its own slot."""
        assert (
            choice_context("why?", "  checking the FLOGI DB \n")
            == "user: why?\n\nassistant: checking the FLOGI DB"
        )

    def test_slots_keep_the_head_of_the_user_text_and_the_tail_of_the_assistant_text(self) -> None:
        """Each slot is capped: the user's head and the assistant's tail survive."""
        context = choice_context("u" * 10 + "X", "Y" + "a" * 10, max_slot_chars=10)
        assert context == "user: " + "u" * 10 + "\n\nassistant: " + "a" * 10

    def test_tool_results_never_reach_the_embedder(self) -> None:
        """The check embeds only the context and the tool texts: a tool-result marker never gets through."""
        counting = CountingEmbedder(CharCountEmbedder())
        call = LLMCall(
            span_id="a" * 16,
            trace_id="0" * 32,
            offered_tools=(OfferedTool(*INFLUX), OfferedTool(*JUNK)),
            tool_calls=(ToolCall("send_email"),),
            user_text="why?",
            assistant_text="checking the FLOGI DB",
            tool_results=(ToolResult("TOOL_RESULT_MARKER 42"),),
        )
        ToolChoiceCheck(counting, scoring="seed").evaluate([Subject("a" * 16, "0" * 32, llm_call=call)])
        assert counting.texts
        assert not any("TOOL_RESULT_MARKER" in text for text in counting.texts)

    @pytest.mark.parametrize(
        ("name", "description", "text"),
        [
            ("influx_get_fcns_database", "FCNS DB.", "influx get fcns database: FCNS DB."),
            ("getFcnsDatabase", "FCNS DB.", "get Fcns Database: FCNS DB."),
            ("plain-name", None, "plain name"),
            ("plain-name", "   ", "plain name"),
            ("__v2Tool--x__", "  padded  ", "v2 Tool x: padded"),
        ],
    )
    def test_confusability_text(self, name: str, description: str | None, text: str) -> None:
        """Name separators become spaces, camelCase splits, case is kept, the description is trimmed."""
        assert confusability_text(name, description) == text

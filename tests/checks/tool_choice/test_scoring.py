"""The calibrated scoring: BM25, parameter-aware text, fusion, per-tool evidence, and the check's wiring."""

from __future__ import annotations

import numpy as np
import pytest
from embedding.embedders import CountingEmbedder, PlantedEmbedder
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_shapecheck import HashingEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._attributes import (
    TOOL_CHOICE_COSINE_MARGIN,
    TOOL_CHOICE_MARGIN,
    TOOL_CHOICE_RELATIVE_MARGIN,
    TOOL_CHOICE_SCORING,
    TOOL_CHOICE_WEAKEST,
)
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolParameter
from otel_shapecheck.checks.tool_choice._lexical import lexical_scores, lexical_terms
from otel_shapecheck.checks.tool_choice._margin import (
    RELATIVE_FLOOR,
    choice_context,
    cosine_scores,
    relative_margin,
    score_margin,
)
from otel_shapecheck.checks.tool_choice._scoring import (
    _CLAUSE_BREAK,
    _LONG_SPACE_RUN,
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    _clause_breaks,
    calibrated_margin,
    clause_split,
    context_segments,
    segment_texts,
)
from otel_shapecheck.embedding._tool_index import confusability_text, parameter_text

TRACE = "2" * 32


class TestLexical:
    def test_terms_split_names_drop_stopwords_and_plurals(self) -> None:
        assert lexical_terms("getOrderStatus for the orders_by-id analysis") == (
            "order",
            "status",
            "order",
            "id",
            "analysis",
        )

    def test_best_match_scores_one_and_no_overlap_scores_zero(self) -> None:
        scores = lexical_scores(
            "user: cancel my hotel booking",
            ["cancel booking: cancel a hotel booking", "book hotel: book a hotel", "send email: an email"],
        )
        assert scores[0] == 1.0
        assert 0.0 < scores[1] < 1.0
        assert scores[2] == 0.0

    def test_idf_is_over_the_menu_so_a_word_every_tool_has_barely_counts(self) -> None:
        menu = ["order status: order state", "order cancel: cancel an order", "order refund: refund an order"]
        scores = lexical_scores("user: refund my order", menu)
        assert scores.index(1.0) == 2
        assert max(scores[0], scores[1]) < 0.2

    def test_slot_labels_are_not_evidence(self) -> None:
        menu = ["get user: fetch a user profile", "get weather: forecast"]
        assert lexical_scores("user: forecast?\n\nassistant: checking", menu) == [0.0, 1.0]

    def test_no_words_in_common_or_empty_menu(self) -> None:
        assert lexical_scores("user: ???", ["a tool", "b tool"]) == [0.0, 0.0]
        assert lexical_scores("user: anything", []) == []


class TestParameterText:
    def test_without_parameters_it_is_the_seed_text(self) -> None:
        assert parameter_text("get_weather", "Weather.", ()) == confusability_text("get_weather", "Weather.")

    def test_parameters_follow_the_description_tokenised(self) -> None:
        parameters = (ToolParameter("drink_id", " The drink. "), ToolParameter("new_preferences.milkType"))
        assert parameter_text("change_drink", "Change a drink.", parameters) == (
            "change drink: Change a drink. (parameters: drink id: The drink.; new preferences milk Type)"
        )

    def test_allowed_values_follow_their_parameter(self) -> None:
        parameters = (
            ToolParameter("unit", "Temperature unit.", ("celsius", "fahrenheit")),
            ToolParameter("days", None, ("1", "7")),
        )
        assert parameter_text("get_weather", "Weather.", parameters) == (
            "get weather: Weather. (parameters: unit: Temperature unit. (one of celsius, fahrenheit); "
            "days (one of 1, 7))"
        )


class TestSegments:
    def test_clauses_at_sentence_ends_and_conjunctions(self) -> None:
        text = "Book a hotel in Rome. Also, find flights to Rome and then send me the summary"
        assert context_segments(text) == (
            "Book a hotel in Rome.",
            "Also, find flights to Rome",
            "send me the summary",
        )

    def test_a_single_clause_gives_no_segments(self) -> None:
        assert context_segments("weather in Paris") == ()
        assert context_segments(None) == ()

    def test_views_are_labelled_like_their_slot(self) -> None:
        views = segment_texts("Add 1 and 2. Tell me the time.", "First the sum. Then the clock.")
        assert views == (
            "user: Add 1",
            "user: Tell me the time.",
            "assistant: First the sum.",
            "assistant: Then the clock.",
        )

    @settings(max_examples=500, deadline=None)
    @given(
        st.lists(
            st.sampled_from(
                [
                    " ",
                    "  ",
                    "\t",
                    "\n",
                    "\n\n",
                    "\u2003",
                    ",",
                    ".",
                    ";",
                    "?",
                    "a",
                    "xy",
                    "and",
                    "AND",
                    "also",
                    "then",
                    "and also",
                    "And Then",
                    "as well as",
                    "alſo",
                    "andy",
                    " " * 33,
                    "\n" * 40,
                    " \n" * 20,
                ]
            ),  # fmt: skip
            max_size=24,
        )
    )
    def test_the_linear_split_finds_the_breaks_the_regex_finds(self, atoms: list[str]) -> None:
        """Sentence ends, newlines and conjunctions after commas, spaces, tabs and newlines in any runs:
        the same spans as the regex, and the same split on either side of the long-run bound."""
        text = "".join(atoms)
        assert list(_clause_breaks(text)) == [match.span() for match in _CLAUSE_BREAK.finditer(text)]
        assert clause_split(text) == _CLAUSE_BREAK.split(text)

    @pytest.mark.parametrize("run", [_LONG_SPACE_RUN - 1, _LONG_SPACE_RUN, _LONG_SPACE_RUN + 1, 20_000])
    def test_clauses_around_a_long_space_run(self, run: int) -> None:
        """Runs at, just past and far past the bound where the linear split takes over split the same."""
        spaces = " " * run
        newlines = "\n" * run
        text = f"Book a hotel in Rome,{spaces}and then send me{newlines}the summary."
        text += f"{spaces}Thanks{spaces}a lot"
        assert context_segments(text) == (
            "Book a hotel in Rome",
            "send me",
            "the summary.",
            f"Thanks{spaces}a lot",
        )
        if run < 1000:  # past that the regex itself is the slow reference this split replaces
            assert clause_split(text) == _CLAUSE_BREAK.split(text)


# Three orthogonal directions: a hotel request, a flight request, an unrelated email tool.
HOTEL, FLIGHT, EMAIL = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
NAMES = ["book_hotel", "book_flight", "send_email"]
TEXTS = ["book hotel: x", "book flight: y", "send email: z"]


def _margin(
    context: list[float], chosen: list[str], segments: list[tuple[str, list[float]]], **kwargs: object
) -> object:
    vectors = np.asarray([HOTEL, FLIGHT, EMAIL], dtype=np.float32)
    return calibrated_margin(
        "user: q", context, NAMES, vectors, vectors, TEXTS, chosen, segments=segments, **kwargs
    )


class TestCalibratedMargin:
    def test_fusion_arithmetic_and_the_seed_margin_beside_it(self) -> None:
        seed = np.asarray([HOTEL, FLIGHT, EMAIL], dtype=np.float32)
        parameters = np.asarray([[0.6, 0.8, 0.0], FLIGHT, EMAIL], dtype=np.float32)
        context = np.asarray([0.8, 0.6, 0.0])
        texts = ["book hotel: a room", "book flight: a seat", "send email: mail"]
        result = calibrated_margin(
            "user: book a room", context, NAMES, seed, parameters, texts, ["book_hotel"]
        )
        cosines = (cosine_scores(context, seed) + cosine_scores(context, parameters)) / 2
        lexical = np.asarray(lexical_scores("user: book a room", texts))
        fused = (1 - CALIBRATED_LEXICAL_WEIGHT) * cosines + CALIBRATED_LEXICAL_WEIGHT * lexical
        assert result.margin == pytest.approx(fused[0] - max(fused[1:]))
        assert result.cosine_margin == pytest.approx(
            score_margin(context, NAMES, seed, ["book_hotel"]).margin
        )
        assert [s.name for s in result.scores] == ["book_hotel", "book_flight", "send_email"]
        assert result.weakest is None

    def test_a_wrong_tool_next_to_a_right_one_is_caught_per_clause(self) -> None:
        """Hotel + flight asked; hotel + email chosen: the best chosen leads, but email wins no clause."""
        both = [0.8, 0.6, 0.0]
        seed_rule = _margin(both, ["book_hotel", "send_email"], [], per_tool=False)
        per_tool = _margin(
            both, ["book_hotel", "send_email"], [("user: hotel", HOTEL), ("user: fly", FLIGHT)]
        )
        assert not seed_rule.narrow  # type: ignore[attr-defined]
        assert per_tool.narrow and per_tool.weakest == "send_email"  # type: ignore[attr-defined]
        # Its best clause is the hotel one, where it merely ties the unchosen flight tool.
        assert per_tool.margin == pytest.approx(0.0, abs=1e-6)  # type: ignore[attr-defined]

    def test_each_right_tool_winning_its_own_clause_is_clear(self) -> None:
        result = _margin(
            [0.9, 0.3, 0.0],
            ["book_hotel", "book_flight"],
            [("user: hotel", HOTEL), ("user: fly", FLIGHT)],
        )
        assert not result.flagged  # type: ignore[attr-defined]
        assert result.margin == pytest.approx(0.9, abs=0.02)  # type: ignore[attr-defined]
        assert result.weakest in NAMES  # type: ignore[attr-defined]

    def test_all_chosen_has_no_margin(self) -> None:
        result = _margin(HOTEL, NAMES, [("user: hotel", HOTEL), ("user: fly", FLIGHT)])
        assert result.margin is None and not result.flagged  # type: ignore[attr-defined]
        assert result.relative_margin is None  # type: ignore[attr-defined]

    def test_narrow_is_the_margin_as_a_share_of_the_top_score(self) -> None:
        """The same raw lead is narrow where the best tool scores high and clear where it scores low."""
        menu = np.asarray([[*HOTEL, 0.0], [*FLIGHT, 0.0], [*EMAIL, 0.0]], dtype=np.float32)

        def margin(context: list[float]) -> object:
            return calibrated_margin("user: q", context, NAMES, menu, menu, TEXTS, ["book_hotel"])

        strong = margin([1.0, 0.98, 0.0, 0.0])  # the request reads like both hotel and flight
        weak = margin([0.3, 0.285, 0.0, 0.9])  # mostly about something no tool offers
        assert abs(strong.margin - weak.margin) < 0.002  # type: ignore[attr-defined]
        for result in (strong, weak):
            assert result.relative_margin == pytest.approx(  # type: ignore[attr-defined]
                result.margin / result.top_score  # type: ignore[attr-defined]
            )
        assert strong.relative_margin < CALIBRATED_MARGIN_THRESHOLD  # type: ignore[attr-defined]
        assert strong.narrow and not strong.proxy_disagreement  # type: ignore[attr-defined]
        assert weak.relative_margin >= CALIBRATED_MARGIN_THRESHOLD  # type: ignore[attr-defined]
        assert not weak.narrow  # type: ignore[attr-defined]

    def test_a_top_score_near_zero_divides_by_the_floor(self) -> None:
        assert relative_margin(0.001, 0.002) == pytest.approx(0.001 / RELATIVE_FLOOR)
        assert relative_margin(-0.2, -0.1) == pytest.approx(-0.2 / RELATIVE_FLOOR)
        assert relative_margin(None, 0.5) is None

    def test_wiring_errors_raise(self) -> None:
        with pytest.raises(ValueError, match="parameter texts"):
            calibrated_margin("user: q", HOTEL, NAMES, [HOTEL] * 3, [HOTEL] * 3, TEXTS[:2], ["book_hotel"])
        with pytest.raises(ValueError, match="not candidates"):
            _margin(HOTEL, ["nope"], [])


MENU = (
    OfferedTool("book_hotel", "Book a hotel room in a city.", (ToolParameter("city", "Where to stay."),)),
    OfferedTool("book_flight", "Book a flight between two airports.", (ToolParameter("origin"),)),
    OfferedTool("send_email", "Send an email message to a recipient."),
)


def _subject(span: str, chosen: tuple[str, ...], user: str = "Book a hotel room in Rome for me") -> Subject:
    call = LLMCall(
        span_id=span,
        trace_id=TRACE,
        offered_tools=MENU,
        tool_calls=tuple(ToolCall(name, f"c{i}") for i, name in enumerate(chosen)),
        user_text=user,
    )
    return Subject(span_id=span, trace_id=TRACE, llm_call=call)


class TestCheckScorings:
    def test_calibrated_is_the_default_with_its_threshold(self) -> None:
        check = ToolChoiceCheck(HashingEmbedder())
        assert check.scoring == "calibrated"
        assert check.margin_threshold == CALIBRATED_MARGIN_THRESHOLD
        (verdict,) = check.evaluate([_subject("a" * 16, ("book_hotel",))])
        assert verdict is not None
        assert verdict.attributes[TOOL_CHOICE_SCORING] == "calibrated"
        assert verdict.attributes[TOOL_CHOICE_MARGIN] != verdict.attributes[TOOL_CHOICE_COSINE_MARGIN]
        assert verdict.label == "clear"
        relative = verdict.attributes[TOOL_CHOICE_RELATIVE_MARGIN]
        assert isinstance(relative, float) and relative >= CALIBRATED_MARGIN_THRESHOLD
        assert f"{relative:.1%} of the top score" in verdict.explanation
        assert "narrow below 3.125 %" in verdict.explanation

    def test_seed_scoring_is_the_seed_rule(self) -> None:
        embedder = HashingEmbedder()
        check = ToolChoiceCheck(embedder, scoring="SEED")
        assert check.scoring == "seed" and check.margin_threshold == 0.05
        (verdict,) = check.evaluate([_subject("a" * 16, ("book_hotel",))])
        assert verdict is not None
        texts = [choice_context("Book a hotel room in Rome for me")]
        texts += [confusability_text(t.name, t.description) for t in MENU]
        vectors = embedder.embed(texts)
        expected = score_margin(vectors[0], [t.name for t in MENU], vectors[1:], ["book_hotel"])
        assert verdict.attributes[TOOL_CHOICE_SCORING] == "seed"
        assert verdict.attributes[TOOL_CHOICE_MARGIN] == pytest.approx(expected.margin)
        assert verdict.attributes[TOOL_CHOICE_COSINE_MARGIN] == verdict.attributes[TOOL_CHOICE_MARGIN]
        assert TOOL_CHOICE_RELATIVE_MARGIN not in verdict.attributes

    def test_an_explicit_threshold_applies_to_either_scoring(self) -> None:
        assert ToolChoiceCheck(HashingEmbedder(), margin_threshold=0.2).margin_threshold == 0.2
        assert (
            ToolChoiceCheck(HashingEmbedder(), scoring="seed", margin_threshold=0.2).margin_threshold == 0.2
        )

    def test_a_bad_scoring_argument_names_itself(self) -> None:
        with pytest.raises(ValueError, match="scoring"):
            ToolChoiceCheck(HashingEmbedder(), scoring="best")

    def test_each_tool_text_is_embedded_once_across_calls(self) -> None:
        counting = CountingEmbedder(HashingEmbedder())
        check = ToolChoiceCheck(counting)
        check.evaluate([_subject("a" * 16, ("book_hotel",))])
        check.evaluate([_subject("b" * 16, ("book_flight",), user="Fly me from SFO to JFK")])
        tool_texts = [text for text in counting.texts if not text.startswith("user: ")]
        assert len(tool_texts) == len(set(tool_texts)) == 5  # 3 seed texts + 2 with parameters

    def test_segments_are_embedded_only_for_calls_that_chose_several_tools(self) -> None:
        counting = CountingEmbedder(HashingEmbedder())
        check = ToolChoiceCheck(counting)
        user = "Book a hotel room in Rome. Also book a flight from Paris to Rome"
        check.evaluate([_subject("a" * 16, ("book_hotel",), user=user)])
        assert [t for t in counting.texts if t.startswith("user: ")] == [choice_context(user)]
        (verdict,) = check.evaluate([_subject("b" * 16, ("book_hotel", "send_email"), user=user)])
        assert verdict is not None
        assert "user: Book a hotel room in Rome." in counting.texts
        assert verdict.attributes[TOOL_CHOICE_WEAKEST] == "send_email"
        assert verdict.label in ("narrow", "disagreement")
        assert "Rome" not in verdict.explanation and "send_email" not in verdict.explanation
        assert "least supported of the 2 chosen tools" in verdict.explanation

    def test_seed_scoring_never_embeds_segments(self) -> None:
        counting = CountingEmbedder(
            PlantedEmbedder([("hotel", [1, 0, 0]), ("flight", [0, 1, 0])], fallback=[0, 0, 1])
        )
        check = ToolChoiceCheck(counting, scoring="seed")
        check.evaluate([_subject("a" * 16, ("book_hotel", "send_email"), user="Hotel. And a flight")])
        assert [t for t in counting.texts if t.startswith("user: ")] == [
            choice_context("Hotel. And a flight")
        ]

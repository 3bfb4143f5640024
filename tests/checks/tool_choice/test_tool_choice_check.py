"""ToolChoiceCheck: verdicts of the attribute contract, skip reasons, batching and the lazy query API."""

from __future__ import annotations

import pytest
from embedding.embedders import CharCountEmbedder, CountingEmbedder

from otel_shapecheck import Check, HashingEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._attributes import (
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    EVALUATION_TOOL_CHOICE,
    FLAG_TOOL_CHOICE_NARROW,
    FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT,
    FLAGGED,
    FLAGS,
    RESPONSE_ID,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_EMBEDDER,
    TOOL_CHOICE_MARGIN,
    TOOL_CHOICE_NARROW,
    TOOL_CHOICE_OFFERED_COUNT,
    TOOL_CHOICE_PROXY_DISAGREEMENT,
    TOOL_CHOICE_SKIPPED,
    TOOL_CHOICE_TOP,
)
from otel_shapecheck._model import AnalystRun, LLMCall, OfferedTool, ToolCall
from otel_shapecheck.checks._base import Verdict, enrichment_attributes
from otel_shapecheck.embedding._cache import EmbeddingCache

TRACE = "1" * 32
MENU = (
    OfferedTool("get_weather", "Get the current weather forecast for a city."),
    OfferedTool("send_email", "Send an email message to a recipient."),
    OfferedTool("search_flights", "Search for flights between two airports on a date."),
)


def _subject(
    span: str,
    chosen: tuple[str, ...] | None = ("get_weather",),
    *,
    menu: tuple[OfferedTool, ...] | None = MENU,
    user: str | None = "What is the weather forecast for Paris tomorrow?",
    incomplete: bool = False,
    finish_reasons: tuple[str, ...] = (),
) -> Subject:
    calls = None if chosen is None else tuple(ToolCall(name, f"call_{i}") for i, name in enumerate(chosen))
    call = LLMCall(
        span_id=span,
        trace_id=TRACE,
        offered_tools=menu,
        tool_calls=calls,
        user_text=user,
        response_id=f"resp-{span}",
        finish_reasons=finish_reasons,
    )
    return Subject(span_id=span, trace_id=TRACE, llm_call=call, incomplete=incomplete)


@pytest.fixture(name="check")
def _check() -> ToolChoiceCheck:
    return ToolChoiceCheck(HashingEmbedder())


def _verdict(check: ToolChoiceCheck, subject: Subject) -> Verdict:
    """The one verdict ``check`` gives ``subject``; there must be one."""
    (verdict,) = check.evaluate([subject])
    assert verdict is not None
    return verdict


class TestVerdicts:
    def test_is_a_check(self, check: ToolChoiceCheck) -> None:
        """The check implements the Check protocol under the contract's evaluation name."""
        assert isinstance(check, Check)
        assert check.name == EVALUATION_TOOL_CHOICE

    def test_clear_choice_carries_the_contract_attributes(self, check: ToolChoiceCheck) -> None:
        """A clear choice gets every contract attribute, the margin as score and no flag."""
        verdict = _verdict(check, _subject("a" * 16))
        attributes = verdict.attributes
        assert attributes[TOOL_CHOICE_OFFERED_COUNT] == 3
        assert attributes[TOOL_CHOICE_CHOSEN] == ("get_weather",)
        assert attributes[TOOL_CHOICE_TOP] == "get_weather"
        assert attributes[TOOL_CHOICE_NARROW] is False
        assert attributes[TOOL_CHOICE_PROXY_DISAGREEMENT] is False
        assert attributes[TOOL_CHOICE_EMBEDDER] == "hashing-512"
        assert TOOL_CHOICE_SKIPPED not in attributes
        margin = attributes[TOOL_CHOICE_MARGIN]
        assert isinstance(margin, float) and margin >= 0.05
        assert verdict.score == margin and verdict.label == "clear" and verdict.flags == ()
        event = verdict.event_attributes()
        assert event[EVALUATION_NAME] == EVALUATION_TOOL_CHOICE
        assert event[EVALUATION_SCORE_VALUE] == margin
        assert event[EVALUATION_SCORE_LABEL] == "clear"
        assert event[RESPONSE_ID] == "resp-" + "a" * 16

    def test_disagreement_is_flagged_narrow_too(self, check: ToolChoiceCheck) -> None:
        """Choosing a tool the context does not favour flags both narrow and proxy disagreement."""
        verdict = _verdict(check, _subject("a" * 16, ("send_email",)))
        assert verdict.label == "disagreement"
        assert verdict.flags == (FLAG_TOOL_CHOICE_NARROW, FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT)
        assert verdict.score is not None and verdict.score < 0
        assert enrichment_attributes([verdict])[FLAGGED] is True
        assert enrichment_attributes([verdict])[FLAGS] == (
            FLAG_TOOL_CHOICE_NARROW,
            FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT,
        )

    def test_narrow_label_from_the_threshold(self) -> None:
        """A positive margin under the configured threshold is narrow without disagreement."""
        check = ToolChoiceCheck(HashingEmbedder(), margin_threshold=0.99)
        verdict = _verdict(check, _subject("a" * 16))
        assert verdict.label == "narrow" and verdict.flags == (FLAG_TOOL_CHOICE_NARROW,)

    def test_all_chosen_has_no_margin(self, check: ToolChoiceCheck) -> None:
        """When every offered tool was chosen, the margin attribute and the score are absent."""
        verdict = _verdict(check, _subject("a" * 16, tuple(t.name for t in MENU)))
        assert TOOL_CHOICE_MARGIN not in verdict.attributes
        assert verdict.score is None and verdict.label == "all-chosen" and not verdict.flagged

    def test_explanations_carry_no_prompt_content(self, check: ToolChoiceCheck) -> None:
        """No explanation repeats the user's words or a tool name."""
        subjects = [_subject("a" * 16), _subject("b" * 16, ("send_email",)), _subject("c" * 16, ())]
        for verdict in check.evaluate(subjects):
            assert verdict is not None
            text = verdict.explanation.lower()
            assert "paris" not in text and "weather" not in text and "send_email" not in text
            assert text.endswith(".") and text.count(". ") == 0

    def test_not_applicable_subjects_get_none(self, check: ToolChoiceCheck) -> None:
        """Non-LLM subjects and calls that neither offered nor invoked tools get no verdict."""
        analyst = Subject("a" * 16, TRACE, analyst_run=AnalystRun("a" * 16, TRACE))
        no_tools = _subject("b" * 16, (), menu=())
        unknown = _subject("c" * 16, None, menu=None)
        assert check.evaluate([analyst, no_tools, unknown]) == [None, None, None]

    def test_duplicate_menu_entries_count_once(self, check: ToolChoiceCheck) -> None:
        """A menu that repeats a tool name is scored with the first entry of each name."""
        (verdict,) = check.evaluate([_subject("a" * 16, menu=MENU + MENU[:1])])
        assert verdict is not None and verdict.attributes[TOOL_CHOICE_OFFERED_COUNT] == 3


class TestSkipReasons:
    @pytest.mark.parametrize(
        ("subject", "reason"),
        [
            (_subject("a" * 16, ()), "nothing-chosen"),
            (_subject("a" * 16, ("get_weather", "book_hotel")), "chosen-not-offered"),
            (_subject("a" * 16, ("get_weather",), menu=None), "no-menu"),
            (_subject("a" * 16, user=None), "no-context"),
            (_subject("a" * 16, user="   "), "no-context"),
            (_subject("a" * 16, None, incomplete=True), "incomplete"),
            (_subject("a" * 16, None, finish_reasons=("tool_calls",)), "incomplete"),
            (_subject("a" * 16, None, finish_reasons=("stop",)), "nothing-chosen"),
            (_subject("a" * 16, None), "no-output"),
        ],
    )
    def test_reason(self, check: ToolChoiceCheck, subject: Subject, reason: str) -> None:
        """Each unscoreable call gets its documented skip reason, the skipped label and no flag."""
        verdict = _verdict(check, subject)
        assert verdict.attributes[TOOL_CHOICE_SKIPPED] == reason
        assert verdict.label == "skipped" and verdict.score is None and not verdict.flagged
        assert TOOL_CHOICE_TOP not in verdict.attributes

    def test_menu_too_large_is_skipped_without_embedding(self) -> None:
        """A menu over ``max_menu_tools`` is reported with its size and skipped, embedding nothing."""
        counting = CountingEmbedder(HashingEmbedder())
        check = ToolChoiceCheck(counting, max_menu_tools=2)
        verdict = _verdict(check, _subject("a" * 16))
        assert verdict.attributes[TOOL_CHOICE_SKIPPED] == "menu-too-large"
        assert verdict.attributes[TOOL_CHOICE_OFFERED_COUNT] == 3
        assert counting.calls == 0

    def test_lone_surrogates_are_scored(self) -> None:
        """A tool name with a lone surrogate (undecodable bytes kept by surrogateescape) is still scored."""
        menu = (OfferedTool("get_capacit\udcff", "Pool capacity, for when storage runs low."), *MENU)
        subject = _subject("a" * 16, ("get_capacit\udcff",), menu=menu, user="How full is pool \udcff?")
        for embedder in (HashingEmbedder(), CharCountEmbedder()):
            (verdict,) = ToolChoiceCheck(embedder).evaluate([subject])
            assert verdict is not None and TOOL_CHOICE_TOP in verdict.attributes

    def test_chosen_not_offered_is_reported_not_repaired(self, check: ToolChoiceCheck) -> None:
        """The invoked names are reported as the model sent them."""
        verdict = _verdict(check, _subject("a" * 16, ("get_weather", "book_hotel")))
        assert verdict.attributes[TOOL_CHOICE_CHOSEN] == ("get_weather", "book_hotel")

    def test_skips_embed_nothing(self) -> None:
        """A batch of skipped calls never calls the embedder."""
        counting = CountingEmbedder(HashingEmbedder())
        ToolChoiceCheck(counting).evaluate([_subject("a" * 16, ()), _subject("b" * 16, user=None)])
        assert counting.calls == 0


class TestBatching:
    def test_one_embed_call_per_batch_with_distinct_texts(self) -> None:
        """A batch embeds its distinct contexts and new tool texts in one call; known tools are not redone."""
        counting = CountingEmbedder(CharCountEmbedder())
        check = ToolChoiceCheck(counting)
        same_context = [_subject(f"{i:016x}") for i in range(5)]
        check.evaluate(same_context)
        assert counting.calls == 1
        assert len(counting.texts) == 1 + len(MENU)
        check.evaluate([_subject("f" * 16, user="Book me a flight to Rome.")])
        assert counting.calls == 2
        assert counting.texts[-1] == "user: Book me a flight to Rome."

    def test_passes_an_existing_cache_through(self) -> None:
        """An EmbeddingCache given as embedder is used as-is, so its counters show the check's traffic."""
        cache = EmbeddingCache(CharCountEmbedder())
        check = ToolChoiceCheck(cache)
        assert check.embedder is cache
        check.evaluate([_subject("a" * 16), _subject("b" * 16)])
        assert cache.stats().misses == 1 + len(MENU)


class TestQueryApi:
    def test_recording_embeds_nothing_until_the_first_read(self) -> None:
        """0 embedder calls after recording a run, > 0 after the first read, unchanged on later reads."""
        counting = CountingEmbedder(HashingEmbedder())
        check = ToolChoiceCheck(counting)
        check.record([_subject("a" * 16), _subject("b" * 16, ("send_email",)), _subject("c" * 16, ())])
        assert counting.calls == 0
        calls = check.calls()
        assert counting.calls > 0
        after_first_read = counting.calls
        assert check.calls() == calls
        check.flagged()
        check.summary()
        assert counting.calls == after_first_read

    def test_reads_include_calls_the_worker_evaluated(self, check: ToolChoiceCheck) -> None:
        """Batches scored by ``evaluate`` show up in the query API without being scored again."""
        check.evaluate([_subject("a" * 16), _subject("b" * 16, ("send_email",))])
        check.record(_subject("c" * 16, ()))
        summary = check.summary()
        assert (summary.llm_calls_with_tools, summary.scored, summary.flagged, summary.skipped) == (
            3,
            2,
            1,
            1,
        )
        assert [call.span_id for call in check.flagged()] == ["b" * 16]

    def test_query_rows_keep_the_context_and_call_ids(self, check: ToolChoiceCheck) -> None:
        """A row holds the embedded context, the chosen names and every tool call id."""
        check.record(_subject("a" * 16, ("get_weather", "get_weather")))
        (call,) = check.calls()
        assert call.context_text == "user: What is the weather forecast for Paris tomorrow?"
        assert call.chosen == ("get_weather",)
        assert call.tool_call_ids == ("call_0", "call_1")

    def test_history_is_bounded_and_clearable(self) -> None:
        """Only the newest ``max_recorded_calls`` are kept; ``clear()`` forgets them all."""
        check = ToolChoiceCheck(HashingEmbedder(), max_recorded_calls=2)
        check.evaluate([_subject(f"{i:016x}") for i in range(5)])
        assert [call.span_id for call in check.calls()] == [f"{3:016x}", f"{4:016x}"]
        check.clear()
        assert check.calls() == ()

    def test_a_failed_read_keeps_calls_pending(self) -> None:
        """When the embedder is down on a read, the error surfaces; the calls are scored on the next read."""

        class Offline(HashingEmbedder):
            offline = True

            def embed(self, texts):  # type: ignore[no-untyped-def]
                if self.offline:
                    raise RuntimeError("offline")
                return super().embed(texts)

        embedder = Offline()
        check = ToolChoiceCheck(embedder)
        check.record(_subject("a" * 16))
        with pytest.raises(RuntimeError):
            check.calls()
        embedder.offline = False
        (call,) = check.calls()
        assert call.result is not None

    def test_a_text_the_embedder_refuses_skips_only_the_calls_that_need_it(self) -> None:
        """A refused context skips its call as ``embedding-failed``; a refused tool text, its menu's calls."""

        class Refusing(HashingEmbedder):
            def embed(self, texts):  # type: ignore[no-untyped-def]
                if any("Paris" in text or "telegram" in text for text in texts):
                    raise RuntimeError("refused")
                return super().embed(texts)

        check = ToolChoiceCheck(Refusing())
        other_menu = (
            OfferedTool("get_weather", "Get the weather"),
            OfferedTool("send_email", "Send a telegram"),
        )
        subjects = [
            _subject("a" * 16),
            _subject("b" * 16, user="What is the weather forecast for Lyon tomorrow?"),
            _subject("c" * 16, user="What is the weather forecast for Nice tomorrow?", menu=other_menu),
        ]
        verdicts = check.evaluate(subjects)
        skipped = [verdict.attributes.get(TOOL_CHOICE_SKIPPED) for verdict in verdicts if verdict is not None]
        assert skipped == ["embedding-failed", None, "embedding-failed"]
        assert [verdict.label for verdict in verdicts if verdict is not None] == [
            "skipped",
            "clear",
            "skipped",
        ]
        assert check.summary().scored == 1
        assert check.summary().skipped == 2


class TestConfiguration:
    def test_threshold_and_slot_size_from_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OTEL_SHAPECHECK_MARGIN_THRESHOLD and OTEL_SHAPECHECK_MAX_SLOT_CHARS set the defaults."""
        monkeypatch.setenv("OTEL_SHAPECHECK_MARGIN_THRESHOLD", "0.2")
        monkeypatch.setenv("OTEL_SHAPECHECK_MAX_SLOT_CHARS", "4")
        check = ToolChoiceCheck(HashingEmbedder())
        assert check.margin_threshold == 0.2
        check.record(_subject("a" * 16))
        assert check.calls()[0].context_text == "user: What"

    @pytest.mark.parametrize(
        ("kwargs", "setting"),
        [
            ({"margin_threshold": -0.1}, "margin_threshold"),
            ({"margin_threshold": float("nan")}, "margin_threshold"),
            ({"max_slot_chars": 0}, "max_slot_chars"),
            ({"max_recorded_calls": 0}, "max_recorded_calls"),
            ({"max_menu_tools": 0}, "max_menu_tools"),
        ],
    )
    def test_bad_arguments_name_the_setting(self, kwargs: dict[str, float], setting: str) -> None:
        """A bad explicit value raises ValueError naming the setting."""
        with pytest.raises(ValueError, match=setting):
            ToolChoiceCheck(HashingEmbedder(), **kwargs)  # type: ignore[arg-type]

    def test_default_checks_share_one_minilm_index(self) -> None:
        """``ToolChoiceCheck()`` uses MiniLM through one process-wide index; skipped calls add nothing."""
        check = ToolChoiceCheck()
        assert check.embedder.id == "all-MiniLM-L6-v2-onnx-int8"
        assert ToolChoiceCheck().tool_index is check.tool_index
        before = len(check.tool_index)
        check.evaluate([_subject("a" * 16, ())])
        assert len(check.tool_index) == before

"""Bounds of the tool-choice check: large menus by index (equal to brute force), caps, menu bytes, history."""

from __future__ import annotations

import random

import numpy as np
import pytest

from otel_shapecheck import HashingEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._attributes import TOOL_CHOICE_SKIPPED, TOOL_CHOICE_TRUNCATED
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolParameter
from otel_shapecheck.checks._builtin import build_checks, builtin_checks
from otel_shapecheck.checks.tool_choice import _batch_scorer, _large_menu_scan
from otel_shapecheck.checks.tool_choice._large_menu_scan import (
    EXACT_CHUNK,
    INDEX_MENU_TOOLS,
    Query,
    ToolMatrix,
    best_excluding,
    cosine_error,
)
from otel_shapecheck.checks.tool_choice._margin import MarginResult, choice_context, cosine_scores

TRACE = "2" * 32
_WORDS = [
    f"{a}{b}" for a in ("re", "de", "un", "pro", "con", "sub") for b in ("port", "fer", "mit", "duct", "tain")
]


def _menu(size: int, seed: int) -> tuple[OfferedTool, ...]:
    """Tools from a small vocabulary (many near-twins), some with identical texts (exact ties)."""
    rng = random.Random(seed)
    tools = []
    for i in range(size):
        words = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 8)))
        if i % 97 == 5:
            words = tools[i - 1].description or words  # identical text under another name: a tie
        parameters = (ToolParameter(rng.choice(_WORDS), rng.choice(_WORDS)),) if i % 3 else ()
        tools.append(OfferedTool(f"tool_{i}", words, parameters))
    return tuple(tools)


def _subject(span: int, menu: tuple[OfferedTool, ...], chosen: tuple[str, ...], user: str) -> Subject:
    name = f"{span:016x}"
    calls = tuple(ToolCall(tool, f"call_{i}") for i, tool in enumerate(chosen))
    call = LLMCall(span_id=name, trace_id=TRACE, offered_tools=menu, tool_calls=calls, user_text=user)
    return Subject(span_id=name, trace_id=TRACE, llm_call=call)


def _same(indexed: MarginResult, whole: MarginResult) -> None:
    assert not indexed.ranked_all and whole.ranked_all
    assert indexed.top == whole.top
    assert indexed.proxy_disagreement == whole.proxy_disagreement
    assert indexed.narrow == whole.narrow
    assert indexed.weakest == whole.weakest
    assert indexed.margin == pytest.approx(whole.margin, abs=1e-6)
    assert indexed.cosine_margin == pytest.approx(whole.cosine_margin, abs=1e-6)
    if whole.relative_margin is None:
        assert indexed.relative_margin is None
    else:
        assert indexed.relative_margin == pytest.approx(whole.relative_margin, abs=1e-5)
    assert indexed.best_chosen_score == pytest.approx(whole.best_chosen_score, abs=1e-6)
    assert indexed.top_score == pytest.approx(whole.top_score, abs=1e-6)


class TestLargeMenus:
    @pytest.mark.parametrize("scoring", ["calibrated", "seed"])
    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_search_finds_what_ranking_the_whole_menu_finds(
        self, scoring: str, seed: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Best chosen, best other, top, margins and the weakest chosen tool equal brute force."""
        menu = _menu(INDEX_MENU_TOOLS + 700, seed)
        rng = random.Random(seed)
        subjects = []
        for span in range(12):
            picks = rng.sample(range(len(menu)), rng.choice([1, 1, 2, 3]))
            chosen = tuple(menu[i].name for i in picks)
            user = " and ".join(menu[rng.choice(picks)].description or "" for _ in range(2))
            if span % 4 == 0:
                user = menu[rng.randrange(len(menu))].description or ""  # the context favours another tool
            subjects.append(_subject(span, menu, chosen, user))
        embedder = HashingEmbedder()
        # Every call is retained, so each is compared with its own brute-force twin: by the default byte
        # bound only the newest few of these 2 748-tool calls are kept, and how many depends on the
        # interpreter's object sizes.
        retain_all = 1 << 30
        indexed = ToolChoiceCheck(embedder, scoring=scoring, max_recorded_bytes=retain_all)
        indexed.evaluate(subjects)
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", 10**9)
        whole = ToolChoiceCheck(embedder, scoring=scoring, max_recorded_bytes=retain_all)
        whole.evaluate(subjects)
        assert len(indexed.menu_indexes) == 1 and len(whole.menu_indexes) == 0
        assert len(indexed.calls()) == len(whole.calls()) == len(subjects)
        for a, b in zip(indexed.calls(), whole.calls(), strict=True):
            assert a.result is not None and b.result is not None
            _same(a.result, b.result)

    @pytest.mark.parametrize("scoring", ["calibrated", "seed"])
    def test_a_context_without_a_vector_is_settled_like_brute_force(
        self, scoring: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Every cosine 0 ties with the k-th neighbour's: the search stops growing k, scores the rest in
        one exact pass, and answers as ranking the whole menu does."""
        menu = _menu(INDEX_MENU_TOOLS + 300, 9)
        subjects = [_subject(0, menu, (menu[1500].name,), "¿¡ ¿¡ ¡¡"), _subject(1, menu, (menu[3].name,), "")]
        indexed = ToolChoiceCheck(HashingEmbedder(), scoring=scoring)
        indexed.evaluate(subjects)
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", 10**9)
        whole = ToolChoiceCheck(HashingEmbedder(), scoring=scoring)
        whole.evaluate(subjects)
        for a, b in zip(indexed.calls(), whole.calls(), strict=True):
            if a.result is None or b.result is None:
                assert a.result is None and b.result is None
                continue
            _same(a.result, b.result)

    @pytest.mark.parametrize("scoring", ["calibrated", "seed"])
    def test_chosen_tools_at_the_top_and_the_bottom_of_the_ranking_match_brute_force(
        self, scoring: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The top-ranked tool alone, the last-ranked alone, the top two, and the top with the last (each
        of several chosen tools scored per clause) are scored by the index as ranking the whole menu."""
        menu = _menu(INDEX_MENU_TOOLS + 400, 11)
        user = f"{menu[40].description} and then {menu[900].description}"
        embedder = HashingEmbedder()
        probe = ToolChoiceCheck(embedder, scoring=scoring)
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", 10**9)
        probe.evaluate([_subject(0, menu, (menu[0].name,), user)])
        (ranked,) = probe.calls()
        assert ranked.result is not None and ranked.result.ranked_all
        order = [ranked.result.names[int(i)] for i in ranked.result.order]
        picks = [
            (order[0],),
            (order[-1],),
            (order[0], order[1]),
            (order[0], order[-1]),
            (order[-2], order[-1]),
        ]
        subjects = [_subject(span, menu, chosen, user) for span, chosen in enumerate(picks)]
        whole = ToolChoiceCheck(embedder, scoring=scoring)
        whole.evaluate(subjects)
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", INDEX_MENU_TOOLS)
        indexed = ToolChoiceCheck(embedder, scoring=scoring)
        indexed.evaluate(subjects)
        assert len(indexed.menu_indexes) == 1
        for a, b in zip(indexed.calls(), whole.calls(), strict=True):
            assert a.result is not None and b.result is not None
            _same(a.result, b.result)
        first, last = indexed.calls()[0].result, indexed.calls()[1].result
        assert first is not None and last is not None
        assert first.top == order[0] and not first.proxy_disagreement
        assert last.top == order[0] and last.proxy_disagreement

    @pytest.mark.parametrize("scoring", ["calibrated", "seed"])
    def test_a_dense_context_is_scanned_whole_and_matches_brute_force(
        self, scoring: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A context using most dimensions (scanned with one product over the whole matrix, not row by
        row) gives what ranking the whole menu gives."""
        menu = _menu(INDEX_MENU_TOOLS + 200, 12)
        rng = random.Random(12)
        noise = ("".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(7)) for _ in range(300))
        user = f"{menu[3].description} and {menu[9].description} " + " ".join(noise)
        embedder = HashingEmbedder()
        (vector,) = embedder.embed([choice_context(user)])
        assert len(Query.of(vector).nonzero) > len(vector) // 2
        subjects = [
            _subject(0, menu, (menu[3].name,), user),
            _subject(1, menu, (menu[5].name, menu[9].name), user),
        ]
        indexed = ToolChoiceCheck(embedder, scoring=scoring)
        indexed.evaluate(subjects)
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", 10**9)
        whole = ToolChoiceCheck(embedder, scoring=scoring)
        whole.evaluate(subjects)
        for a, b in zip(indexed.calls(), whole.calls(), strict=True):
            assert a.result is not None and b.result is not None
            _same(a.result, b.result)

    def test_twins_at_the_top_go_to_the_earlier_one_when_neither_is_chosen(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Two unchosen tools with one text top the ranking together: the earlier is top and sets the
        margin, as in the whole ranking."""
        menu = _menu(INDEX_MENU_TOOLS + 50, 13)
        text = "twin only tool text"
        menu = (
            *menu[:300],
            OfferedTool("twin_b", text),
            *menu[301:1900],
            OfferedTool("twin-b", text),
            *menu[1901:],
        )
        subject = _subject(0, menu, (menu[7].name,), text)
        indexed = ToolChoiceCheck(HashingEmbedder())
        indexed.evaluate([subject])
        monkeypatch.setattr(_batch_scorer, "INDEX_MENU_TOOLS", 10**9)
        whole = ToolChoiceCheck(HashingEmbedder())
        whole.evaluate([subject])
        (a,), (b,) = indexed.calls(), whole.calls()
        assert a.result is not None and b.result is not None
        _same(a.result, b.result)
        assert a.result.top == "twin_b" and a.result.proxy_disagreement

    def test_ties_go_to_the_earlier_tool(self) -> None:
        """Two tools with one text tie; the earlier on the menu is top, as in a stable ranking."""
        menu = _menu(INDEX_MENU_TOOLS + 10, 7)
        text = "twin only tool text"
        late = OfferedTool("twin-a", text)  # tokenised like twin_a: the same text, the same vector
        menu = (*menu[:100], OfferedTool("twin_a", text), *menu[101:], late)
        check = ToolChoiceCheck(HashingEmbedder(), scoring="seed")
        check.evaluate([_subject(0, menu, ("twin-a",), "twin only tool text")])
        (call,) = check.calls()
        assert call.result is not None
        assert call.result.top == "twin_a" and call.result.margin == pytest.approx(0.0, abs=1e-6)

    def test_an_index_is_built_once_per_menu(self) -> None:
        """Later calls on the same menu search the index built by the first."""
        menu = _menu(INDEX_MENU_TOOLS + 1, 4)
        check = ToolChoiceCheck(HashingEmbedder())
        for span in range(3):
            check.evaluate([_subject(span, menu, (menu[span].name,), menu[span].description or "")])
        assert check.menu_indexes.builds == 1

    def test_menus_whose_names_read_alike_get_indexes_of_their_own(self) -> None:
        """``a_b`` and ``a-b`` tokenise alike, yet two such menus are two indexes, each answering with
        its own names."""
        menu = _menu(INDEX_MENU_TOOLS + 1, 5)
        other = tuple(
            OfferedTool(tool.name.replace("_", "-"), tool.description, tool.parameters) for tool in menu
        )
        check = ToolChoiceCheck(HashingEmbedder())
        check.evaluate([_subject(0, menu, (menu[7].name,), menu[7].description or "")])
        check.evaluate([_subject(1, other, (other[7].name,), other[7].description or "")])
        first, second = check.calls()
        assert first.result is not None and second.result is not None
        assert first.result.top == menu[7].name and second.result.top == other[7].name
        assert check.menu_indexes.builds == 2


class TestMenuScan:
    """The scan's primitives against numpy brute force over random vectors, ties and odd norms included."""

    @pytest.mark.parametrize("seed", range(6))
    def test_the_best_unexcluded_tool_is_the_brute_force_one(self, seed: int) -> None:
        """Random float32 columns (some repeated, some zero, some not unit), random exclusions and
        sparse, dense and zero contexts: every approximate cosine is within the bound, and the best position
        and score are brute force's, the earliest on a tie."""
        rng = np.random.default_rng(seed)
        dims, tools = 64, 3000
        rows = rng.standard_normal((tools, dims)).astype(np.float32)
        rows[rng.random((tools, dims)) < 0.6] = 0.0  # sparse tools, like hashed texts
        rows[rng.integers(0, tools, 5)] = 0.0  # tools with no vector
        rows *= rng.uniform(0.5, 2.0, (tools, 1)).astype(np.float32)  # norms other than 1
        sources, twins = rng.choice(tools, (2, 40), replace=False)
        rows[twins] = rows[sources]  # exact twins
        norms = np.sqrt(np.einsum("ij,ij->i", rows.astype(np.float64), rows.astype(np.float64)))
        matrix = ToolMatrix(
            np.ascontiguousarray(rows.T), np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        )
        error = cosine_error(dims)
        for trial in range(30):
            kind = trial % 3
            if kind == 0:  # a twin's own vector: two tools tie at the top; sparse
                context = rows[sources[trial % len(sources)]].copy()
            elif kind == 1:
                context = rng.standard_normal(dims).astype(np.float32)  # dense
            else:
                context = np.zeros(dims, dtype=np.float32)  # no vector: every cosine 0
            excluded = rng.random(tools) < rng.choice([0.0, 0.01, 0.5, 0.99])
            query = Query.of(context)
            approximate = matrix.approximate(query.unit, query.nonzero)
            brute = cosine_scores(context, rows)
            assert np.abs(approximate - brute).max() <= error
            best = best_excluding(approximate, excluded, error, lambda p, c=context: matrix.exact(c, p))
            if excluded.all():
                assert best is None
                continue
            open_scores = np.where(excluded, -np.inf, brute)
            assert best is not None
            # Exact scores of a few rows may differ from the whole matrix's in the last bit (BLAS blocks
            # rows differently); twins, equal in either, go to the earliest.
            assert best.score == pytest.approx(open_scores.max(), abs=1e-12)
            assert best.position == int(np.flatnonzero(open_scores >= open_scores.max() - 1e-12)[0])

    @pytest.mark.parametrize("seed", range(4))
    def test_an_approximate_order_wrong_within_the_bound_still_gives_the_exact_best(self, seed: int) -> None:
        """Approximate scores off by up to the bound, in either direction, reorder the close tools; the
        answer is still the exact best (re-scored candidates), not the approximate one."""
        rng = np.random.default_rng(seed)
        exact = np.round(rng.uniform(0.0, 0.03, 5000), 4)  # crowded near the top, many exact ties
        error = 0.01
        for _ in range(20):
            approximate = exact + rng.uniform(-error, error, exact.shape)
            excluded = rng.random(exact.shape) < 0.3
            best = best_excluding(approximate, excluded, error, lambda p: exact[p])
            open_scores = np.where(excluded, -np.inf, exact)
            assert best is not None and best.score == open_scores.max()
            assert best.position == int(np.flatnonzero(open_scores == open_scores.max())[0])

    @pytest.mark.parametrize("tools", [1, EXACT_CHUNK, EXACT_CHUNK + 1, 3 * EXACT_CHUNK + 7])
    def test_exact_scores_one_column_per_text_in_chunks(
        self, tools: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Tools sharing texts (names apart only in ``_`` and ``-``) are re-scored once per text, at most
        :data:`EXACT_CHUNK` columns per product, and every position gets the score scoring it alone gives;
        without a layout, every position is scored, still in chunks."""
        rng = np.random.default_rng(tools)
        vectors = rng.standard_normal((5, 48)).astype(np.float32)
        layout = rng.integers(0, 5, tools).astype(np.intp)
        layout[: min(tools, 5)] = np.arange(min(tools, 5))
        columns = np.ascontiguousarray(vectors[layout].T)
        context = rng.standard_normal(48).astype(np.float32)
        alone = np.asarray([cosine_scores(context, columns[:, [i]].T)[0] for i in range(tools)])
        rows: list[int] = []

        def counted(query: object, candidates: object) -> object:
            rows.append(len(np.asarray(candidates)))
            return cosine_scores(query, candidates)  # type: ignore[arg-type]

        monkeypatch.setattr(_large_menu_scan, "cosine_scores", counted)
        positions = np.arange(tools, dtype=np.intp)
        shared = ToolMatrix(columns, np.ones(tools), layout).exact(context, positions)
        assert np.array_equal(shared, alone) and rows == [min(tools, 5)]
        rows.clear()
        whole = ToolMatrix(columns, np.ones(tools)).exact(context, positions)
        assert np.array_equal(whole, alone)
        assert sum(rows) == tools and max(rows) <= EXACT_CHUNK and len(rows) == -(-tools // EXACT_CHUNK)

    def test_ties_over_one_text_go_to_the_earliest_open_tool(self) -> None:
        """A menu of one text tied everywhere: the best other tool is the first not excluded."""
        tools = 2 * EXACT_CHUNK + 3
        matrix = ToolMatrix(
            np.ones((8, tools), dtype=np.float32), np.full(tools, 8**-0.5), np.zeros(tools, dtype=np.intp)
        )
        query = Query.of(np.ones(8, dtype=np.float32))
        excluded = np.zeros(tools, dtype=bool)
        excluded[:EXACT_CHUNK] = True
        context = np.ones(8, dtype=np.float32)
        best = best_excluding(
            matrix.approximate(query.unit, query.nonzero), excluded, 1e-6, lambda p: matrix.exact(context, p)
        )
        assert best is not None and best.position == EXACT_CHUNK and best.score == pytest.approx(1.0)

    def test_everything_excluded_has_no_best(self) -> None:
        """A menu whose every tool is chosen has no best other tool."""
        matrix = ToolMatrix(np.eye(4, dtype=np.float32), np.ones(4))
        query = Query.of(np.ones(4, dtype=np.float32))
        approximate = matrix.approximate(query.unit, query.nonzero)
        assert best_excluding(approximate, np.ones(4, dtype=bool), 1e-6, lambda p: approximate[p]) is None


class TestTextBounds:
    def test_a_huge_tool_name_is_cut_and_said(self) -> None:
        """A 10 MB name scores (on its first 256 characters) and the verdict says a text was cut."""
        huge = "x" * 10_000_000
        menu = (
            OfferedTool(huge, "Send an email."),
            OfferedTool("get_weather", "Current weather for a city."),
        )
        (verdict,) = ToolChoiceCheck(HashingEmbedder()).evaluate(
            [_subject(0, menu, ("get_weather",), "weather in Paris")]
        )
        assert verdict is not None and verdict.attributes[TOOL_CHOICE_TRUNCATED] is True

    def test_an_uncut_call_carries_no_truncated_attribute(self) -> None:
        """Without a cut the attribute is absent."""
        menu = (OfferedTool("send_email", "Send an email."), OfferedTool("get_weather", "Current weather."))
        (verdict,) = ToolChoiceCheck(HashingEmbedder()).evaluate(
            [_subject(0, menu, ("get_weather",), "weather")]
        )
        assert verdict is not None and TOOL_CHOICE_TRUNCATED not in verdict.attributes

    def test_a_long_user_message_is_a_cut_context(self) -> None:
        """A user message past max_slot_chars is cut, and said."""
        menu = (OfferedTool("send_email", "Send an email."), OfferedTool("get_weather", "Current weather."))
        check = ToolChoiceCheck(HashingEmbedder(), max_slot_chars=10)
        (verdict,) = check.evaluate([_subject(0, menu, ("get_weather",), "what is the weather in Paris")])
        assert verdict is not None and verdict.attributes[TOOL_CHOICE_TRUNCATED] is True

    def test_a_menu_over_its_byte_bound_is_skipped(self) -> None:
        """Tool text past max_menu_bytes makes the menu too large, whatever its tool count."""
        menu = tuple(OfferedTool(f"tool_{i}", "d" * 4000) for i in range(10))
        check = ToolChoiceCheck(HashingEmbedder(), max_menu_bytes=20_000)
        (verdict,) = check.evaluate([_subject(0, menu, ("tool_1",), "anything")])
        assert verdict is not None and verdict.attributes[TOOL_CHOICE_SKIPPED] == "menu-too-large"

    def test_a_menu_over_its_tool_count_is_skipped(self) -> None:
        """More distinct tools than max_menu_tools is too large; the count is still reported."""
        menu = tuple(OfferedTool(f"tool_{i}") for i in range(5))
        (verdict,) = ToolChoiceCheck(HashingEmbedder(), max_menu_tools=4).evaluate(
            [_subject(0, menu, ("tool_1",), "anything")]
        )
        assert verdict is not None and verdict.attributes[TOOL_CHOICE_SKIPPED] == "menu-too-large"


class TestHistory:
    def test_the_processors_own_check_keeps_no_calls(self) -> None:
        """Built-in checks (processor, offline check) keep nothing for a query API nobody can reach."""
        for checks in (builtin_checks(), build_checks("hashing")):
            (tool_choice,) = [check for check in checks if isinstance(check, ToolChoiceCheck)]
            assert not tool_choice.keeps_calls

    def test_keep_calls_false_keeps_nothing(self) -> None:
        """evaluate() with keep_calls=False leaves calls() empty."""
        menu = (OfferedTool("a", "one"), OfferedTool("b", "two"))
        check = ToolChoiceCheck(HashingEmbedder(), keep_calls=False)
        check.evaluate([_subject(i, menu, ("a",), "one") for i in range(5)])
        assert check.calls() == ()

    def test_history_is_bounded_in_bytes(self) -> None:
        """Distinct large menus fill the byte bound, and the oldest calls go."""
        check = ToolChoiceCheck(HashingEmbedder(), max_recorded_bytes=2_000_000, max_menu_tools=10**6)
        for turn in range(6):
            menu = tuple(OfferedTool(f"t{turn}_{i}", f"tool {i} of turn {turn}") for i in range(3000))
            check.evaluate([_subject(turn, menu, (menu[0].name,), "tool 0")])
        kept = check.calls()
        assert 0 < len(kept) < 6 and kept[-1].span_id == f"{5:016x}"

    def test_bad_keep_calls_raises(self) -> None:
        """keep_calls must be a bool."""
        with pytest.raises(ValueError, match="keep_calls"):
            ToolChoiceCheck(HashingEmbedder(), keep_calls="yes")  # type: ignore[arg-type]

"""Small menus scored from cached matrices: the same numbers as the general scoring, and the bounded cache."""

from __future__ import annotations

import random

import numpy as np
import pytest
from embedding.embedders import CharCountEmbedder

from otel_shapecheck import HashingEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._attributes import FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolParameter
from otel_shapecheck.checks.tool_choice._lexical import menu_lexicon
from otel_shapecheck.checks.tool_choice._margin import MarginResult, choice_context, score_margin
from otel_shapecheck.checks.tool_choice._plan import PlanCache, build_plan
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    CALIBRATED_MARGIN_THRESHOLD,
    SEED_MARGIN_THRESHOLD,
    calibrated_margin,
)
from otel_shapecheck.checks.tool_choice._small_menu_scoring import MenuMatrices, menu_matrices, small_margin
from otel_shapecheck.embedding._tool_index import confusability_text, parameter_text

_WORDS = [
    "storage",
    "capacity",
    "cluster",
    "weather",
    "city",
    "forecast",
    "order",
    "status",
    "refund",
    "invoice",
    "customer",
    "email",
    "send",
    "search",
    "flight",
    "hotel",
    "booking",
    "cancel",
    "price",
    "stock",
    "quote",
    "currency",
    "convert",
    "file",
    "upload",
    "delete",
    "user",
]


def _menu(rng: random.Random, size: int) -> tuple[OfferedTool, ...]:
    tools = []
    for position in range(size):
        words = rng.sample(_WORDS, 4)
        parameters = tuple(
            ToolParameter(name=f"{rng.choice(_WORDS)}_{i}", description=" ".join(rng.sample(_WORDS, 3)))
            for i in range(rng.randint(0, 2))
        )
        tools.append(
            OfferedTool(
                name=f"{words[0]}_{words[1]}_{position}", description=" ".join(words), parameters=parameters
            )
        )
    return tuple(tools)


def _same(lean: MarginResult, general: MarginResult) -> None:
    assert lean.names == general.names
    assert lean.order.tolist() == general.order.tolist()
    assert lean.ranked_scores.tolist() == general.ranked_scores.tolist()
    assert (lean.top, lean.best_chosen_score) == (general.top, general.best_chosen_score)
    assert (lean.margin, lean.cosine_margin) == (general.margin, general.cosine_margin)
    assert (lean.narrow, lean.proxy_disagreement, lean.chosen) == (
        general.narrow,
        general.proxy_disagreement,
        general.chosen,
    )


@pytest.mark.parametrize("embedder", [HashingEmbedder(), CharCountEmbedder()], ids=["hashing", "char-count"])
def test_small_menus_score_exactly_as_the_general_scorings(
    embedder: HashingEmbedder | CharCountEmbedder,
) -> None:
    rng = random.Random(7)
    for trial in range(120):
        offered = _menu(rng, rng.randint(2, 20))
        names = tuple(tool.name for tool in offered)
        seeds = [confusability_text(t.name, t.description) for t in offered]
        parameters = tuple(parameter_text(t.name, t.description, t.parameters) for t in offered)
        chosen = (rng.choice(names),) if trial % 3 else tuple(names)
        context_text = choice_context(" ".join(rng.sample(_WORDS, 6)), "then " + rng.choice(_WORDS))
        context = embedder.embed([context_text])[0]
        seed_vectors, parameter_vectors = embedder.embed(seeds), embedder.embed(list(parameters))
        calibrated = menu_matrices(1, 0, seed_vectors, parameter_vectors, menu_lexicon(parameters))
        _same(
            small_margin(
                context_text,
                context,
                names,
                calibrated,
                chosen,
                threshold=CALIBRATED_MARGIN_THRESHOLD,
                lexical_weight=CALIBRATED_LEXICAL_WEIGHT,
            ),
            calibrated_margin(
                context_text,
                context,
                names,
                seed_vectors,
                parameter_vectors,
                parameters,
                chosen,
                per_tool=False,
            ),
        )
        seed = menu_matrices(1, 0, seed_vectors, None, None)
        _same(
            small_margin(
                context_text,
                context,
                names,
                seed,
                chosen,
                threshold=SEED_MARGIN_THRESHOLD,
                lexical_weight=CALIBRATED_LEXICAL_WEIGHT,
            ),
            score_margin(context, names, seed_vectors, chosen, threshold=SEED_MARGIN_THRESHOLD),
        )


def test_an_all_zero_context_scores_zero_as_the_general_scoring_does() -> None:
    names = ("a_tool", "b_tool")
    vectors = HashingEmbedder().embed(["a tool", "b tool"])
    matrices = menu_matrices(1, 0, vectors, None, None)
    zero = np.zeros(vectors.shape[1], dtype=np.float32)
    lean = small_margin("", zero, names, matrices, ("b_tool",), threshold=0.05, lexical_weight=0.1)
    _same(lean, score_margin(zero, names, vectors, ("b_tool",), threshold=0.05))
    assert lean.ranked_scores.tolist() == [0.0, 0.0]


def test_wiring_errors_are_raised_as_by_the_general_scoring() -> None:
    vectors = HashingEmbedder().embed(["a tool", "b tool"])
    matrices = menu_matrices(1, 0, vectors, None, None)
    with pytest.raises(ValueError, match="not candidates"):
        small_margin("x", vectors[0], ("a", "b"), matrices, ("c",), threshold=0.05, lexical_weight=0.1)
    with pytest.raises(ValueError, match="vector lengths differ"):
        small_margin("x", vectors[0][:3], ("a", "b"), matrices, ("a",), threshold=0.05, lexical_weight=0.1)


def _matrices(tools: int, dims: int = 64) -> MenuMatrices:
    vectors = np.ones((tools, dims), dtype=np.float32)
    return menu_matrices(1, 0, vectors, vectors, None)


def _offered(name: str, tools: int = 2) -> tuple[OfferedTool, ...]:
    return tuple(OfferedTool(name=f"{name}_{i}", description=f"{name} tool {i}") for i in range(tools))


class TestPlanCacheMatrices:
    def test_matrices_are_kept_per_plan_and_counted_in_its_bytes(self) -> None:
        cache = PlanCache()
        plan = cache.plan(_offered("alpha"))
        matrices = _matrices(2)
        assert cache.keep_matrices(plan, matrices)
        assert cache.matrices(plan, 1, 0) is matrices
        assert cache.nbytes == plan.nbytes + matrices.nbytes
        assert matrices.nbytes >= 2 * 2 * 64 * 8

    def test_matrices_answer_only_for_their_index_and_reset_count(self) -> None:
        cache = PlanCache()
        plan = cache.plan(_offered("alpha"))
        cache.keep_matrices(plan, _matrices(2))
        assert cache.matrices(plan, 2, 0) is None  # another tool index
        assert cache.matrices(plan, 1, 1) is None  # the index started over since

    def test_matrices_are_keyed_by_the_plan_kept_for_that_menu(self) -> None:
        cache = PlanCache()
        offered = _offered("alpha")
        cache.plan(offered)
        stranger = build_plan(offered)  # the same content, planned elsewhere
        assert not cache.keep_matrices(stranger, _matrices(2))
        assert cache.matrices(stranger, 1, 0) is None

    def test_matrices_past_the_byte_bound_evict_the_oldest_menus(self) -> None:
        first, second = _offered("alpha"), _offered("beta")
        probe = PlanCache()
        budget = probe.plan(first).nbytes + probe.plan(second).nbytes + _matrices(2).nbytes + 1
        cache = PlanCache(max_bytes=budget)
        old, new = cache.plan(first), cache.plan(second)
        assert cache.keep_matrices(old, _matrices(2))
        assert len(cache) == 2
        assert cache.keep_matrices(new, _matrices(2))
        assert len(cache) == 1
        assert cache.matrices(old, 1, 0) is None
        assert cache.matrices(new, 1, 0) is not None
        assert cache.nbytes <= budget

    def test_matrices_bigger_than_the_bound_are_not_kept(self) -> None:
        offered = _offered("alpha")
        plan_bytes = PlanCache().plan(offered).nbytes
        cache = PlanCache(max_bytes=plan_bytes + 100)
        plan = cache.plan(offered)
        assert not cache.keep_matrices(plan, _matrices(2))
        assert cache.matrices(plan, 1, 0) is None
        assert cache.nbytes == plan_bytes

    def test_evicting_a_plan_drops_its_matrices(self) -> None:
        cache = PlanCache(max_plans=1)
        plan = cache.plan(_offered("alpha"))
        cache.keep_matrices(plan, _matrices(2))
        cache.plan(_offered("beta"))
        assert cache.matrices(plan, 1, 0) is None
        assert len(cache) == 1


def _subject(index: int, offered: tuple[OfferedTool, ...], chosen: str, user: str) -> Subject:
    span_id = format(index + 1, "016x")
    call = LLMCall(
        span_id=span_id,
        trace_id="3" * 32,
        user_text=user,
        offered_tools=offered,
        tool_calls=(ToolCall(name=chosen, call_id=f"c{index}"),),
    )
    return Subject(span_id=span_id, trace_id="3" * 32, llm_call=call)


def test_the_check_scores_a_recurring_menu_from_its_kept_matrices_with_unchanged_verdicts() -> None:
    offered = (
        OfferedTool(name="get_capacity", description="Usable storage of a cluster"),
        OfferedTool(name="get_weather", description="Current weather for a city"),
    )
    questions = [f"How much storage has cluster {i}?" for i in range(6)] + ["What is the weather in Oslo?"]
    subjects = [_subject(i, offered, "get_capacity", q) for i, q in enumerate(questions)]
    check = ToolChoiceCheck(HashingEmbedder())
    first = check.evaluate(subjects[:1])
    rest = check.evaluate(subjects[1:])
    cold = ToolChoiceCheck(HashingEmbedder())
    one_by_one = [cold.evaluate([subject])[0] for subject in subjects]
    fresh_each = [ToolChoiceCheck(HashingEmbedder()).evaluate([subject])[0] for subject in subjects]
    assert [v.attributes if v else None for v in first + rest] == [
        v.attributes if v else None for v in fresh_each
    ]
    assert [v.attributes if v else None for v in one_by_one] == [
        v.attributes if v else None for v in fresh_each
    ]
    assert check._plans.matrices(check._plans.plan(offered), id(check.tool_index), check.tool_index.resets)
    assert (
        rest[-1] is not None and FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT in rest[-1].flags
    )  # the weather question
    assert rest[0] is not None and not rest[0].flags

"""Same call, same verdict bit for bit, however the worker batched it and wherever its tools sit.

The evaluation worker scores whatever calls a batch holds together, and a menu reaches the check in the
order the application wrote it; neither may reach the last bit of a margin. Each call here is scored
alone in a fresh check, then among other calls (batches of 2, 7 and 64, in a check that has seen other
menus already, in reverse order too) and with its menu reordered; the verdict attributes must be equal
as written (``repr`` of every float), on small, lean-limit, general and indexed (large) menus.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace

import pytest

from otel_shapecheck import HashingEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall
from otel_shapecheck.checks.tool_choice._large_menu_scan import INDEX_MENU_TOOLS
from otel_shapecheck.checks.tool_choice._small_menu_scoring import MAX_LEAN_TOOLS
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._minilm import MiniLMEmbedder

_VOCABULARY = (
    "storage capacity cluster weather city forecast order status refund invoice customer email send "
    "search flight hotel booking cancel price stock quote currency convert file upload delete user disk "
    "region alert health report billing ticket support monthly usage location"
)
_WORDS = tuple(_VOCABULARY.split())

SIZES = (3, 7, MAX_LEAN_TOOLS, MAX_LEAN_TOOLS + 9, 150)
SCORINGS = ("calibrated", "seed")
_MINILM = EmbeddingCache(MiniLMEmbedder(), path="none", max_entries=50_000)
"""One MiniLM shared by the checks here (its vectors are the same in any batch; the model loads once)."""
EMBEDDERS = {"hashing": HashingEmbedder, "minilm": lambda: _MINILM}


def _menu(rng: random.Random, size: int) -> tuple[OfferedTool, ...]:
    return tuple(
        OfferedTool(
            name=f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{position}",
            description=" ".join(rng.sample(_WORDS, rng.randint(3, 9))),
        )
        for position in range(size)
    )


def _subject(rng: random.Random, span: str, menu: tuple[OfferedTool, ...], chosen: int) -> Subject:
    picked = tuple(tool.name for tool in rng.sample(menu, chosen))
    call = LLMCall(
        span_id=span,
        trace_id="0" * 32,
        offered_tools=menu,
        tool_calls=tuple(ToolCall(name, f"call_{i}") for i, name in enumerate(picked)),
        user_text=f"{' '.join(rng.choices(_WORDS, k=rng.randint(4, 30)))}. {' '.join(rng.sample(_WORDS, 5))}",
        response_id=f"resp-{span}",
    )
    return Subject(span_id=span, trace_id="0" * 32, llm_call=call)


def _calls(seed: int, count: int, sizes: Sequence[int]) -> list[Subject]:
    rng = random.Random(seed)
    menus = [_menu(rng, size) for size in sizes]
    return [
        _subject(rng, f"{seed}-{i}", menu, rng.choice((1, 1, 2, 3)))
        for i, menu in ((i, rng.choice(menus)) for i in range(count))
    ]


def _written(check: ToolChoiceCheck, batch: Sequence[Subject]) -> dict[str, str]:
    """Each span's verdict attributes and score as written (``repr``: every bit of every float)."""
    verdicts = check.evaluate(batch)
    out = {}
    for subject, verdict in zip(batch, verdicts, strict=True):
        assert verdict is not None
        out[subject.span_id] = repr((sorted(verdict.attributes.items()), verdict.score, verdict.flags))
    return out


@pytest.mark.parametrize(
    ("embedder", "targets", "sizes"),
    [("hashing", 12, (2, 7, 64)), ("minilm", 4, (2, 7))],  # MiniLM: fewer texts, each costs milliseconds
)
@pytest.mark.parametrize("scoring", SCORINGS)
def test_a_call_scores_the_same_alone_and_in_any_batch(
    embedder: str, targets: int, sizes: tuple[int, ...], scoring: str
) -> None:
    new = EMBEDDERS[embedder]
    calls = _calls(1, targets, SIZES)
    alone = {}
    for subject in calls:
        alone.update(_written(ToolChoiceCheck(new(), scoring=scoring), [subject]))
    warm = ToolChoiceCheck(new(), scoring=scoring)
    _written(warm, _calls(2, 20, SIZES))  # plans, matrices and index rows built by other batches
    for size in sizes:
        others = _calls(100 + size, (size - 1) * len(calls), SIZES)
        for j, subject in enumerate(calls):
            batch = others[j * (size - 1) : (j + 1) * (size - 1)]
            batch.insert(random.Random(j).randint(0, len(batch)), subject)
            for check in (warm, ToolChoiceCheck(new(), scoring=scoring)):
                for order in (batch, batch[::-1]):
                    assert _written(check, order)[subject.span_id] == alone[subject.span_id], size


@pytest.mark.parametrize("embedder", sorted(EMBEDDERS))
@pytest.mark.parametrize("scoring", SCORINGS)
@pytest.mark.parametrize("size", SIZES)
def test_a_call_scores_the_same_whatever_its_menus_order(embedder: str, scoring: str, size: int) -> None:
    rng = random.Random(size)
    new = EMBEDDERS[embedder]
    for i in range(3 if embedder == "minilm" else 6):
        menu = _menu(rng, size)
        subject = _subject(rng, f"m{i}", menu, rng.choice((1, 2)))
        expected = _written(ToolChoiceCheck(new(), scoring=scoring), [subject])
        assert subject.llm_call is not None
        for shuffled in (menu[::-1], menu[1:] + menu[:1], tuple(rng.sample(menu, len(menu)))):
            moved = replace(subject, llm_call=_with_menu(subject.llm_call, shuffled))
            got = _written(ToolChoiceCheck(new(), scoring=scoring), [moved])
            assert got == expected


@pytest.mark.parametrize("scoring", SCORINGS)
def test_a_large_menus_call_scores_the_same_alone_in_a_batch_and_reordered(scoring: str) -> None:
    rng = random.Random(7)
    menu = _menu(rng, INDEX_MENU_TOOLS + 40)
    small = _calls(3, 10, (5, 60))
    targets = [_subject(rng, f"L{i}", menu, rng.choice((1, 2))) for i in range(4)]
    check = ToolChoiceCheck(HashingEmbedder(), scoring=scoring)
    alone = {}
    for subject in targets:
        alone.update(_written(check, [subject]))
    assert all("margin" in text for text in alone.values())
    together = _written(ToolChoiceCheck(HashingEmbedder(), scoring=scoring), small[:5] + targets + small[5:])
    assert {span: together[span] for span in alone} == alone
    reordered = menu[::-1]
    for subject in targets:
        assert subject.llm_call is not None
        moved = replace(subject, llm_call=_with_menu(subject.llm_call, reordered))
        assert _written(check, [moved]) == {subject.span_id: alone[subject.span_id]}


def _with_menu(call: LLMCall, menu: tuple[OfferedTool, ...]) -> LLMCall:
    """``call`` offering ``menu`` instead of its own."""
    return replace(call, offered_tools=menu)

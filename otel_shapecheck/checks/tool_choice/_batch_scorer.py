"""Scoring a batch of tool-choice calls: one embed call, then each call's menu by its size.

The batch's distinct contexts, clauses and the tool texts the tool index lacks are embedded in one call;
when the embedder raises on some of them, they are isolated (:mod:`~otel_shapecheck.embedding._isolate`)
and only the calls that need one are skipped, as ``embedding-failed``.
A menu of up to :data:`~._large_menu_scan.INDEX_MENU_TOOLS` tools is ranked whole from scoring matrices
read once from the tool index and kept with its plan (in plain Python floats up to
:data:`~._small_menu_scoring.MAX_LEAN_TOOLS` tools); a larger one is scored by one bounded scan of its
own column matrices (:mod:`~._large_menu_scoring`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace

from otel_shapecheck.checks.tool_choice._calls import ToolChoiceCall
from otel_shapecheck.checks.tool_choice._labels import SKIP_EMBEDDING_FAILED
from otel_shapecheck.checks.tool_choice._large_menu_scan import INDEX_MENU_TOOLS, MenuIndexes
from otel_shapecheck.checks.tool_choice._large_menu_scoring import build_menu_index, score_large
from otel_shapecheck.checks.tool_choice._lexical import menu_lexicon
from otel_shapecheck.checks.tool_choice._margin import MarginResult, score_margin
from otel_shapecheck.checks.tool_choice._plan import MenuPlan, PlanCache
from otel_shapecheck.checks.tool_choice._scoring import (
    CALIBRATED_LEXICAL_WEIGHT,
    SCORING_CALIBRATED,
    calibrated_margin,
    needs_segments,
)
from otel_shapecheck.checks.tool_choice._small_menu_scoring import (
    MAX_LEAN_TOOLS,
    MenuMatrices,
    menu_matrices,
    small_margin,
)
from otel_shapecheck.embedding._isolate import embed_around_failures
from otel_shapecheck.embedding._tool_index import ToolIndex
from otel_shapecheck.embedding._vectors import FloatMatrix

logger = logging.getLogger(__name__)


class BatchScorer:
    """Fills in the rankings of a batch of calls, from one embed call over the distinct new texts.

    Holds what scoring needs between batches: the tool index, the menu plans it shares with the check
    (each small menu's matrices are kept beside its plan) and the column matrices of recent large menus.
    """

    def __init__(
        self,
        index: ToolIndex,
        plans: PlanCache,
        *,
        scoring: str,
        threshold: float,
        max_indexed_tools: int,
    ) -> None:
        self.index = index
        self.plans = plans
        self.menu_indexes = MenuIndexes(max_indexed_tools)
        self._scoring = scoring
        self._threshold = threshold
        self._large_menu_failed = False

    def scored(self, calls: Sequence[ToolChoiceCall]) -> list[ToolChoiceCall]:
        """``calls`` with rankings filled in, from one embed call over the distinct new texts."""
        to_score = [call for call in calls if call.skipped is None and call.result is None and call._menu]
        if not to_score:
            return list(calls)
        calibrated = self._scoring == SCORING_CALIBRATED
        index_key = id(self.index)
        small = [call for call in to_score if len(call.offered) <= INDEX_MENU_TOOLS]
        tool_texts: list[str] = []
        for call in small:
            plan = call._menu
            assert plan is not None
            known = plan.rows.get(index_key)
            if known is None or known[0] != self.index.resets:
                tool_texts.extend(plan.seed_texts)
                if calibrated:
                    tool_texts.extend(plan.parameter_texts)
        missing = self.index.missing(tool_texts) if tool_texts else []
        views = [text for call in to_score for text in (call.context_text, *call.segments)]
        embedded = embed_around_failures(self.index.embedder, views + missing)
        vectors = embedded.vectors
        fresh = {text: vectors[text] for text in missing if text in vectors}
        results: dict[int, MarginResult | None] = {}
        for call in to_score:
            plan = call._menu
            assert plan is not None
            if embedded.failed and _needs_any(call, plan, embedded.failed):
                results[id(call)] = None
            elif len(call.offered) > INDEX_MENU_TOOLS:
                results[id(call)] = self._score_large(call, plan, vectors)
            else:
                results[id(call)] = self._score_small(call, plan, vectors, fresh, calibrated)
        return [_with_result(call, results[id(call)]) if id(call) in results else call for call in calls]

    def _score_small(
        self,
        call: ToolChoiceCall,
        plan: MenuPlan,
        vectors: dict[str, FloatMatrix],
        fresh: dict[str, FloatMatrix],
        calibrated: bool,
    ) -> MarginResult:
        index_key = id(self.index)
        matrices = self.plans.matrices(plan, index_key, self.index.resets)
        if matrices is None:
            matrices = self._menu_matrices(plan, fresh, calibrated)
            self.plans.keep_matrices(plan, matrices)
        context = vectors[call.context_text]
        per_tool = calibrated and needs_segments(len(plan.names), len(set(call.chosen)))
        if len(plan.names) <= MAX_LEAN_TOOLS and not per_tool:
            return small_margin(
                call.context_text,
                context,
                plan.names,
                matrices,
                call.chosen,
                threshold=self._threshold,
                lexical_weight=CALIBRATED_LEXICAL_WEIGHT,
            )
        if not calibrated:
            return score_margin(context, plan.names, matrices.seed, call.chosen, threshold=self._threshold)
        return calibrated_margin(
            call.context_text,
            context,
            plan.names,
            matrices.seed,
            matrices.parameter,
            plan.parameter_texts,
            call.chosen,
            threshold=self._threshold,
            segments=[(text, vectors[text]) for text in call.segments],
        )

    def _menu_matrices(self, plan: MenuPlan, fresh: dict[str, FloatMatrix], calibrated: bool) -> MenuMatrices:
        """The menu's scoring matrices, read from the tool index (its rows remembered on the plan)."""
        index_key = id(self.index)
        known = plan.rows.get(index_key)
        seed_known = (known[0], known[1]) if known is not None else None
        seed_rows, seed_vectors = self.index.lookup(plan.seed_texts, fresh, seed_known)
        if not calibrated:
            plan.rows[index_key] = (seed_rows[0], seed_rows[1], seed_rows[1])
            return menu_matrices(index_key, seed_rows[0], seed_vectors, None, None)
        parameter_known = (known[0], known[2]) if known is not None else None
        parameter_rows, parameter_vectors = self.index.lookup(plan.parameter_texts, fresh, parameter_known)
        if seed_rows[0] == parameter_rows[0]:
            plan.rows[index_key] = (seed_rows[0], seed_rows[1], parameter_rows[1])
        else:  # the index started over in between: the seed rows are stale, read them again
            seed_rows, seed_vectors = self.index.lookup(plan.seed_texts, fresh)
        lexicon = menu_lexicon(plan.parameter_texts)
        return menu_matrices(index_key, seed_rows[0], seed_vectors, parameter_vectors, lexicon)

    def _score_large(
        self, call: ToolChoiceCall, plan: MenuPlan, vectors: dict[str, FloatMatrix]
    ) -> MarginResult | None:
        calibrated = self._scoring == SCORING_CALIBRATED
        try:
            menu = self.menu_indexes.get(
                plan.key + self._scoring.encode(),
                lambda: build_menu_index(plan, self.index.embedder, calibrated=calibrated),
            )
        except Exception as error:  # the embedder refused a text of this menu; the batch's texts embedded
            if not self._large_menu_failed:
                self._large_menu_failed = True
                logger.warning(
                    "embedding a large menu raised %s; its calls are skipped as embedding-failed "
                    "(logged once)",
                    type(error).__name__,
                )
            return None
        return score_large(
            menu,
            call.context_text,
            vectors[call.context_text],
            call.chosen,
            calibrated=calibrated,
            threshold=self._threshold,
            lexical_weight=CALIBRATED_LEXICAL_WEIGHT,
            segments=[(text, vectors[text]) for text in call.segments],
        )


def _needs_any(call: ToolChoiceCall, plan: MenuPlan, failed: frozenset[str]) -> bool:
    """Whether scoring ``call`` needs one of the texts the embedder failed on (its own or its menu's)."""
    if call.context_text in failed or not failed.isdisjoint(call.segments):
        return True
    return len(call.offered) <= INDEX_MENU_TOOLS and not (
        failed.isdisjoint(plan.seed_texts) and failed.isdisjoint(plan.parameter_texts)
    )


def _with_result(call: ToolChoiceCall, result: MarginResult | None) -> ToolChoiceCall:
    """``call`` scored, or skipped as ``embedding-failed`` when a text it needs could not be embedded."""
    if result is None:
        return replace(call, skipped=SKIP_EMBEDDING_FAILED, _menu=None)
    return replace(call, result=result)

"""The tool-choice check: how clearly the choice context favours the tools the model chose over the rest.

Ported from agentfootprint's tool-choice recorder; the margin itself is :func:`score_margin`. For every
LLM call that offered tools, the *choice context* (the turn's user message, plus the latest assistant
text of the turn) and each offered tool's :func:`confusability_text` are embedded;
``margin = best chosen − best other`` cosine. A margin under the threshold is ``narrow`` (negative
margins included) and a top-scored tool the model did not choose is a ``proxy_disagreement``. The
margin is an embedding-geometry proxy for the model's selection, never an account of why the model chose.

Nothing is embedded where calls are recorded: the processor's worker calls :meth:`ToolChoiceCheck.evaluate`
in batches (one embed call per batch, made by its :class:`~._batch_scorer.BatchScorer`), and
:meth:`ToolChoiceCheck.record` only keeps strings that the first read of :meth:`~ToolChoiceCheck.calls`,
:meth:`~ToolChoiceCheck.flagged` or :meth:`~ToolChoiceCheck.summary` scores and memoises.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

from otel_shapecheck import _settings
from otel_shapecheck._attributes import (
    EVALUATION_TOOL_CHOICE,
    FLAG_TOOL_CHOICE_NARROW,
    FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_EMBEDDER,
    TOOL_CHOICE_MENU_SOURCE,
    TOOL_CHOICE_OFFERED_COUNT,
    TOOL_CHOICE_SCORING,
    TOOL_CHOICE_SKIPPED,
    TOOL_CHOICE_TRUNCATED,
)
from otel_shapecheck._model import LLMCall, OfferedTool
from otel_shapecheck._settings_table import TOOL_CHOICE
from otel_shapecheck.checks._base import AttributeValue, Subject, Verdict
from otel_shapecheck.checks.tool_choice._batch_scorer import BatchScorer
from otel_shapecheck.checks.tool_choice._calls import ToolChoiceCall, ToolChoiceSummary
from otel_shapecheck.checks.tool_choice._history import CallHistory
from otel_shapecheck.checks.tool_choice._labels import (
    SKIP_ANSWER_TOOL,
    SKIP_MENU_TOO_LARGE,
    SKIP_NO_MENU,
    explanation,
    result_attributes,
    skip_reason,
)
from otel_shapecheck.checks.tool_choice._large_menu_scan import MenuIndexes
from otel_shapecheck.checks.tool_choice._margin import choice_context
from otel_shapecheck.checks.tool_choice._plan import MenuPlan, PlanCache
from otel_shapecheck.checks.tool_choice._scoring import (
    SCORING_CALIBRATED,
    default_threshold,
    needs_segments,
    segment_texts,
)
from otel_shapecheck.embedding._cache import EmbeddingCache, cached
from otel_shapecheck.embedding._embedders import Embedder, MiniLMEmbedder
from otel_shapecheck.embedding._tool_index import ToolIndex

logger = logging.getLogger(__name__)


_DEFAULT_MAX_RECORDED_CALLS = 1024
_DEFAULT_MAX_RECORDED_BYTES = 16 * 1024 * 1024
_SETTING = {setting.name: setting for setting in TOOL_CHOICE}
"""This check's settings, from the one table (names, variables, defaults, validation)."""
_DEFAULT_MAX_INDEXED_TOOLS = 100_000


_default_index_lock = threading.Lock()
_default_index: ToolIndex | None = None


def _shared_minilm_index() -> ToolIndex:
    """One cached MiniLM embedder and tool index per process, for every check built without an embedder."""
    global _default_index
    with _default_index_lock:
        if _default_index is None:
            _default_index = ToolIndex(EmbeddingCache(MiniLMEmbedder()))
        return _default_index


class ToolChoiceCheck:
    """The tool-choice check: a :class:`~otel_shapecheck.Check` and an in-process query API.

    ``evaluate`` scores a batch and keeps the results for :meth:`calls`; :meth:`record` keeps a call for
    lazy scoring on the next read. The embedder is wrapped in an :class:`EmbeddingCache` (unless it is
    one) and fills a :class:`ToolIndex`; without an embedder, a process-wide MiniLM index is shared and
    the model loads on the first call that needs a vector.

    ``scoring`` is ``calibrated`` (the default: parameter-aware text, lexical fusion, each of several
    chosen tools scored) or ``seed`` (the ported rule exactly); see
    :mod:`~otel_shapecheck.checks.tool_choice._scoring`. The threshold defaults to the scoring's own
    (0.03125 calibrated, applied to the margin as a share of the top score; 0.05 seed); a
    ``margin_threshold`` or its variable, when set, applies to either.

    Env vars:
        :envvar:`OTEL_SHAPECHECK_TOOL_CHOICE_SCORING` (default ``calibrated``),
        :envvar:`OTEL_SHAPECHECK_MARGIN_THRESHOLD` (default: the scoring's),
        :envvar:`OTEL_SHAPECHECK_MAX_SLOT_CHARS` (default 2000).
    """

    name = EVALUATION_TOOL_CHOICE

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        scoring: str | None = None,
        margin_threshold: float | None = None,
        max_slot_chars: int | None = None,
        max_recorded_calls: int | None = None,
        max_recorded_bytes: int | None = None,
        keep_calls: bool = True,
        max_menu_tools: int | None = None,
        max_menu_bytes: int | None = None,
        max_indexed_tools: int | None = None,
        tool_index: ToolIndex | None = None,
    ) -> None:
        self._scoring: str = _SETTING["scoring"].resolve(scoring)
        self._threshold: float = _SETTING["margin_threshold"].resolve(
            margin_threshold,
            default=default_threshold(self._scoring),  # the scoring's default
        )
        self._max_slot_chars: int = _SETTING["max_slot_chars"].resolve(max_slot_chars)
        max_recorded = _settings.positive_int(
            "max_recorded_calls", max_recorded_calls, None, _DEFAULT_MAX_RECORDED_CALLS
        )
        recorded_bytes = _settings.positive_int(
            "max_recorded_bytes", max_recorded_bytes, None, _DEFAULT_MAX_RECORDED_BYTES
        )
        self._max_menu_tools: int = _SETTING["max_menu_tools"].resolve(max_menu_tools)
        self._max_menu_bytes: int = _SETTING["max_menu_bytes"].resolve(max_menu_bytes)
        indexed = _settings.positive_int(
            "max_indexed_tools", max_indexed_tools, None, _DEFAULT_MAX_INDEXED_TOOLS
        )
        if not isinstance(keep_calls, bool):
            raise ValueError(f"keep_calls={keep_calls!r} is not a valid value: keep_calls must be a bool")
        if tool_index is not None:
            self._index = tool_index
        elif embedder is None:
            self._index = _shared_minilm_index()
        else:
            self._index = ToolIndex(cached(embedder))
        self._keep_calls = keep_calls
        self._pending = CallHistory(max_recorded, recorded_bytes)
        self._history = CallHistory(max_recorded, recorded_bytes)
        self._plans = PlanCache()
        self._scorer = BatchScorer(
            self._index,
            self._plans,
            scoring=self._scoring,
            threshold=self._threshold,
            max_indexed_tools=indexed,
        )
        self._lock = threading.Lock()  # one scoring of pending calls at a time

    @property
    def embedder(self) -> Embedder:
        """The (cached) embedder that produces the scores."""
        return self._index.embedder

    @property
    def tool_index(self) -> ToolIndex:
        """The tool index (shareable with :func:`~otel_shapecheck.lint_catalog`)."""
        return self._index

    @property
    def scoring(self) -> str:
        """``calibrated`` or ``seed``: how choices are scored."""
        return self._scoring

    @property
    def margin_threshold(self) -> float:
        """Margins below this are narrow."""
        return self._threshold

    @property
    def max_menu_tools(self) -> int:
        """Distinct tools a scored menu may have (more: ``menu-too-large``)."""
        return self._max_menu_tools

    @property
    def max_menu_bytes(self) -> int:
        """Characters of tool text a scored menu may hold (more: ``menu-too-large``)."""
        return self._max_menu_bytes

    @property
    def max_slot_chars(self) -> int:
        """Characters kept from each slot of the choice context."""
        return self._max_slot_chars

    @property
    def keeps_calls(self) -> bool:
        """Whether :meth:`evaluate` keeps its calls for :meth:`calls` (the processor's own check does not)."""
        return self._keep_calls

    @property
    def menu_indexes(self) -> MenuIndexes:
        """The indexes of large menus (more than 2 048 tools) scored by search."""
        return self._scorer.menu_indexes

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        """One verdict per subject whose LLM call offered or invoked tools, else ``None``; one embed call."""
        calls = [self._call_of(subject) for subject in subjects]
        scored = self._scorer.scored([call for call in calls if call is not None])
        in_order = iter(scored)
        verdicts = [self._verdict(next(in_order)) if call is not None else None for call in calls]
        if self._keep_calls:
            self._history.extend(scored)
        return verdicts

    def record(self, subjects: Subject | Sequence[Subject]) -> None:
        """Keep the calls of ``subjects`` for scoring on the next read; copies strings, embeds nothing."""
        batch = [subjects] if isinstance(subjects, Subject) else subjects
        self._pending.extend(call for call in map(self._call_of, batch) if call is not None)

    def calls(self) -> tuple[ToolChoiceCall, ...]:
        """Every retained call, oldest first, scoring pending ones first (memoised).

        Retained are the newest ``max_recorded_calls`` (default 1 024) within ``max_recorded_bytes``
        (estimated, default 16 MiB) of calls given to :meth:`evaluate` (unless ``keep_calls=False``) or
        to :meth:`record`.
        """
        with self._lock:
            pending = self._pending.take()
            if pending:
                try:
                    scored = self._scorer.scored(pending)
                except Exception:
                    self._pending.put_back(pending)
                    raise
                self._history.extend(scored)
            return self._history.snapshot()

    def flagged(self) -> tuple[ToolChoiceCall, ...]:
        """Scored calls that are narrow or in disagreement."""
        return tuple(call for call in self.calls() if call.flagged)

    def summary(self) -> ToolChoiceSummary:
        """The seven counts over :meth:`calls`."""
        calls = self.calls()
        results = [call.result for call in calls if call.result is not None]
        return ToolChoiceSummary(
            llm_calls_with_tools=len(calls),
            choices=sum(1 for call in calls if call.chosen),
            scored=len(results),
            flagged=sum(1 for result in results if result.flagged),
            narrow=sum(1 for result in results if result.narrow),
            proxy_disagreement=sum(1 for result in results if result.proxy_disagreement),
            skipped=sum(1 for call in calls if call.skipped is not None),
        )

    def clear(self) -> None:
        """Forget every recorded and scored call."""
        self._pending.clear()
        self._history.clear()

    def _call_of(self, subject: Subject) -> ToolChoiceCall | None:
        call = subject.llm_call
        if call is None:
            return None
        raw = call.offered_tools or ()
        too_many = len(raw) > self._max_menu_tools and len({t.name for t in raw}) > self._max_menu_tools
        plan = None if too_many or not raw else self._plans.plan(raw)
        offered = plan.offered if plan is not None else _first_of_each_name(raw)
        if call.answer_tool is not None and not call.chosen:
            return self._unscored(call, plan, offered, SKIP_ANSWER_TOOL)
        if not offered:
            if call.chosen and not call.offered_tools:
                return self._unscored(call, None, (), SKIP_NO_MENU)
            return None
        incomplete = subject.incomplete and call.tool_calls is None
        skipped = skip_reason(call, incomplete, plan.name_set if plan is not None else None)
        if skipped is None and (plan is None or plan.text_chars > self._max_menu_bytes):
            skipped = SKIP_MENU_TOO_LARGE
        return self._unscored(call, plan, offered, skipped)

    def _unscored(
        self,
        call: LLMCall,
        plan: MenuPlan | None,
        offered: tuple[OfferedTool, ...],
        skipped: str | None,
    ) -> ToolChoiceCall:
        context = ""
        segments: tuple[str, ...] = ()
        user = call.user_text or ""
        latest = (call.assistant_text or "").strip()
        if user.strip():
            context = choice_context(user, call.assistant_text, max_slot_chars=self._max_slot_chars)
            per_tool = skipped is None and needs_segments(len(offered), len(call.chosen))
            if self._scoring == SCORING_CALIBRATED and per_tool:
                segments = segment_texts(user, call.assistant_text, max_slot_chars=self._max_slot_chars)
        cut = len(user) > self._max_slot_chars or len(latest) > self._max_slot_chars
        return ToolChoiceCall(
            span_id=call.span_id,
            trace_id=call.trace_id,
            offered=offered,
            chosen=call.chosen,
            tool_call_ids=call.tool_call_ids,
            context_text=context,
            segments=segments,
            skipped=skipped,
            response_id=call.response_id,
            menu_source=call.menu_source if offered else None,
            truncated=cut or (plan is not None and plan.cut),
            menu_bytes=plan.nbytes if plan is not None else 0,
            _menu=plan if skipped is None else None,
        )

    def _verdict(self, call: ToolChoiceCall) -> Verdict:
        attributes: dict[str, AttributeValue] = {TOOL_CHOICE_CHOSEN: call.chosen}
        if call.offered:
            attributes[TOOL_CHOICE_OFFERED_COUNT] = len(call.offered)
            if call.menu_source:
                attributes[TOOL_CHOICE_MENU_SOURCE] = call.menu_source
        flags: list[str] = []
        result = call.result
        if call.skipped is not None:
            attributes[TOOL_CHOICE_SKIPPED] = call.skipped
        if result is not None:
            attributes.update(result_attributes(result))
            if call.truncated:
                attributes[TOOL_CHOICE_TRUNCATED] = True
            attributes[TOOL_CHOICE_EMBEDDER] = self._index.embedder.id
            attributes[TOOL_CHOICE_SCORING] = self._scoring
            if result.narrow:
                flags.append(FLAG_TOOL_CHOICE_NARROW)
            if result.proxy_disagreement:
                flags.append(FLAG_TOOL_CHOICE_PROXY_DISAGREEMENT)
        label, text = explanation(result, call.skipped, self._threshold)
        return Verdict(
            evaluation=EVALUATION_TOOL_CHOICE,
            attributes=attributes,
            label=label,
            explanation=text,
            score=result.margin if result is not None else None,
            flags=tuple(flags),
            response_id=call.response_id,
            content_keys=_INVENTED_NAMES if _names_a_tool_not_offered(call) else frozenset(),
        )


_INVENTED_NAMES = frozenset({TOOL_CHOICE_CHOSEN})


def _names_a_tool_not_offered(call: ToolChoiceCall) -> bool:
    """Whether ``chosen`` holds a name the model wrote that is not on the menu (content, not a tool)."""
    if call._menu is not None:
        return any(name not in call._menu.name_set for name in call.chosen)
    offered = {tool.name for tool in call.offered}
    return any(name not in offered for name in call.chosen)


def _first_of_each_name(tools: tuple[OfferedTool, ...]) -> tuple[OfferedTool, ...]:
    unique: dict[str, OfferedTool] = {}
    for tool in tools:
        unique.setdefault(tool.name, tool)
    return tuple(unique.values())

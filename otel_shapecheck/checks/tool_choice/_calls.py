"""What the tool-choice check records of each call it saw, and the counts over them (the query API)."""

from __future__ import annotations

from dataclasses import dataclass, field

from otel_shapecheck._model import OfferedTool
from otel_shapecheck.checks.tool_choice._margin import MarginResult
from otel_shapecheck.checks.tool_choice._plan import MenuPlan


@dataclass(frozen=True)
class ToolChoiceCall:
    """One LLM call that offered tools (or invoked tools with no menu captured), as the query API sees it."""

    span_id: str
    trace_id: str
    offered: tuple[OfferedTool, ...]
    """The menu as the model saw it, duplicates removed (first wins); empty when none was captured."""
    chosen: tuple[str, ...]
    """Unique invoked tool names, first-call order."""
    tool_call_ids: tuple[str, ...]
    context_text: str
    """The choice context that is (or will be) embedded."""
    segments: tuple[str, ...] = ()
    """Clause views of the context, embedded too when the calibrated scoring scores each chosen tool."""
    result: MarginResult | None = None
    """The ranking, once scored; stays ``None`` when ``skipped`` says why it never will be."""
    skipped: str | None = None
    response_id: str | None = None
    menu_source: str | None = None
    """``span`` or ``ancestor``: whose span the menu was read from."""
    truncated: bool = False
    """A text the score depends on was cut before embedding (a context slot, a tool name or text)."""
    menu_bytes: int = 0
    """Estimated bytes of the parsed menu (what keeping this call may keep alive)."""
    _menu: MenuPlan | None = field(default=None, repr=False, compare=False)

    @property
    def flagged(self) -> bool:
        """Scored, and narrow or in disagreement."""
        return self.result is not None and self.result.flagged


@dataclass(frozen=True)
class ToolChoiceSummary:
    """Counts over the recorded calls."""

    llm_calls_with_tools: int
    """Calls that offered tools, or invoked tools with no menu captured."""
    choices: int
    """Calls where the model invoked at least one tool."""
    scored: int
    """Calls with a ranking."""
    flagged: int
    """Scored calls that are narrow or in disagreement."""
    narrow: int
    proxy_disagreement: int
    skipped: int
    """Calls that will never be scored."""

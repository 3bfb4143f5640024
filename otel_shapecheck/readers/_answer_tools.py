"""Answers delivered through a tool call: smolagents' ``final_answer``, pydantic-ai's output tools, and so on.

Such a call is the answer, not a tool choice. A call's answer tools are the ones its framework declares
(pydantic-ai lists its output tools apart from its function tools in ``model_request_parameters``);
when the framework declares none, the configured names apply (``answer_tools``, a trailing ``*``
matching a prefix). :func:`with_answer_tools` rewrites a call so that both checks see the same thing: the
answer tools leave the menu of every call (they are no candidate of a tool choice, whichever tool the
call chose), and a call that answered through one loses that tool call from ``tool_calls``, names it
in ``answer_tool`` and has its answer text read from the call's arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from otel_shapecheck._bounded_lru import BoundedLRU
from otel_shapecheck._model import JSONValue, LLMCall, OfferedTool
from otel_shapecheck.readers._parse_cache import parsed_bytes

MAX_ARGUMENT_DEPTH = 8
"""How deep the arguments are walked for answer text; deeper values are left out."""
_MAX_MENUS = 256
"""Menus whose answer-tool-free copy is kept (a menu recurs on every call of an agent)."""
_MAX_MENU_BYTES = 16 * 1024 * 1024
"""Estimated bytes those menus and their copies may keep alive."""


def is_answer_tool(name: str, names: Sequence[str]) -> bool:
    """Whether ``name`` is one of ``names`` (a name ending in ``*`` matches every name with that prefix)."""
    for pattern in names:
        if pattern.endswith("*") and name.startswith(pattern[:-1]):
            return True
        if name == pattern:
            return True
    return False


def with_answer_tools(call: LLMCall, configured: Sequence[str]) -> LLMCall:
    """``call`` with any answer-tool call taken as its answer; unchanged when it made none."""
    names = call.declared_answer_tools if call.declared_answer_tools is not None else configured
    if not names:
        return call
    offered = _menus.without(call.offered_tools, tuple(names))
    answers = [tool_call for tool_call in call.tool_calls or () if is_answer_tool(tool_call.name, names)]
    if not answers:
        return call if offered is call.offered_tools else replace(call, offered_tools=offered)
    texts = [text for tool_call in answers if (text := arguments_text(tool_call.arguments))]
    return replace(
        call,
        tool_calls=tuple(
            tool_call for tool_call in call.tool_calls or () if not is_answer_tool(tool_call.name, names)
        ),
        offered_tools=offered,
        answer_tool=answers[0].name,
        answer_text="\n".join(texts) if texts else call.answer_text,
    )


class _MenusWithout:
    """Each recent menu without its answer tools, keyed by the identity of the menu tuple.

    Readers hand every call of one menu the same tuple, and the tool-choice check prepares a menu once
    per tuple; the copy without answer tools is therefore made once and handed out as the same tuple.
    A menu without answer tools is handed back as it is and not kept: an entry keeps its menu alive (so
    the id it is keyed by is not reused while it is kept), and menus are kept within a bound on their
    estimated bytes as well as their count.
    """

    def __init__(self, max_entries: int = _MAX_MENUS, max_bytes: int = _MAX_MENU_BYTES) -> None:
        self._kept: BoundedLRU[
            tuple[int, tuple[str, ...]], tuple[tuple[OfferedTool, ...], tuple[OfferedTool, ...]]
        ] = BoundedLRU(max_entries, max_bytes)

    def without(
        self, offered: tuple[OfferedTool, ...] | None, names: tuple[str, ...]
    ) -> tuple[OfferedTool, ...] | None:
        """``offered`` without the tools ``names`` match (``None`` stays ``None``)."""
        if not offered:
            return offered
        key = (id(offered), names)
        entry = self._kept.get(key)
        if entry is not None and entry[0] is offered:
            return entry[1]
        kept = tuple(tool for tool in offered if not is_answer_tool(tool.name, names))
        if len(kept) == len(offered):
            return offered
        self._kept.put(key, (offered, kept), parsed_bytes(offered) + parsed_bytes(kept))
        return kept


_menus = _MenusWithout()


def arguments_text(arguments: JSONValue, depth: int = 0) -> str:
    """The answer an answer tool's arguments carry: every string, and ``key: value`` for other scalars."""
    if depth > MAX_ARGUMENT_DEPTH or arguments is None:
        return ""
    if isinstance(arguments, str):
        return arguments
    if isinstance(arguments, bool | int | float):
        return str(arguments)
    if isinstance(arguments, list):
        return "\n".join(text for item in arguments if (text := arguments_text(item, depth + 1)))
    lines: list[str] = []
    for key, value in arguments.items():
        if isinstance(value, bool | int | float) and not isinstance(value, bool):
            lines.append(f"{key}: {value}")
        elif text := arguments_text(value, depth + 1):
            lines.append(text)
    return "\n".join(lines)

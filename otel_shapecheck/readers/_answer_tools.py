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

from bisect import bisect_right
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


class AnswerToolNames:
    """Answer-tool names ready to match many tool names: exact names in a set, ``*`` prefixes sorted (a
    name ending in ``*`` matches every name with that prefix).

    Of prefixes where one starts with another only the shorter is kept; then the only prefix that can
    begin a name is the greatest one not after it, found by bisection. A match costs a set look-up and
    ``log`` of the prefixes, so a menu of *n* tools against *m* declared names costs ``(n + m) log m``,
    not ``n · m``.
    """

    __slots__ = ("_exact", "_prefixes")

    def __init__(self, names: Sequence[str]) -> None:
        self._exact = frozenset(names)
        prefixes: list[str] = []
        for prefix in sorted({pattern[:-1] for pattern in self._exact if pattern.endswith("*")}):
            if not prefixes or not prefix.startswith(prefixes[-1]):
                prefixes.append(prefix)
        self._prefixes = prefixes

    def matches(self, name: str) -> bool:
        """Whether ``name`` is one of the names or begins with one of the prefixes."""
        if name in self._exact:
            return True
        at = bisect_right(self._prefixes, name)
        return at > 0 and name.startswith(self._prefixes[at - 1])


def with_answer_tools(call: LLMCall, configured: Sequence[str]) -> LLMCall:
    """``call`` with any answer-tool call taken as its answer; unchanged when it made none."""
    names = call.declared_answer_tools if call.declared_answer_tools is not None else configured
    if not names:
        return call
    matcher = AnswerToolNames(names)
    offered = _menus.without(call.offered_tools, tuple(names), matcher)
    answers = [tool_call for tool_call in call.tool_calls or () if matcher.matches(tool_call.name)]
    if not answers:
        return call if offered is call.offered_tools else replace(call, offered_tools=offered)
    texts = [text for tool_call in answers if (text := arguments_text(tool_call.arguments))]
    return replace(
        call,
        tool_calls=tuple(
            tool_call for tool_call in call.tool_calls or () if not matcher.matches(tool_call.name)
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
        self,
        offered: tuple[OfferedTool, ...] | None,
        names: tuple[str, ...],
        matcher: AnswerToolNames | None = None,
    ) -> tuple[OfferedTool, ...] | None:
        """``offered`` without the tools ``names`` match (``None`` stays ``None``).

        ``matcher`` is ``names`` ready to match, when the caller has it already.
        """
        if not offered:
            return offered
        key = (id(offered), names)
        entry = self._kept.get(key)
        if entry is not None and entry[0] is offered:
            return entry[1]
        matcher = matcher if matcher is not None else AnswerToolNames(names)
        kept = tuple(tool for tool in offered if not matcher.matches(tool.name))
        if len(kept) == len(offered):
            return offered
        cost = parsed_bytes(offered) + parsed_bytes(kept) + parsed_bytes(names)  # the key keeps names too
        self._kept.put(key, (offered, kept), cost)
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

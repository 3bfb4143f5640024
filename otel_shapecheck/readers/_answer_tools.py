"""Answers delivered through a tool call: smolagents' ``final_answer``, pydantic-ai's output tools, and so on.

Such a call is the answer, not a tool choice. A call's answer tools are the ones its framework declares
(pydantic-ai lists its output tools apart from its function tools in ``model_request_parameters``);
when the framework declares none, the configured names apply (``answer_tools``, a trailing ``*``
matching a prefix). :func:`with_answer_tools` rewrites a call so that both checks see the same thing: the
answer tool calls leave ``tool_calls`` and the menu, ``answer_tool`` names the tool, and the answer text
is read from the call's arguments.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from otel_shapecheck._model import JSONValue, LLMCall

MAX_ARGUMENT_DEPTH = 8
"""How deep the arguments are walked for answer text; deeper values are left out."""


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
    if not names or not call.tool_calls:
        return call
    answers = [tool_call for tool_call in call.tool_calls if is_answer_tool(tool_call.name, names)]
    if not answers:
        return call
    texts = [text for tool_call in answers if (text := arguments_text(tool_call.arguments))]
    offered = call.offered_tools
    return replace(
        call,
        tool_calls=tuple(
            tool_call for tool_call in call.tool_calls if not is_answer_tool(tool_call.name, names)
        ),
        offered_tools=None
        if offered is None
        else tuple(t for t in offered if not is_answer_tool(t.name, names)),
        answer_tool=answers[0].name,
        answer_text="\n".join(texts) if texts else call.answer_text,
    )


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

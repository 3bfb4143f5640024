"""Message content as provider SDKs send it, recorded verbatim by the older conventions.

A message ``content`` is a string or a list of typed blocks: OpenAI ``text`` parts, Anthropic ``text``,
``tool_use`` and ``tool_result`` blocks, Bedrock Converse's untyped ``{"text"}``, ``{"toolUse"}`` and
``{"toolResult"}`` blocks (strands-agents records these), and others (images, documents) that carry
nothing the checks read. OpenLLMetry's legacy attributes and the deprecated per-message events keep
that shape, so a tool result can sit inside a ``user`` message and a tool call inside an ``assistant``
message's content.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Final

from otel_shapecheck._model import JSONValue, ToolCall, ToolResult
from otel_shapecheck.readers._lenient_json import parse_json_or_text, to_json_value

_DECODER: Final = json.JSONDecoder()


@dataclass(frozen=True)
class ContentBlocks:
    """What a message's content holds: text, tool calls and tool results, in order."""

    texts: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()


def content_blocks(content: JSONValue) -> ContentBlocks:
    """The text, tool calls and tool results of a message ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return ContentBlocks(texts=(content,) if content else ())
    if not isinstance(content, list):
        return ContentBlocks()
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for block in content:
        if isinstance(block, str) and block:
            texts.append(block)
        elif isinstance(block, dict):
            _read_block(block, texts, calls, results)
    return ContentBlocks(tuple(texts), tuple(calls), tuple(results))


def recorded_content_blocks(value: object) -> ContentBlocks:
    """Blocks of a content attribute that holds a string, a JSON-dumped block list, or structured blocks.

    A string is read as a block list only when it is a JSON array of blocks; any other string,
    JSON-looking or not, is the message's text. Only an array whose first element is a block is parsed
    whole, so a large JSON tool result (``{"rows": [...]}``, a list of rows) is not parsed here only to
    be kept as text: the figures check reads it, as far as it needs.
    """
    if not isinstance(value, str):
        return content_blocks(to_json_value(value))
    if _may_be_block_list(value):
        parsed = parse_json_or_text(value)
        if isinstance(parsed, list) and parsed and all(_is_block(block) for block in parsed):
            return content_blocks(parsed)
    return content_blocks(value)


def _may_be_block_list(text: str) -> bool:
    """Whether ``text`` may be a JSON array of blocks: it opens an array, and its first element is a
    block or cannot be read on its own (the whole parse then decides)."""
    stripped = text.lstrip()
    if stripped[:1] != "[":
        return False
    try:
        first, _ = _DECODER.raw_decode(stripped, len(stripped) - len(stripped[1:].lstrip()))
    except (ValueError, RecursionError):
        return True
    return _is_block(first)


_CONVERSE_BLOCK_KEYS = frozenset({"text", "toolUse", "toolResult", "json", "image", "document"})


def _is_block(block: JSONValue) -> bool:
    """A typed block, or an untyped Converse block (exactly one of its known keys)."""
    if not isinstance(block, dict):
        return False
    return "type" in block or (len(block) == 1 and not _CONVERSE_BLOCK_KEYS.isdisjoint(block))


def openai_tool_calls(value: JSONValue) -> tuple[ToolCall, ...]:
    """OpenAI-style ``[{id, type, function: {name, arguments}}]`` tool calls."""
    if not isinstance(value, list):
        return ()
    calls: list[ToolCall] = []
    for item in value:
        if not isinstance(item, dict):
            continue
        function = item.get("function")
        definition = function if isinstance(function, dict) else item
        name = _string(definition.get("name"))
        if name:
            arguments = parse_json_or_text(definition.get("arguments"))
            calls.append(ToolCall(name=name, call_id=_string(item.get("id")), arguments=arguments))
    return tuple(calls)


def tool_result_content(value: JSONValue) -> JSONValue:
    """A tool result's content: the text of ``[{"text": ...}]`` blocks joined, other blocks as they are."""
    if not isinstance(value, list):
        return value
    texts = [block.get("text") for block in value if isinstance(block, dict)]
    if value and all(isinstance(text, str) for text in texts) and len(texts) == len(value):
        return "\n".join(text for text in texts if isinstance(text, str))
    if len(value) == 1 and isinstance(value[0], dict) and "json" in value[0]:
        return value[0]["json"]
    return value


def _read_block(
    block: dict[str, JSONValue], texts: list[str], calls: list[ToolCall], results: list[ToolResult]
) -> None:
    if "type" not in block and _read_converse_block(block, calls, results):
        return
    kind = block.get("type", "text")
    if kind == "text":
        text = block.get("text", block.get("content"))
        if isinstance(text, str) and text:
            texts.append(text)
    elif kind == "tool_use":
        name = _string(block.get("name"))
        if name:
            calls.append(ToolCall(name=name, call_id=_string(block.get("id")), arguments=block.get("input")))
    elif kind == "tool_result":
        results.append(ToolResult(content=block.get("content"), call_id=_string(block.get("tool_use_id"))))


def _read_converse_block(
    block: dict[str, JSONValue], calls: list[ToolCall], results: list[ToolResult]
) -> bool:
    """A Bedrock Converse ``toolUse`` or ``toolResult`` block; False for any other block."""
    use, result = block.get("toolUse"), block.get("toolResult")
    if isinstance(use, dict):
        name = _string(use.get("name"))
        if name:
            calls.append(
                ToolCall(name=name, call_id=_string(use.get("toolUseId")), arguments=use.get("input"))
            )
        return True
    if isinstance(result, dict):
        content = tool_result_content(result.get("content"))
        results.append(ToolResult(content=content, call_id=_string(result.get("toolUseId"))))
        return True
    return False


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None

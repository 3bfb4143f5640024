"""Reader for the OpenTelemetry GenAI semantic conventions (v1.37 and later).

Content lives in ``gen_ai.input.messages``, ``gen_ai.output.messages`` and ``gen_ai.tool.definitions``:
JSON strings on spans, structured values (lists as tuples) on the
``gen_ai.client.inference.operation.details`` event. Tool executions are ``execute_tool`` spans
(and MCP ``tools/call`` spans) named by ``gen_ai.tool.name``.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_shapecheck._model import JSONValue, OfferedTool, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.readers._content import (
    TOOL_RESULT_ROLES,
    CallContent,
    Message,
    SpanRef,
    optional_string,
)
from otel_shapecheck.readers._content_parts import content_blocks
from otel_shapecheck.readers._lenient_json import (
    parse_json_list,
    parse_json_object,
    parse_json_or_text,
    to_json_value,
)
from otel_shapecheck.readers._parse_cache import ParseCache
from otel_shapecheck.readers._tool_schema import schema_of, tool_parameters

OPERATION_NAME = "gen_ai.operation.name"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_ID = "gen_ai.response.id"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
PYDANTIC_AI_REQUEST_PARAMETERS = "model_request_parameters"
"""pydantic-ai's record of a request: its ``output_tools`` are declared apart from its ``function_tools``."""

GENAI_CONTENT_KEYS = frozenset(
    {
        INPUT_MESSAGES,
        OUTPUT_MESSAGES,
        TOOL_DEFINITIONS,
        FINISH_REASONS,
        RESPONSE_ID,
        PYDANTIC_AI_REQUEST_PARAMETERS,
    }
)
"""Every attribute :func:`read_genai_content` reads: one of them present means there is GenAI content."""

EXECUTE_TOOL_SPAN_PREFIX = "execute_tool "
MCP_TOOLS_CALL_SPAN_PREFIX = "tools/call "


def read_genai_content(attributes: Mapping[str, object]) -> CallContent:
    """The call content in a span's or event's GenAI attributes (JSON strings or structured values)."""
    return CallContent(
        input_messages=read_messages(attributes.get(INPUT_MESSAGES)),
        output_messages=read_messages(attributes.get(OUTPUT_MESSAGES)),
        offered_tools=read_tool_definitions(attributes.get(TOOL_DEFINITIONS)),
        finish_reasons=read_string_list(attributes.get(FINISH_REASONS)),
        response_id=optional_string(attributes.get(RESPONSE_ID)),
        answer_tools=declared_output_tools(attributes.get(PYDANTIC_AI_REQUEST_PARAMETERS)),
        system_texts=read_system_instructions(attributes.get(SYSTEM_INSTRUCTIONS)),
    )


def read_system_instructions(value: object) -> tuple[str, ...]:
    """The text parts of ``gen_ai.system_instructions`` (an array of parts, as JSON or structured; a
    plain string is its own text); other part types are not read."""
    if value is None:
        return ()
    parsed = parse_json_or_text(value)
    return content_blocks([parsed] if isinstance(parsed, dict) else parsed).texts


def declared_output_tools(value: object) -> tuple[str, ...] | None:
    """The output tool names of pydantic-ai's ``model_request_parameters``; ``None`` when it is absent."""
    if value is None:
        return None
    parameters = parse_json_object(value)
    tools = parameters.get("output_tools") if parameters is not None else None
    if not isinstance(tools, list):
        return None
    return tuple(
        name for tool in tools if isinstance(tool, dict) and (name := optional_string(tool.get("name")))
    )


def read_genai_tool_execution(
    span_name: str, attributes: Mapping[str, object], ref: SpanRef
) -> ToolExecution:
    """An ``execute_tool`` (or MCP ``tools/call``) span as a tool execution."""
    name = optional_string(attributes.get(TOOL_NAME)) or _tool_name_from_span_name(span_name)
    return ToolExecution(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        end_time_ns=ref.end_time_ns,
        name=name,
        call_id=optional_string(attributes.get(TOOL_CALL_ID)),
        arguments=parse_json_or_text(attributes.get(TOOL_CALL_ARGUMENTS)),
        result=to_json_value(attributes.get(TOOL_CALL_RESULT)),
    )


def read_messages(value: object) -> tuple[Message, ...] | None:
    """Chat messages from a ``gen_ai.*.messages`` value; ``None`` when absent or unreadable.

    A JSON string is parsed once per process (:class:`~otel_shapecheck.readers._parse_cache.ParseCache`).
    """
    if isinstance(value, str):
        return _cached_messages(value)
    return _messages(value)


def _messages(value: object) -> tuple[Message, ...] | None:
    items = parse_json_list(value)
    if items is None:
        return None
    return tuple(message_from_json(item) for item in items if isinstance(item, dict))


def message_from_json(item: Mapping[str, JSONValue]) -> Message:
    """One ChatMessage/OutputMessage object; unknown part types are ignored."""
    parts = item.get("parts")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    if isinstance(parts, list):
        for part in parts:
            if isinstance(part, dict):
                _read_part(part, texts, calls, results)
    content = item.get("content")
    if not texts and isinstance(content, str) and content:
        texts.append(content)
    role = optional_string(item.get("role"))
    if role in TOOL_RESULT_ROLES and texts and not results:
        # A tool message may carry its result as text (any part type may appear in any role), as the
        # other conventions' tool messages do: it is the result, not prose.
        call_id = optional_string(item.get("tool_call_id")) or optional_string(item.get("id"))
        results.append(ToolResult(content="\n".join(texts), call_id=call_id))
        texts = []
    return Message(
        role=role,
        texts=tuple(texts),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
        finish_reason=optional_string(item.get("finish_reason")),
    )


def read_tool_definitions(value: object) -> tuple[OfferedTool, ...] | None:
    """Offered tools from ``gen_ai.tool.definitions``: flat and OpenAI-nested (``{"function": {...}}``).

    A JSON string is parsed once per process, so every call offering the same menu gets the same tuple.
    """
    if isinstance(value, str):
        return _cached_tool_definitions(value)
    return _tool_definitions(value)


def _tool_definitions(value: object) -> tuple[OfferedTool, ...] | None:
    items = parse_json_list(value)
    if items is None:
        return None
    tools = (offered_tool_from_json(item) for item in items if isinstance(item, dict))
    return tuple(tool for tool in tools if tool is not None)


_cached_messages: ParseCache[tuple[Message, ...] | None] = ParseCache(_messages)
_cached_tool_definitions: ParseCache[tuple[OfferedTool, ...] | None] = ParseCache(_tool_definitions)


def offered_tool_from_json(item: Mapping[str, JSONValue]) -> OfferedTool | None:
    """One tool definition, flat or nested under ``function``; ``None`` when it has no name."""
    function = item.get("function")
    definition = function if isinstance(function, dict) else item
    name = optional_string(definition.get("name"))
    if not name:
        return None
    return OfferedTool(
        name=name,
        description=optional_string(definition.get("description")),
        parameters=tool_parameters(schema_of(definition)),
    )


def read_string_list(value: object) -> tuple[str, ...]:
    """A list of strings from a sequence attribute or a JSON array string; non-strings are skipped."""
    if isinstance(value, str):
        parsed = parse_json_list(value)
        items: object = parsed if parsed is not None else [value]
    else:
        items = value
    if not isinstance(items, list | tuple):
        return ()
    return tuple(item for item in items if isinstance(item, str))


def _read_part(
    part: Mapping[str, JSONValue], texts: list[str], calls: list[ToolCall], results: list[ToolResult]
) -> None:
    """One message part: text, a tool call or its response (client- or provider-executed); others ignored."""
    kind = part.get("type")
    if kind == "text":
        text = part.get("content", part.get("text"))
        if isinstance(text, str):
            texts.append(text)
    elif kind == "tool_call":
        name = optional_string(part.get("name"))
        if name:
            arguments = parse_json_or_text(part.get("arguments"))
            calls.append(ToolCall(name=name, call_id=_call_id(part.get("id")), arguments=arguments))
    elif kind == "tool_call_response":
        response = part["response"] if "response" in part else part.get("result")
        results.append(ToolResult(content=response, call_id=_call_id(part.get("id"))))
    elif kind == "server_tool_call":
        # A provider-executed tool (web search, code interpreter): still a tool the model chose.
        name = optional_string(part.get("name"))
        if name:
            details = part.get("server_tool_call")
            calls.append(ToolCall(name=name, call_id=_call_id(part.get("id")), arguments=details))
    elif kind == "server_tool_call_response":
        response = part.get("server_tool_call_response")
        results.append(ToolResult(content=response, call_id=_call_id(part.get("id"))))


def _call_id(value: object) -> str | None:
    """A tool call id; some published examples carry a stray leading space."""
    if not isinstance(value, str):
        return None
    return value.strip() or None


def _tool_name_from_span_name(span_name: str) -> str:
    """``execute_tool {name}`` / ``tools/call {name}`` give the name; a bare operation name gives none."""
    for prefix in (EXECUTE_TOOL_SPAN_PREFIX, MCP_TOOLS_CALL_SPAN_PREFIX):
        if span_name.startswith(prefix):
            return span_name[len(prefix) :].strip()
        if span_name == prefix.strip():
            return ""
    return span_name

"""Reader for the Vercel AI SDK's own telemetry convention (the ``ai.*`` attributes).

With its own telemetry on (``experimental_telemetry`` before version 7, ``LegacyOpenTelemetry`` from
``@ai-sdk/otel`` since), the SDK names every span by ``ai.operationId``: ``ai.generateText`` /
``ai.streamText`` cover a whole tool loop (the run's root), each model call is an
``ai.generateText.doGenerate`` / ``ai.streamText.doStream`` span, and each tool execution an
``ai.toolCall`` span. Only a few ``gen_ai.*`` keys appear beside them, and no ``gen_ai.operation.name``.

A model call keeps its input in ``ai.prompt.messages`` (a JSON list of the SDK's prompt messages: a
string or a list of parts per message, ``tool-call`` and ``tool-result`` parts included), its menu in
``ai.prompt.tools`` (a list of JSON strings, one tool each), and its output in ``ai.response.text``,
``ai.response.toolCalls`` (a JSON list) and ``ai.response.finishReason``. A tool span keeps its call in
``ai.toolCall.name`` / ``ai.toolCall.id`` / ``ai.toolCall.args`` and its result in ``ai.toolCall.result``.
Attributes the application chose not to record (``recordInputs`` / ``recordOutputs``) are absent, and
read as not captured rather than empty.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from otel_shapecheck._model import JSONValue, OfferedTool, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.readers._content import TOOL_RESULT_ROLES, CallContent, Message, SpanRef, optional_string
from otel_shapecheck.readers._genai import offered_tool_from_json
from otel_shapecheck.readers._lenient_json import (
    parse_json_list,
    parse_json_object,
    parse_json_or_text,
    to_json_value,
)

OPERATION_ID = "ai.operationId"
PROMPT_MESSAGES = "ai.prompt.messages"
PROMPT_TOOLS = "ai.prompt.tools"
RESPONSE_TEXT = "ai.response.text"
RESPONSE_TOOL_CALLS = "ai.response.toolCalls"
RESPONSE_FINISH_REASON = "ai.response.finishReason"
RESPONSE_ID = "ai.response.id"
TOOL_CALL_NAME = "ai.toolCall.name"
TOOL_CALL_ID = "ai.toolCall.id"
TOOL_CALL_ARGS = "ai.toolCall.args"
TOOL_CALL_RESULT = "ai.toolCall.result"

MODEL_CALL_OPERATIONS = frozenset(
    {
        "ai.generateText.doGenerate",
        "ai.streamText.doStream",
        "ai.generateObject.doGenerate",
        "ai.streamObject.doStream",
    }
)
"""Operation ids of the spans that record one call of the model."""
RUN_OPERATIONS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
"""Operation ids of the spans that cover a whole call of the SDK (its tool loop): a run's root."""
TOOL_CALL_OPERATION = "ai.toolCall"

AI_SDK_CONTENT_KEYS = frozenset(
    {PROMPT_MESSAGES, PROMPT_TOOLS, RESPONSE_TEXT, RESPONSE_TOOL_CALLS, RESPONSE_FINISH_REASON}
)
"""Every attribute :func:`read_ai_sdk_content` reads for messages and menus: one present means content."""
OUTPUT_KEYS = frozenset({RESPONSE_TEXT, RESPONSE_TOOL_CALLS})
"""The attributes that record a model call's output."""

_TEXT_PARTS = frozenset({"text"})
_TOOL_CALL_PART = "tool-call"
_TOOL_RESULT_PART = "tool-result"


def read_ai_sdk_content(attributes: Mapping[str, object]) -> CallContent:
    """Call content from a model-call span's ``ai.prompt.*`` and ``ai.response.*`` attributes."""
    finish_reason = optional_string(attributes.get(RESPONSE_FINISH_REASON))
    return CallContent(
        input_messages=_prompt_messages(attributes.get(PROMPT_MESSAGES)),
        output_messages=_response(attributes, finish_reason),
        offered_tools=read_prompt_tools(attributes.get(PROMPT_TOOLS)),
        finish_reasons=(finish_reason,) if finish_reason else (),
        response_id=optional_string(attributes.get(RESPONSE_ID)),
    )


def read_ai_sdk_tool_execution(
    span_name: str, attributes: Mapping[str, object], ref: SpanRef
) -> ToolExecution:
    """An ``ai.toolCall`` span as a tool execution (a result not recorded, or a failed call, is ``None``)."""
    return ToolExecution(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        end_time_ns=ref.end_time_ns,
        name=optional_string(attributes.get(TOOL_CALL_NAME)) or "",
        call_id=optional_string(attributes.get(TOOL_CALL_ID)),
        arguments=parse_json_or_text(attributes.get(TOOL_CALL_ARGS)),
        result=to_json_value(attributes.get(TOOL_CALL_RESULT)),
    )


def read_prompt_tools(value: object) -> tuple[OfferedTool, ...] | None:
    """The menu in ``ai.prompt.tools``: a list of JSON strings (or one JSON array); ``None`` when absent.

    Each entry is ``{"type": "function", "name", "description", "inputSchema"}`` (``parameters`` before
    version 5); a provider-defined tool (``{"type": "provider", "name", ...}``) is offered by its name.
    """
    if value is None:
        return None
    items: Sequence[object] | None
    if isinstance(value, str):
        items = parse_json_list(value)
    elif isinstance(value, list | tuple):
        items = value
    else:
        items = None
    if items is None:
        return None
    tools = (offered_tool_from_json(entry) for item in items if (entry := _json_object(item)) is not None)
    return tuple(tool for tool in tools if tool is not None)


def _json_object(item: object) -> dict[str, JSONValue] | None:
    if isinstance(item, Mapping):
        return {str(key): to_json_value(value) for key, value in item.items()}
    return parse_json_object(item)


def _prompt_messages(value: object) -> tuple[Message, ...] | None:
    items = parse_json_list(value)
    if items is None:
        return None
    return tuple(_message(item) for item in items if isinstance(item, dict))


def _message(item: Mapping[str, JSONValue]) -> Message:
    """One prompt message: ``content`` is a string (system, older user messages) or a list of parts."""
    role = optional_string(item.get("role"))
    content = item.get("content")
    if isinstance(content, str):
        if role in TOOL_RESULT_ROLES:
            return Message(role=role, tool_results=(ToolResult(content=content),))
        return Message(role=role, texts=(content,) if content else ())
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, dict):
            _read_part(part, texts, calls, results)
    return Message(role=role, texts=tuple(texts), tool_calls=tuple(calls), tool_results=tuple(results))


def _read_part(
    part: Mapping[str, JSONValue], texts: list[str], calls: list[ToolCall], results: list[ToolResult]
) -> None:
    """A text, tool-call or tool-result part; reasoning, files and images are not what the checks read."""
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        text = part.get("text")
        if isinstance(text, str) and text:
            texts.append(text)
    elif kind == _TOOL_CALL_PART:
        call = _tool_call(part)
        if call is not None:
            calls.append(call)
    elif kind == _TOOL_RESULT_PART:
        results.append(
            ToolResult(
                content=_result_content(part),
                call_id=optional_string(part.get("toolCallId")),
                name=optional_string(part.get("toolName")),
            )
        )


def _result_content(part: Mapping[str, JSONValue]) -> JSONValue:
    """A tool result's value: ``output`` is ``{"type": "json" | "text" | ..., "value"}`` since version 5,
    ``result`` the bare value before."""
    output = part.get("output")
    if isinstance(output, dict) and "value" in output:
        return output["value"]
    if output is not None:
        return output
    return part.get("result")


def _tool_call(fields: Mapping[str, JSONValue]) -> ToolCall | None:
    """A ``{toolCallId, toolName, input}`` record (``args``, maybe a JSON string, before version 5)."""
    name = optional_string(fields.get("toolName"))
    if not name:
        return None
    arguments = fields["input"] if "input" in fields else fields.get("args")
    if isinstance(arguments, str):
        arguments = parse_json_or_text(arguments)
    return ToolCall(name=name, call_id=optional_string(fields.get("toolCallId")), arguments=arguments)


def _response(attributes: Mapping[str, object], finish_reason: str | None) -> tuple[Message, ...] | None:
    """The output as one assistant message; ``None`` when neither its text nor its tool calls were recorded.

    The SDK writes ``ai.response.text`` as ``""`` beside the tool calls of a call that only chose tools,
    and leaves ``ai.response.toolCalls`` out when there were none.
    """
    if OUTPUT_KEYS.isdisjoint(attributes):
        return None
    text = attributes.get(RESPONSE_TEXT)
    recorded_calls = parse_json_list(attributes.get(RESPONSE_TOOL_CALLS)) or []
    calls = (_tool_call(item) for item in recorded_calls if isinstance(item, dict))
    return (
        Message(
            role="assistant",
            texts=(text,) if isinstance(text, str) and text else (),
            tool_calls=tuple(call for call in calls if call is not None),
            finish_reason=finish_reason,
        ),
    )

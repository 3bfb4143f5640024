"""Reader for OpenLLMetry's (Traceloop's) legacy indexed attributes.

Instrumentations that still use the legacy form write ``gen_ai.prompt.<i>.*``,
``gen_ai.completion.<i>.*`` and ``llm.request.functions.<i>.*``; tool spans of the Traceloop SDK carry
``traceloop.span.kind = tool`` with the call in ``traceloop.entity.input`` and the result in
``traceloop.entity.output``. OpenLLMetry's newer JSON form is the OTel GenAI form and is read there.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_shapecheck._model import JSONValue, OfferedTool, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.readers._content import TOOL_RESULT_ROLES, CallContent, Message, SpanRef, optional_string
from otel_shapecheck.readers._content_parts import recorded_content_blocks
from otel_shapecheck.readers._flattened import read_indexed
from otel_shapecheck.readers._lenient_json import parse_json_or_text, to_json_value
from otel_shapecheck.readers._tool_schema import tool_parameters

LLM_REQUEST_TYPE = "llm.request.type"
TRACELOOP_SPAN_KIND = "traceloop.span.kind"
TRACELOOP_ENTITY_NAME = "traceloop.entity.name"
TRACELOOP_ENTITY_INPUT = "traceloop.entity.input"
TRACELOOP_ENTITY_OUTPUT = "traceloop.entity.output"
PROMPT_PREFIX = "gen_ai.prompt."
COMPLETION_PREFIX = "gen_ai.completion."
FUNCTIONS_PREFIX = "llm.request.functions."
TOOL_NAME = "gen_ai.tool.name"
OPENLLMETRY_CONTENT_PREFIXES = (PROMPT_PREFIX, COMPLETION_PREFIX, FUNCTIONS_PREFIX)
"""Prefixes of every attribute :func:`read_openllmetry_content` reads."""
TOOL_CALL_ID = "gen_ai.tool.call.id"

COMPLETION_MARKERS = (
    "gen_ai.completion.0.role",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.finish_reason",
    "gen_ai.completion.0.tool_calls.0.name",
)
"""Keys of which at least one is present when a span carries its own (legacy) output."""
COMPLETION_TOOL_CALL_MARKER = "gen_ai.completion.0.tool_calls.0.name"
COMPLETION_FINISH_REASON = "gen_ai.completion.0.finish_reason"

_TOOL_SPAN_SUFFIX = ".tool"
_TOOL_CALLS = "tool_calls."


def read_openllmetry_content(attributes: Mapping[str, object]) -> CallContent:
    """Call content from legacy indexed attributes; empty when the span has none."""
    return CallContent(
        input_messages=read_indexed(attributes, PROMPT_PREFIX, _message),
        output_messages=read_indexed(attributes, COMPLETION_PREFIX, _message),
        offered_tools=read_indexed(attributes, FUNCTIONS_PREFIX, _offered_tool),
    )


def read_openllmetry_tool_execution(
    span_name: str, attributes: Mapping[str, object], ref: SpanRef
) -> ToolExecution:
    """A Traceloop tool span (``traceloop.span.kind = tool``) as a tool execution."""
    name = (
        optional_string(attributes.get(TOOL_NAME))
        or optional_string(attributes.get(TRACELOOP_ENTITY_NAME))
        or span_name.removesuffix(_TOOL_SPAN_SUFFIX)
    )
    return ToolExecution(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        end_time_ns=ref.end_time_ns,
        name=name,
        call_id=optional_string(attributes.get(TOOL_CALL_ID)),
        arguments=_entity_arguments(attributes.get(TRACELOOP_ENTITY_INPUT)),
        result=to_json_value(attributes.get(TRACELOOP_ENTITY_OUTPUT)),
    )


def _message(fields: Mapping[str, object]) -> Message:
    role = optional_string(fields.get("role"))
    if role in TOOL_RESULT_ROLES:
        call_id = optional_string(fields.get("tool_call_id"))
        result = ToolResult(content=to_json_value(fields.get("content")), call_id=call_id)
        return Message(role=role, tool_results=(result,))
    blocks = recorded_content_blocks(fields.get("content"))
    return Message(
        role=role,
        texts=blocks.texts,
        tool_calls=read_indexed(fields, _TOOL_CALLS, _tool_call) or blocks.tool_calls,
        tool_results=blocks.tool_results,
        finish_reason=optional_string(fields.get("finish_reason")),
    )


def _tool_call(fields: Mapping[str, object]) -> ToolCall | None:
    name = optional_string(fields.get("name"))
    if not name:
        return None
    arguments = parse_json_or_text(fields.get("arguments"))
    return ToolCall(name=name, call_id=optional_string(fields.get("id")), arguments=arguments)


def _offered_tool(fields: Mapping[str, object]) -> OfferedTool | None:
    name = optional_string(fields.get("name"))
    if not name:
        return None
    return OfferedTool(
        name=name,
        description=optional_string(fields.get("description")),
        parameters=tool_parameters(fields.get("parameters")),
    )


def _entity_arguments(value: object) -> JSONValue:
    """The call's arguments from ``{"args": [...], "kwargs": {...}}``: the kwargs when only they are set."""
    parsed = parse_json_or_text(value)
    if isinstance(parsed, dict) and not parsed.get("args") and isinstance(parsed.get("kwargs"), dict):
        return parsed["kwargs"]
    return parsed

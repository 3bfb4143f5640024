"""Reader for google-adk's own record of a model call: the request and the response as JSON on one span.

ADK's ``call_llm`` span (its telemetry schema 1) names no GenAI operation. It carries the whole request
in ``gcp.vertex.agent.llm_request`` (``model``, ``config`` with ``system_instruction`` and
``tools[].function_declarations[]``, and ``contents``: google-genai ``Content`` objects, each a role,
``user`` or ``model``, and parts holding ``text``, ``function_call`` or ``function_response``) and the
response in ``gcp.vertex.agent.llm_response`` (an ``LlmResponse``: its ``content`` and
``finish_reason``). With content capture off ADK writes ``"{}"`` for both, which is "not captured", not
an empty request. Its ``execute_tool`` spans keep their arguments and results in
``gcp.vertex.agent.tool_call_args`` / ``gcp.vertex.agent.tool_response`` (``"{}"`` likewise), and say
``"<not specified>"`` for a call id they do not know. Field names are read in google-genai's snake case
and, leniently, in the camel case of its JSON aliases.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Final

from otel_shapecheck._model import JSONValue, OfferedTool, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.readers._content import CallContent, Message, SpanRef, optional_string
from otel_shapecheck.readers._genai import (
    TOOL_CALL_ARGUMENTS,
    TOOL_CALL_RESULT,
    read_genai_tool_execution,
)
from otel_shapecheck.readers._lenient_json import parse_json_object, parse_json_or_text
from otel_shapecheck.readers._parse_cache import ParseCache
from otel_shapecheck.readers._tool_schema import tool_parameters

LLM_REQUEST: Final = "gcp.vertex.agent.llm_request"
LLM_RESPONSE: Final = "gcp.vertex.agent.llm_response"
TOOL_CALL_ARGS: Final = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE: Final = "gcp.vertex.agent.tool_response"

ADK_CONTENT_KEYS: Final = frozenset({LLM_REQUEST, LLM_RESPONSE})
"""Every attribute :func:`read_adk_content` reads."""
ADK_TOOL_KEYS: Final = frozenset({TOOL_CALL_ARGS, TOOL_RESPONSE})
"""The attributes of an ADK tool span that :func:`read_adk_tool_execution` reads beside GenAI's."""

NOT_CAPTURED: Final = "{}"
"""What ADK writes for a request, response, arguments or result it was told not to capture."""
_UNKNOWN_CALL_ID = "<not specified>"
_MERGED_TOOLS = "(merged tools)"
"""The name of ADK's span that repeats the responses of parallel calls (each has its own span too)."""
_RESULT_WRAPPER = "result"
"""ADK wraps a tool's non-object return value as ``{"result": value}``."""


@dataclass(frozen=True)
class _Request:
    """What a captured request says: its messages (``None`` without ``contents``) and its menu."""

    inputs: tuple[Message, ...] | None
    tools: tuple[OfferedTool, ...] | None
    instructions: tuple[str, ...] = ()
    """The text of the config's ``system_instruction`` (a string, a ``Content``, or a list of parts)."""


def is_captured(value: object) -> bool:
    """Whether an ADK content attribute holds content: present, and not the ``"{}"`` of capture off."""
    return value is not None and value != NOT_CAPTURED


def read_adk_content(attributes: Mapping[str, object]) -> CallContent:
    """Call content from ADK's request and response JSON; what is absent or ``"{}"`` is not captured."""
    request = _read_request(attributes.get(LLM_REQUEST))
    response = _object(attributes.get(LLM_RESPONSE))
    outputs: tuple[Message, ...] | None = None
    finish_reasons: tuple[str, ...] = ()
    if response:
        content = response.get("content")
        # A response without content is a captured empty reply (the model returned nothing).
        outputs = (_message(content, default_role="model"),) if isinstance(content, dict) else ()
        reason = optional_string(_field(response, "finish_reason", "finishReason"))
        finish_reasons = (reason.lower(),) if reason else ()
    return CallContent(
        input_messages=request.inputs if request is not None else None,
        output_messages=outputs,
        offered_tools=request.tools if request is not None else None,
        finish_reasons=finish_reasons,
        system_texts=request.instructions if request is not None else (),
    )


def read_adk_tool_execution(span_name: str, attributes: Mapping[str, object], ref: SpanRef) -> ToolExecution:
    """An ADK ``execute_tool`` span: GenAI's fields where present (schema 2), else ADK's own (schema 1).

    ADK's span that repeats the responses of parallel calls under the name ``(merged tools)`` names no
    tool: each call has its own span.
    """
    execution = read_genai_tool_execution(span_name, attributes, ref)
    if execution.name == _MERGED_TOOLS:
        return ToolExecution(span_id=ref.span_id, trace_id=ref.trace_id, name="")
    call_id = execution.call_id if execution.call_id != _UNKNOWN_CALL_ID else None
    arguments = execution.arguments
    if TOOL_CALL_ARGUMENTS not in attributes and is_captured(attributes.get(TOOL_CALL_ARGS)):
        arguments = parse_json_or_text(attributes.get(TOOL_CALL_ARGS))
    result = execution.result
    if TOOL_CALL_RESULT not in attributes and is_captured(attributes.get(TOOL_RESPONSE)):
        result = _unwrapped(parse_json_or_text(attributes.get(TOOL_RESPONSE)))
    return replace(execution, call_id=call_id, arguments=arguments, result=result)


def _read_request(value: object) -> _Request | None:
    if not is_captured(value):
        return None
    if isinstance(value, str):
        return _cached_request(value)
    return _request(value)


def _request(value: object) -> _Request | None:
    request = _object(value)
    if not request:
        return None
    contents = request.get("contents")
    inputs = (
        tuple(_message(item) for item in contents if isinstance(item, dict))
        if isinstance(contents, list)
        else None
    )
    config = request.get("config")
    tools = _offered_tools(config) if isinstance(config, dict) else None
    if inputs is not None and tools is None:
        tools = ()  # the whole request was recorded, and it offered no tools
    if not isinstance(config, dict):
        return _Request(inputs=inputs, tools=tools)
    instruction = _field(config, "system_instruction", "systemInstruction")
    return _Request(inputs=inputs, tools=tools, instructions=_instruction_texts(instruction))


def _instruction_texts(instruction: JSONValue) -> tuple[str, ...]:
    """The text of a ``system_instruction``: a string, a ``Content`` (its text parts), or a list of them."""
    if isinstance(instruction, str):
        return (instruction,) if instruction else ()
    if isinstance(instruction, dict):
        if "parts" in instruction:
            return _message(instruction).texts
        text = instruction.get("text")  # one part
        return (text,) if isinstance(text, str) and text else ()
    if isinstance(instruction, list):
        return tuple(text for item in instruction for text in _instruction_texts(item))
    return ()


_cached_request: ParseCache[_Request | None] = ParseCache(_request)


def _offered_tools(config: Mapping[str, JSONValue]) -> tuple[OfferedTool, ...] | None:
    """The function declarations of every tool in a request's config; ``None`` when it lists no tools."""
    tools = config.get("tools")
    if not isinstance(tools, list):
        return None
    offered: list[OfferedTool] = []
    for tool in tools:
        if not isinstance(tool, dict):
            continue
        declarations = _field(tool, "function_declarations", "functionDeclarations")
        for declaration in declarations if isinstance(declarations, list) else ():
            if isinstance(declaration, dict) and (declared := _declared_tool(declaration)) is not None:
                offered.append(declared)
    return tuple(offered)


def _declared_tool(declaration: Mapping[str, JSONValue]) -> OfferedTool | None:
    name = optional_string(declaration.get("name"))
    if not name:
        return None
    schema = declaration.get("parameters")
    if schema is None:
        schema = _field(declaration, "parameters_json_schema", "parametersJsonSchema")
    return OfferedTool(
        name=name,
        description=optional_string(declaration.get("description")),
        parameters=tool_parameters(schema),
    )


def _message(content: Mapping[str, JSONValue], default_role: str | None = None) -> Message:
    """One google-genai ``Content``: its text parts (thoughts left out), function calls and responses."""
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    parts = content.get("parts")
    for part in parts if isinstance(parts, list) else ():
        if not isinstance(part, dict):
            continue
        text = part.get("text")
        call = _field(part, "function_call", "functionCall")
        response = _field(part, "function_response", "functionResponse")
        if isinstance(text, str) and part.get("thought") is not True:
            texts.append(text)
        elif isinstance(call, dict) and (name := optional_string(call.get("name"))):
            calls.append(ToolCall(name=name, call_id=_call_id(call.get("id")), arguments=call.get("args")))
        elif isinstance(response, dict):
            results.append(
                ToolResult(
                    content=_unwrapped(response.get("response")),
                    call_id=_call_id(response.get("id")),
                    name=optional_string(response.get("name")),
                )
            )
    return Message(
        role=optional_string(content.get("role")) or default_role,
        texts=tuple(texts),
        tool_calls=tuple(calls),
        tool_results=tuple(results),
    )


def _unwrapped(value: JSONValue) -> JSONValue:
    """A tool's result without ADK's ``{"result": ...}`` wrapper around a non-object return value."""
    if isinstance(value, dict) and len(value) == 1 and _RESULT_WRAPPER in value:
        return value[_RESULT_WRAPPER]
    return value


def _field(item: Mapping[str, JSONValue], snake: str, camel: str) -> JSONValue:
    return item[snake] if snake in item else item.get(camel)


def _object(value: object) -> dict[str, JSONValue] | None:
    return parse_json_object(value) if is_captured(value) else None


def _call_id(value: object) -> str | None:
    return value if isinstance(value, str) and value and value != _UNKNOWN_CALL_ID else None

"""Reader for OpenInference's flattened attributes (Arize Phoenix and the openinference-* packages).

Messages are ``llm.input_messages.<i>.message.*`` and ``llm.output_messages.<i>.message.*`` with tool
calls under ``message.tool_calls.<j>.tool_call.*``; offered tools are whole OpenAI-style definitions in
``llm.tools.<i>.tool.json_schema``; TOOL spans carry ``tool.name``, ``input.value`` and ``output.value``.
An LLM span without indexed messages is read from its raw ``input.value``/``output.value`` payloads.
"""

from __future__ import annotations

from collections.abc import Mapping

from otel_shapecheck._model import OfferedTool, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.readers._content import TOOL_RESULT_ROLES, CallContent, Message, SpanRef, optional_string
from otel_shapecheck.readers._flattened import read_indexed
from otel_shapecheck.readers._genai import offered_tool_from_json
from otel_shapecheck.readers._lenient_json import parse_json_object, parse_json_or_text, to_json_value
from otel_shapecheck.readers._payloads import is_request_payload, payload_messages

OPENINFERENCE_SPAN_KIND = "openinference.span.kind"
INPUT_MESSAGES_PREFIX = "llm.input_messages."
OUTPUT_MESSAGES_PREFIX = "llm.output_messages."
TOOLS_PREFIX = "llm.tools."
TOOL_JSON_SCHEMA = "tool.json_schema"
TOOL_NAME = "tool.name"
TOOL_ID = "tool.id"
TOOL_CALL_ID = "tool_call.id"
INPUT_VALUE = "input.value"
OUTPUT_VALUE = "output.value"
INPUT_MIME_TYPE = "input.mime_type"
OUTPUT_MIME_TYPE = "output.mime_type"

FINISH_REASON = "llm.finish_reason"
OPENINFERENCE_CONTENT_PREFIXES = (INPUT_MESSAGES_PREFIX, OUTPUT_MESSAGES_PREFIX, TOOLS_PREFIX, FINISH_REASON)
"""Prefixes of every attribute :func:`read_openinference_content` reads."""
OUTPUT_MESSAGE_MARKERS = (
    "llm.output_messages.0.message.role",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
)
"""Keys of which at least one is present when a span carries its own output."""
OUTPUT_TOOL_CALL_MARKER = "llm.output_messages.0.message.tool_calls.0.tool_call.function.name"

REDACTED_VALUE = "__REDACTED__"
"""The mask openinference-instrumentation writes for a value its ``OPENINFERENCE_HIDE_*`` settings hide."""

_MESSAGE = "message."
_CONTENTS = "contents."
_TOOL_CALLS = "tool_calls."


def read_openinference_content(attributes: Mapping[str, object]) -> CallContent:
    """Call content from OpenInference's flattened message and tool attributes, else the raw payloads."""
    inputs = read_indexed(attributes, INPUT_MESSAGES_PREFIX, _message)
    if inputs is None and attributes.get(INPUT_VALUE) not in (None, REDACTED_VALUE):
        inputs = payload_messages(attributes.get(INPUT_VALUE), attributes.get(INPUT_MIME_TYPE), output=False)
    if inputs is not None and _hides_text(attributes, INPUT_MESSAGES_PREFIX):
        # OPENINFERENCE_HIDE_INPUT_TEXT: the turn's text and tool results are unknown, not empty.
        inputs = None
    outputs = read_indexed(attributes, OUTPUT_MESSAGES_PREFIX, _message)
    if (
        outputs is None
        and inputs is None
        and is_request_payload(attributes.get(OUTPUT_VALUE), attributes.get(OUTPUT_MIME_TYPE))
    ):
        return CallContent(not_a_call=True)
    if outputs is None and attributes.get(OUTPUT_VALUE) not in (None, REDACTED_VALUE):
        outputs = payload_messages(
            attributes.get(OUTPUT_VALUE), attributes.get(OUTPUT_MIME_TYPE), output=True
        )
    return CallContent(
        input_messages=inputs,
        output_messages=outputs,
        offered_tools=read_indexed(attributes, TOOLS_PREFIX, _offered_tool),
        finish_reasons=_finish_reasons(attributes.get(FINISH_REASON)),
    )


def read_openinference_tool_execution(
    span_name: str, attributes: Mapping[str, object], ref: SpanRef
) -> ToolExecution:
    """An OpenInference TOOL span as a tool execution (a hidden output is not captured, not empty)."""
    output = attributes.get(OUTPUT_VALUE)
    return ToolExecution(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        end_time_ns=ref.end_time_ns,
        name=optional_string(attributes.get(TOOL_NAME)) or span_name,
        call_id=optional_string(attributes.get(TOOL_ID)) or optional_string(attributes.get(TOOL_CALL_ID)),
        arguments=parse_json_or_text(attributes.get(INPUT_VALUE)),
        result=None if output == REDACTED_VALUE else to_json_value(output),
    )


def _message(fields: Mapping[str, object]) -> Message:
    message = {key[len(_MESSAGE) :]: value for key, value in fields.items() if key.startswith(_MESSAGE)}
    role = optional_string(message.get("role"))
    texts = _texts(message)
    if role in TOOL_RESULT_ROLES:
        # A tool turn recorded without its payload (no content, no text parts) is not captured: its
        # content is None, never an empty result.
        content = to_json_value(message.get("content")) if "content" in message else "\n".join(texts) or None
        call_id = optional_string(message.get("tool_call_id"))
        result = ToolResult(content=content, call_id=call_id, name=optional_string(message.get("name")))
        return Message(role=role, tool_results=(result,))
    return Message(role=role, texts=texts, tool_calls=read_indexed(message, _TOOL_CALLS, _tool_call) or ())


def _hides_text(attributes: Mapping[str, object], prefix: str) -> bool:
    """Whether a message's content under ``prefix`` is the instrumentation's mask for hidden text."""
    return any(
        value == REDACTED_VALUE
        for key, value in attributes.items()
        if isinstance(key, str) and key.startswith(prefix)
    )


def _texts(message: Mapping[str, object]) -> tuple[str, ...]:
    content = message.get("content")
    if isinstance(content, str) and content and content != REDACTED_VALUE:
        return (content,)
    return read_indexed(message, _CONTENTS, _text_part) or ()


def _text_part(part: Mapping[str, object]) -> str | None:
    text = part.get("message_content.text")
    if part.get("message_content.type") != "text" or not isinstance(text, str) or text == REDACTED_VALUE:
        return None
    return text or None


def _tool_call(fields: Mapping[str, object]) -> ToolCall | None:
    name = optional_string(fields.get("tool_call.function.name"))
    if not name:
        return None
    arguments = parse_json_or_text(fields.get("tool_call.function.arguments"))
    return ToolCall(name=name, call_id=optional_string(fields.get("tool_call.id")), arguments=arguments)


def _finish_reasons(value: object) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) and value else ()


def _offered_tool(fields: Mapping[str, object]) -> OfferedTool | None:
    definition = parse_json_object(fields.get(TOOL_JSON_SCHEMA))
    return None if definition is None else offered_tool_from_json(definition)

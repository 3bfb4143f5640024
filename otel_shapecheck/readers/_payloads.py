"""Raw request and response payloads as messages: what OpenInference's ``input.value``/``output.value`` hold.

OpenInference LLM spans keep the raw request in ``input.value`` and the raw response in ``output.value``
(``*.mime_type`` says ``application/json`` or ``text/plain``). When an instrumentation writes no
``llm.input_messages.*``/``llm.output_messages.*`` (the OpenAI Agents SDK's streaming chat path), these
are the only record of the call. Shapes read, by structure rather than by the emitter:

- a chat completion (``{"choices": [{"message": ..., "finish_reason": ...}]}``);
- a Responses API response (``{"output": [...items]}``), or a list of them;
- a message (``{"role", "content", "tool_calls"}``), an Anthropic message (``{"content": [blocks]}``), or a
  list of messages;
- requests: ``{"messages": [...]}`` (chat), ``{"input": [...] | str}`` (Responses), a list of messages or
  Responses input items;
- anything else, and ``text/plain``, is the text of one message.
"""

from __future__ import annotations

from collections.abc import Sequence

from otel_shapecheck._model import JSONValue, ToolCall, ToolResult
from otel_shapecheck.readers._content import TOOL_RESULT_ROLES, Message, optional_string
from otel_shapecheck.readers._content_parts import content_blocks, openai_tool_calls
from otel_shapecheck.readers._lenient_json import parse_json_or_text

JSON_MIME_TYPE = "application/json"


def payload_messages(value: object, mime_type: object, *, output: bool) -> tuple[Message, ...] | None:
    """The messages a raw payload holds; ``None`` when there is none (or it cannot be read).

    ``output`` says whether it is a response (a plain text is then the assistant's) or a request (the
    user's).
    """
    if not isinstance(value, str) or not value.strip():
        return None
    parsed: JSONValue = value
    if mime_type == JSON_MIME_TYPE or (mime_type is None and value.lstrip()[:1] in "[{"):
        parsed = parse_json_or_text(value)
    default_role = "assistant" if output else "user"
    if isinstance(parsed, str):
        return (Message(role=default_role, texts=(parsed,)),)
    messages = _messages(parsed, default_role)
    return messages or None


_REPLY_KEYS = frozenset({"choices", "output", "role", "content"})


def is_request_payload(value: object, mime_type: object) -> bool:
    """Whether an ``output.value`` holds a request (``{"messages": ...}``, no reply field), not a reply.

    An OpenInference "LLM" span whose output is a request is a preparation step (llama-index's
    ``_prepare_chat_with_tools``), not a model call.
    """
    if not isinstance(value, str) or mime_type != JSON_MIME_TYPE or not value.lstrip().startswith("{"):
        return False
    parsed = parse_json_or_text(value)
    return isinstance(parsed, dict) and "messages" in parsed and _REPLY_KEYS.isdisjoint(parsed)


def _messages(value: JSONValue, default_role: str) -> tuple[Message, ...]:
    if isinstance(value, list):
        return tuple(message for item in value for message in _messages_of_item(item, default_role))
    if isinstance(value, dict):
        return _messages_of_item(value, default_role)
    return ()


def _messages_of_item(item: JSONValue, default_role: str) -> tuple[Message, ...]:
    """One JSON object of any shape above; a bare string is a message text."""
    if isinstance(item, str):
        return (Message(role=default_role, texts=(item,)),) if item else ()
    if not isinstance(item, dict):
        return ()
    choices = item.get("choices")
    if isinstance(choices, list):
        return tuple(_choice(choice) for choice in choices[:1] if isinstance(choice, dict))
    for key in ("output", "messages", "input"):
        nested = item.get(key)
        if isinstance(nested, list):
            return _items(nested, default_role)
        if key == "input" and isinstance(nested, str) and nested:
            return (Message(role="user", texts=(nested,)),)
    return _items([item], default_role)


def _items(items: Sequence[JSONValue], default_role: str) -> tuple[Message, ...]:
    """Messages and Responses items in order; consecutive function calls join one assistant message."""
    messages: list[Message] = []
    pending_calls: list[ToolCall] = []
    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            name = optional_string(item.get("name"))
            if name:
                arguments = parse_json_or_text(item.get("arguments"))
                pending_calls.append(ToolCall(name, optional_string(item.get("call_id")), arguments))
            continue
        if pending_calls:
            messages.append(Message(role="assistant", tool_calls=tuple(pending_calls)))
            pending_calls = []
        if kind == "function_call_output":
            result = ToolResult(content=item.get("output"), call_id=optional_string(item.get("call_id")))
            messages.append(Message(role="tool", tool_results=(result,)))
        elif "role" in item or "content" in item:
            messages.append(_message(item, default_role))
    if pending_calls:
        messages.append(Message(role="assistant", tool_calls=tuple(pending_calls)))
    return tuple(messages)


def _choice(choice: dict[str, JSONValue]) -> Message:
    message = choice.get("message")
    read = _message(message, "assistant") if isinstance(message, dict) else Message(role="assistant")
    finish = optional_string(choice.get("finish_reason"))
    return Message(read.role, read.texts, read.tool_calls, read.tool_results, finish)


def _message(item: dict[str, JSONValue], default_role: str) -> Message:
    role = optional_string(item.get("role")) or default_role
    content = item.get("content")
    if role in TOOL_RESULT_ROLES:
        result = ToolResult(content=content, call_id=optional_string(item.get("tool_call_id")))
        return Message(role=role, tool_results=(result,))
    blocks = content_blocks(_responses_parts(content))
    return Message(
        role=role,
        texts=blocks.texts,
        tool_calls=openai_tool_calls(item.get("tool_calls")) or blocks.tool_calls,
        tool_results=blocks.tool_results,
    )


def _responses_parts(content: JSONValue) -> JSONValue:
    """Responses API content parts (``output_text``/``input_text``) as plain ``text`` blocks."""
    if not isinstance(content, list):
        return content
    return [
        {**part, "type": "text"}
        if isinstance(part, dict) and part.get("type") in ("output_text", "input_text")
        else part
        for part in content
    ]

"""Reader for GenAI content carried by log records (events) rather than span attributes.

Two generations exist: the ``gen_ai.client.inference.operation.details`` event (v1.37+), whose
attributes are the span's content attributes in structured form, and the deprecated per-message
events (``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
``gen_ai.tool.message``, ``gen_ai.choice``), one per message, whose bodies hold the content.
``tool_calls`` sit inside ``message`` in some emitters and beside it in the specification; both are read.

The same events also arrive as *span events* (strands-agents, and frameworks under
``gen_ai_latest_experimental``). A span event has no body: the fields a log record's body would hold are
its attributes, often as JSON strings, and a message's content may be a JSON-dumped block list.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.readers._content import (
    TOOL_RESULT_ROLES,
    CallContent,
    Message,
    merge_content,
    optional_string,
    stopped_for_tools,
)
from otel_shapecheck.readers._content_parts import (
    openai_tool_calls,
    recorded_content_blocks,
)
from otel_shapecheck.readers._genai import OUTPUT_MESSAGES, read_genai_content
from otel_shapecheck.readers._lenient_json import parse_json_object, parse_json_or_text, to_json_value

OPERATION_DETAILS_EVENT = "gen_ai.client.inference.operation.details"
SYSTEM_MESSAGE_EVENT = "gen_ai.system.message"
USER_MESSAGE_EVENT = "gen_ai.user.message"
ASSISTANT_MESSAGE_EVENT = "gen_ai.assistant.message"
TOOL_MESSAGE_EVENT = "gen_ai.tool.message"
CHOICE_EVENT = "gen_ai.choice"

EVENT_NAME_ATTRIBUTE = "event.name"
"""Where emitters of the removed Events API put the event name."""
ELIDED_CONTENT = "<elided>"
"""The ``content`` a per-message event carries when content capture is off (google-adk, google-genai)."""

_MESSAGE_EVENT_ROLES: Mapping[str, str] = {
    SYSTEM_MESSAGE_EVENT: "system",
    USER_MESSAGE_EVENT: "user",
    ASSISTANT_MESSAGE_EVENT: "assistant",
    TOOL_MESSAGE_EVENT: "tool",
}

CONTENT_EVENT_NAMES = frozenset({OPERATION_DETAILS_EVENT, CHOICE_EVENT, *_MESSAGE_EVENT_ROLES})
"""Every event name whose record carries LLM-call content."""


@dataclass
class _EventContent:
    """Content gathered from one span's records, in emission order."""

    details: list[CallContent] = field(default_factory=list)
    inputs: list[Message] = field(default_factory=list)
    choices: list[tuple[int, Message]] = field(default_factory=list)
    inputs_elided: bool = False
    """An input message's content was elided: the call's input is not captured (not the messages left)."""
    choices_elided: bool = False


def event_name_of(event_name: object, attributes: Mapping[str, object] | None) -> str | None:
    """A record's event name: its ``event_name`` field, else its ``event.name`` attribute."""
    if isinstance(event_name, str) and event_name:
        return event_name
    if attributes is None:
        return None
    name = attributes.get(EVENT_NAME_ATTRIBUTE)
    return name if isinstance(name, str) else None


def read_content_events(events: Sequence[tuple[str, Mapping[str, object], object]]) -> CallContent | None:
    """The call content of one span's events, given as ``(event name, attributes, body)`` in order."""
    gathered = _EventContent()
    for name, attributes, body in events:
        _gather(gathered, name, attributes, body)
    deprecated = _deprecated_content(gathered)
    readings = [*gathered.details, *([deprecated] if deprecated is not None else [])]
    return functools.reduce(merge_content, readings) if readings else None


def span_event_content(events: Sequence[object]) -> CallContent | None:
    """The call content of a span's own GenAI events (``span.events``), read like log records."""
    found: list[tuple[str, Mapping[str, object], object]] = []
    for event in events:
        name = getattr(event, "name", None)
        if name in CONTENT_EVENT_NAMES:
            attributes = getattr(event, "attributes", None)
            attributes = attributes if isinstance(attributes, Mapping) else {}
            found.append((name, attributes, attributes))  # a span event's fields are its attributes
    return read_content_events(found) if found else None


def events_name_tool_calls(events: Sequence[object]) -> bool:
    """Whether a span's events carry its output (hot path: names and a key or two, no parsing).

    An operation-details event with output messages does; so does a ``gen_ai.choice`` event, unless it
    says the model stopped for tools without naming any.
    """
    for event in events:
        name = getattr(event, "name", None)
        if name == OPERATION_DETAILS_EVENT:
            attributes = getattr(event, "attributes", None) or {}
            if OUTPUT_MESSAGES in attributes:
                return True
        elif name == CHOICE_EVENT:
            attributes = getattr(event, "attributes", None) or {}
            if "tool_calls" in attributes or not stopped_for_tools(attributes.get("finish_reason")):
                return True
            message = attributes.get("message")
            if isinstance(message, str) and ("toolUse" in message or "tool_calls" in message):
                return True
    return False


def _gather(gathered: _EventContent, name: str, attributes: Mapping[str, object], body: object) -> None:
    if name == OPERATION_DETAILS_EVENT:
        gathered.details.append(read_genai_content(attributes))
    elif name == CHOICE_EVENT:
        choice = _body_object(body)
        index = choice.get("index")
        order = index if isinstance(index, int) and not isinstance(index, bool) else len(gathered.choices)
        gathered.choices.append((order, _choice_message(choice)))
        gathered.choices_elided |= _elided(choice) or _elided(choice.get("message"))
    elif name in _MESSAGE_EVENT_ROLES:
        message = _body_object(body)
        gathered.inputs.append(_event_message(_MESSAGE_EVENT_ROLES[name], message))
        gathered.inputs_elided |= _elided(message)


def _deprecated_content(gathered: _EventContent) -> CallContent | None:
    if not gathered.inputs and not gathered.choices:
        return None
    outputs = tuple(message for _, message in sorted(gathered.choices, key=lambda item: item[0]))
    return CallContent(
        input_messages=tuple(gathered.inputs) if gathered.inputs and not gathered.inputs_elided else None,
        output_messages=outputs if gathered.choices and not gathered.choices_elided else None,
        finish_reasons=tuple(m.finish_reason for m in outputs if m.finish_reason is not None),
    )


def _elided(body: object) -> bool:
    """Whether an event body (or a choice's ``message``) says its content was left out."""
    return isinstance(body, dict) and body.get("content") == ELIDED_CONTENT


def _event_message(default_role: str, body: Mapping[str, JSONValue]) -> Message:
    """One per-message event body: ``content``, optional ``role``, ``tool_calls``, ``id`` (tool messages)."""
    role = optional_string(body.get("role")) or default_role
    content = body.get("content")
    blocks = recorded_content_blocks(content)
    if role in TOOL_RESULT_ROLES:
        if blocks.tool_results:  # Converse toolResult blocks: one result per block, with its id
            return Message(role=role, tool_results=blocks.tool_results)
        call_id = optional_string(body.get("id"))
        results = (ToolResult(content=content, call_id=call_id),) if "content" in body else ()
        return Message(role=role, tool_results=results)
    return Message(
        role=role,
        texts=blocks.texts,
        tool_calls=openai_tool_calls(parse_json_or_text(body.get("tool_calls"))) or blocks.tool_calls,
        tool_results=blocks.tool_results,
    )


def _choice_message(choice: Mapping[str, JSONValue]) -> Message:
    """A ``gen_ai.choice`` body; ``tool_calls`` inside ``message`` or beside it.

    ``message`` is the specification's ``{role, content, tool_calls}`` object, or (strands-agents) the
    content itself: plain text or a JSON-dumped block list.
    """
    inner = choice.get("message")
    if isinstance(inner, str):
        parsed = parse_json_or_text(inner)
        inner = parsed if isinstance(parsed, dict) else {"content": inner}
    message = inner if isinstance(inner, dict) else {}
    blocks = recorded_content_blocks(message.get("content"))
    calls = openai_tool_calls(message.get("tool_calls")) or openai_tool_calls(
        parse_json_or_text(choice.get("tool_calls"))
    )
    return Message(
        role=optional_string(message.get("role")) or "assistant",
        texts=blocks.texts,
        tool_calls=calls or blocks.tool_calls,
        tool_results=blocks.tool_results,
        finish_reason=optional_string(choice.get("finish_reason")),
    )


def _body_object(body: object) -> dict[str, JSONValue]:
    if isinstance(body, str | bytes):
        return parse_json_object(body) or {}
    converted = to_json_value(body)
    return converted if isinstance(converted, dict) else {}

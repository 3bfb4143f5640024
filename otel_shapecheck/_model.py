"""The normalised model the checks read: plain data, no OpenTelemetry types.

Readers turn every convention we understand (OTel GenAI spans and events, OpenLLMetry, OpenInference)
into these records, so a check never looks at a raw attribute name and the same check serves the live
span processor and the offline ``check`` command.

Ids are lowercase hex strings (32 characters for a trace id, 16 for a span id), as OTLP/JSON and the
trace backends print them.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace
from typing import TypeAlias

JSONValue: TypeAlias = "None | bool | int | float | str | list[JSONValue] | dict[str, JSONValue]"
"""A value as JSON would carry it: the shape of tool arguments and tool results once parsed."""


@dataclass(frozen=True)
class ToolParameter:
    """One parameter of an offered tool's input schema: its name, description and allowed values
    (nested ones dotted)."""

    name: str
    description: str | None = None
    enum: tuple[str, ...] = ()
    """The schema's ``enum`` values (of the items, for an array), as text: what the tool acts on."""


@dataclass(frozen=True)
class OfferedTool:
    """One tool on the menu the model was offered."""

    name: str
    description: str | None = None
    parameters: tuple[ToolParameter, ...] = ()
    """The schema's parameters in schema order (nested properties as ``outer.inner``), when captured."""


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation the model requested, in the order it requested them."""

    name: str
    call_id: str | None = None
    arguments: JSONValue = None


@dataclass(frozen=True)
class ToolResult:
    """One tool result the model saw (or that a tool execution produced).

    ``content`` is kept as captured: a JSON string, plain text, or an already structured value.
    Parsing is the job of the check that needs it, off the application's thread.
    """

    content: JSONValue
    call_id: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class LLMCall:
    """One LLM call (a chat, text-completion or generate-content operation).

    Fields a reader could not find are ``None`` (unknown), which is different from an empty tuple
    (known to be empty): ``offered_tools=None`` means no menu was captured, ``offered_tools=()``
    means the call offered no tools.
    """

    span_id: str
    trace_id: str
    parent_id: str | None = None
    offered_tools: tuple[OfferedTool, ...] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    """Tool calls the model requested, in first-call order; ``None`` when the output was not captured."""
    user_text: str | None = None
    """The user message of the current turn (the last ``user`` message of the input)."""
    user_texts: tuple[str, ...] = ()
    """Every user message of the input, oldest first (numbers the user supplied are exempt from figures)."""
    system_texts: tuple[str, ...] = ()
    """The instructions the application gave the model: system and developer messages of the input and
    instructions recorded apart from it (``gen_ai.system_instructions``). Numbers in them were supplied,
    not invented, and are exempt from figures like the user's; they are no choice context."""
    assistant_text: str | None = None
    """The latest assistant text of the current turn that precedes this call, when there is one."""
    tool_results: tuple[ToolResult, ...] = ()
    """Tool results present in the call's input messages; a tool turn recorded without its content is
    not captured and left out (it still counts in ``turn_tool_calls``)."""
    answer_text: str | None = None
    """The text the call produced (its first choice), when captured."""
    finish_reasons: tuple[str, ...] = ()
    response_id: str | None = None
    end_time_ns: int | None = None
    declared_answer_tools: tuple[str, ...] | None = None
    """Output tools the framework declared for this call (``None``: it declared nothing)."""
    answer_tool: str | None = None
    """The tool the answer came through, when the call answered by calling one (its ``answer_text``
    is then read from that call's arguments, and the call is not a tool choice)."""
    turn_tool_calls: int = 0
    """Tool calls the input shows the model made earlier in this turn (after the last user message)."""
    menu_source: str | None = None
    """Where the menu came from: ``span`` (the call's own span) or ``ancestor`` (the nearest ancestor)."""
    input_captured: bool = True
    """Whether the input messages were read: ``False`` when they were not recorded, hidden, or cut
    unreadable (an attribute length limit truncates them first, since they hold the tool results)."""

    @property
    def chosen(self) -> tuple[str, ...]:
        """Unique invoked tool names in first-call order."""
        return tuple(dict.fromkeys(call.name for call in self.tool_calls or ()))

    @property
    def tool_call_ids(self) -> tuple[str, ...]:
        """Every tool call id, parallel and repeated calls included."""
        return tuple(call.call_id for call in self.tool_calls or () if call.call_id)

    def merged_with(self, other: LLMCall) -> LLMCall:
        """Fill the fields this record is missing from ``other`` (e.g. content read from log events)."""
        return replace(
            self,
            parent_id=self.parent_id or other.parent_id,
            offered_tools=self.offered_tools if self.offered_tools is not None else other.offered_tools,
            tool_calls=self.tool_calls if self.tool_calls is not None else other.tool_calls,
            user_text=self.user_text if self.user_text is not None else other.user_text,
            user_texts=self.user_texts or other.user_texts,
            system_texts=self.system_texts or other.system_texts,
            assistant_text=self.assistant_text if self.assistant_text is not None else other.assistant_text,
            tool_results=self.tool_results or other.tool_results,
            answer_text=self.answer_text if self.answer_text is not None else other.answer_text,
            finish_reasons=self.finish_reasons or other.finish_reasons,
            response_id=self.response_id or other.response_id,
            end_time_ns=self.end_time_ns or other.end_time_ns,
            declared_answer_tools=self.declared_answer_tools
            if self.declared_answer_tools is not None
            else other.declared_answer_tools,
            answer_tool=self.answer_tool or other.answer_tool,
            menu_source=self.menu_source or other.menu_source,
            turn_tool_calls=self.turn_tool_calls or other.turn_tool_calls,
            input_captured=self.input_captured or other.input_captured,
        )


@dataclass(frozen=True)
class ToolExecution:
    """One tool execution span (``execute_tool``, an OpenInference TOOL span, a Traceloop tool task)."""

    span_id: str
    trace_id: str
    name: str
    parent_id: str | None = None
    call_id: str | None = None
    arguments: JSONValue = None
    result: JSONValue = None
    end_time_ns: int | None = None


@dataclass(frozen=True)
class AnalystAttempt:
    """One attempt of a structured-output analyst: how many rows it emitted and how many were accepted."""

    span_id: str
    trace_id: str
    analyst_id: str
    attempt: int
    emitted: int
    accepted: int
    parent_id: str | None = None
    unreadable: int = 0
    """Row counts the attempt reported that could not be read (``"abc"``, NaN, negative); 0 when none."""


def read_row_count(value: object) -> int | None:
    """A row count as an emitter reported it, or ``None`` when it is not one.

    A count is a whole number ≥ 0, given as a number or as a string of one (``"3"``, ``" 3 "``,
    ``"3.0"``). Booleans, NaN, infinities, negatives, fractions and other text are not counts.
    """
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    if not math.isfinite(number) or number < 0 or not number.is_integer():
        return None
    return int(number)


@dataclass(frozen=True)
class AnalystRun:
    """One ``analyze()`` of an analyst after retries settled: its span and the attempts under it."""

    span_id: str
    trace_id: str
    attempts: tuple[AnalystAttempt, ...] = field(default_factory=tuple)
    parent_id: str | None = None

"""The content of one LLM call as every convention reader sees it, and how it becomes an :class:`LLMCall`.

Each convention (OTel GenAI, OpenLLMetry, OpenInference, the deprecated per-message events) has its
own attribute layout but the same underlying shape: input messages, output messages, offered tools,
finish reasons and a response id. Readers fill :class:`CallContent`; :func:`llm_call_from_content`
derives the fields the checks need in one place, so "the user text of the turn" means the same thing
for every convention.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolResult

USER_ROLE = "user"
ASSISTANT_ROLES = frozenset({"assistant", "model"})
"""Roles of the model's own messages (``model`` is Gemini's name for it)."""
SYSTEM_ROLES = frozenset({"system", "developer"})
"""Roles of the application's instructions to the model (``developer`` is OpenAI's newer name)."""
TOOL_RESULT_ROLES = frozenset({"tool", "function"})
"""Roles of messages that return a tool's result (``function`` is the older OpenAI name)."""
TOOL_FINISH_REASONS = frozenset({"tool_calls", "tool_call", "function_call", "tool_use", "tool-calls"})
"""Finish reasons (compared in lower case) that mean the model stopped to call tools (``tool-calls`` is
the AI SDK's, in its own attributes and in the GenAI ones of ``@ai-sdk/otel``)."""


@dataclass(frozen=True)
class Message:
    """One chat message reduced to what the checks read: its role, text parts, tool calls and tool results."""

    role: str | None
    texts: tuple[str, ...] = ()
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    finish_reason: str | None = None

    @property
    def text(self) -> str | None:
        """The message's text parts joined by newlines, or ``None`` when it has none."""
        return "\n".join(self.texts) if self.texts else None


@dataclass(frozen=True)
class SpanRef:
    """Where a reading came from: the span's ids (lowercase hex) and its end time."""

    span_id: str
    trace_id: str
    parent_id: str | None = None
    end_time_ns: int | None = None


@dataclass(frozen=True)
class CallContent:
    """What a convention reader found about one LLM call; ``None`` means "not captured"."""

    input_messages: tuple[Message, ...] | None = None
    output_messages: tuple[Message, ...] | None = None
    offered_tools: tuple[OfferedTool, ...] | None = None
    finish_reasons: tuple[str, ...] = ()
    response_id: str | None = None
    answer_tools: tuple[str, ...] | None = None
    """Output tools the framework declared apart from its function tools (``None``: none declared)."""
    not_a_call: bool = False
    """The span says it is no model call (its recorded output is a request): read it as none."""
    system_texts: tuple[str, ...] = ()
    """Instructions recorded apart from the input messages (``gen_ai.system_instructions``)."""


def llm_call_from_content(content: CallContent, ref: SpanRef) -> LLMCall:
    """The normalised LLM call for a span's (or a log record group's) content."""
    inputs = content.input_messages or ()
    outputs = content.output_messages
    finish_reasons = content.finish_reasons or _output_finish_reasons(outputs or ())
    tool_calls = None if outputs is None else tuple(call for m in outputs for call in m.tool_calls)
    if tool_calls == () and stopped_for_tools(finish_reasons):
        tool_calls = None  # The output says it requested tools but names none: they are unknown, not absent.
    return LLMCall(
        span_id=ref.span_id,
        trace_id=ref.trace_id,
        parent_id=ref.parent_id,
        offered_tools=content.offered_tools,
        tool_calls=tool_calls,
        user_text=_last_user_text(inputs),
        user_texts=tuple(m.text for m in inputs if _is_prompt(m) and m.text is not None),
        system_texts=(
            *content.system_texts,
            *(m.text for m in inputs if m.role in SYSTEM_ROLES and m.text is not None),
        ),
        assistant_text=_turn_assistant_text(inputs),
        # Results in the output are provider-executed tools' (a web search): the answer saw them too. A
        # result whose content was not captured is no basis (it still counts as a tool turn, below).
        tool_results=tuple(
            result
            for m in (*inputs, *(outputs or ()))
            for result in m.tool_results
            if result.content is not None
        ),
        answer_text=_answer_text(outputs or ()),
        finish_reasons=finish_reasons,
        response_id=content.response_id,
        end_time_ns=ref.end_time_ns,
        declared_answer_tools=content.answer_tools,
        menu_source="span" if content.offered_tools else None,
        turn_tool_calls=_turn_tool_calls(inputs),
        input_captured=content.input_messages is not None,
    )


def stopped_for_tools(finish_reasons: object) -> bool:
    """Whether a finish reason (a string or a sequence of them) says the model stopped to call tools."""
    reasons = (finish_reasons,) if isinstance(finish_reasons, str) else finish_reasons
    if not isinstance(reasons, tuple | list):
        return False
    return any(isinstance(reason, str) and reason.lower() in TOOL_FINISH_REASONS for reason in reasons)


def merge_content(first: CallContent, second: CallContent) -> CallContent:
    """``first`` with the fields it did not capture taken from ``second``.

    An empty reading changes nothing on either side, so readings of every convention merge in order.
    """
    return CallContent(
        input_messages=first.input_messages if first.input_messages is not None else second.input_messages,
        output_messages=first.output_messages
        if first.output_messages is not None
        else second.output_messages,
        offered_tools=first.offered_tools if first.offered_tools is not None else second.offered_tools,
        finish_reasons=first.finish_reasons or second.finish_reasons,
        response_id=first.response_id or second.response_id,
        answer_tools=first.answer_tools if first.answer_tools is not None else second.answer_tools,
        not_a_call=first.not_a_call or second.not_a_call,
        system_texts=first.system_texts or second.system_texts,
    )


def optional_string(value: object) -> str | None:
    """The value when it is a string, else ``None``."""
    return value if isinstance(value, str) else None


def _is_prompt(message: Message) -> bool:
    """A user message that opens a turn; one carrying only tool results (Anthropic's shape) does not."""
    return message.role == USER_ROLE and (bool(message.texts) or not message.tool_results)


def _last_user_text(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        if _is_prompt(message):
            return message.text
    return None


def _turn_assistant_text(messages: Sequence[Message]) -> str | None:
    """The latest assistant text after the last user message: what the agent said earlier in this turn."""
    for message in reversed(messages):
        if _is_prompt(message):
            return None
        if message.role in ASSISTANT_ROLES and message.text is not None:
            return message.text
    return None


def _turn_tool_calls(messages: Sequence[Message]) -> int:
    """Tool calls (and tool results, when the calls themselves were not recorded) after the last prompt."""
    calls = results = 0
    for message in reversed(messages):
        if _is_prompt(message):
            break
        calls += len(message.tool_calls)
        results += len(message.tool_results)
    return calls or results


def _answer_text(outputs: Sequence[Message]) -> str | None:
    """The first choice's text (each output message is one choice)."""
    return outputs[0].text if outputs else None


def _output_finish_reasons(outputs: Sequence[Message]) -> tuple[str, ...]:
    return tuple(m.finish_reason for m in outputs if m.finish_reason is not None)

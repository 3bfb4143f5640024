"""What a span is to the checks, and in which convention it is written: decided once, when it is recorded.

:func:`classify_span` runs for every span the recording thread records (``on_end`` itself only tests
the span's keys against :data:`CLASSIFYING_KEYS`), so it only looks up the few attributes that say a
span's role; its :class:`SpanClass` travels with the held span to the worker,
which then runs the reader of that convention (and of any other convention whose content the span
also carries) instead of classifying again. :func:`names_own_tool_calls` and
:func:`is_genai_content_record` are the other two hot-path questions.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final, TypeAlias

from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord

from otel_shapecheck._attributes import ANALYST_ATTEMPT, ANALYST_ID
from otel_shapecheck.readers._adk import (
    ADK_CONTENT_KEYS,
    ADK_TOOL_KEYS,
    LLM_REQUEST,
    LLM_RESPONSE,
    TOOL_CALL_ARGS,
    TOOL_RESPONSE,
    is_captured,
)
from otel_shapecheck.readers._ai_sdk import (
    AI_SDK_CONTENT_KEYS,
    MODEL_CALL_OPERATIONS,
    OPERATION_ID,
    PROMPT_MESSAGES,
    RESPONSE_FINISH_REASON,
    RESPONSE_TEXT,
    RESPONSE_TOOL_CALLS,
    RUN_OPERATIONS,
    TOOL_CALL_OPERATION,
)
from otel_shapecheck.readers._content import stopped_for_tools
from otel_shapecheck.readers._genai import (
    EXECUTE_TOOL_SPAN_PREFIX,
    FINISH_REASONS,
    GENAI_CONTENT_KEYS,
    INPUT_MESSAGES,
    OPERATION_NAME,
    OUTPUT_MESSAGES,
    SYSTEM_INSTRUCTIONS,
)
from otel_shapecheck.readers._genai_events import CONTENT_EVENT_NAMES, event_name_of
from otel_shapecheck.readers._openinference import FINISH_REASON as OPENINFERENCE_FINISH_REASON
from otel_shapecheck.readers._openinference import (
    INPUT_MESSAGES_PREFIX,
    INPUT_VALUE,
    OPENINFERENCE_CONTENT_PREFIXES,
    OPENINFERENCE_SPAN_KIND,
    OUTPUT_MESSAGE_MARKERS,
    OUTPUT_MESSAGES_PREFIX,
    OUTPUT_TOOL_CALL_MARKER,
    OUTPUT_VALUE,
)
from otel_shapecheck.readers._openllmetry import (
    COMPLETION_FINISH_REASON,
    COMPLETION_MARKERS,
    COMPLETION_PREFIX,
    COMPLETION_TOOL_CALL_MARKER,
    LLM_REQUEST_TYPE,
    OPENLLMETRY_CONTENT_PREFIXES,
    PROMPT_PREFIX,
    TRACELOOP_SPAN_KIND,
)

AnyLogRecord: TypeAlias = "LogRecord | ReadableLogRecord | ReadWriteLogRecord"
"""A log record as the API emits it, or as the SDK hands it to processors and exporters."""

MCP_METHOD_NAME = "mcp.method.name"

_LLM_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
_LEGACY_LLM_REQUEST_TYPES = frozenset({"chat", "completion"})
_EXECUTE_TOOL = "execute_tool"
_MCP_TOOLS_CALL = "tools/call"
_INVOKE_AGENT = "invoke_agent"
_OPENINFERENCE_AGENT = "AGENT"
_TRACELOOP_AGENT_KINDS = frozenset({"agent", "workflow"})
_MODEL_CALL_CONTENT_KEYS = frozenset({INPUT_MESSAGES, OUTPUT_MESSAGES})
"""GenAI keys that only a model call's span carries when no operation name says what the span is. Tool
definitions are not among them: a loop or agent span may carry its calls' menu, and a span with a menu
alone must stay an ordinary span on the hot path (its menu still reaches the calls below it)."""

CLASSIFYING_KEYS = frozenset(
    {
        ANALYST_ID,
        ANALYST_ATTEMPT,
        OPERATION_NAME,
        OPENINFERENCE_SPAN_KIND,
        LLM_REQUEST_TYPE,
        TRACELOOP_SPAN_KIND,
        MCP_METHOD_NAME,
        *ADK_CONTENT_KEYS,
        *ADK_TOOL_KEYS,
        OPERATION_ID,
        *_MODEL_CALL_CONTENT_KEYS,
    }
)
"""Every attribute :func:`classify_span` reads; a span with none of them (and no tool-span name) is OTHER."""

_OUTPUT_KEYS = frozenset(
    {OUTPUT_MESSAGES, OUTPUT_VALUE, *COMPLETION_MARKERS, *OUTPUT_MESSAGE_MARKERS}
    | {COMPLETION_FINISH_REASON, OPENINFERENCE_FINISH_REASON, FINISH_REASONS}
    | {RESPONSE_TEXT, RESPONSE_TOOL_CALLS, RESPONSE_FINISH_REASON}
)
"""Every attribute :func:`names_own_tool_calls` reads."""


class SpanRole(enum.Enum):
    """What a span is to the checks (not to be confused with OpenTelemetry's ``SpanKind``)."""

    LLM_CALL = "llm_call"
    TOOL_EXECUTION = "tool_execution"
    ANALYST_ATTEMPT = "analyst_attempt"
    AGENT = "agent"
    """An agent (or Traceloop workflow) span: the outermost one of a trace is a run."""
    OTHER = "other"


ROLE_LLM_CALL: Final = SpanRole.LLM_CALL
ROLE_TOOL_EXECUTION: Final = SpanRole.TOOL_EXECUTION
ROLE_ANALYST_ATTEMPT: Final = SpanRole.ANALYST_ATTEMPT
ROLE_AGENT: Final = SpanRole.AGENT
# The roles as module names, for the hot path: on Python 3.11 reading a member off an Enum class
# (``SpanRole.LLM_CALL``) runs the enum metaclass's attribute hook, about 150 ns a read.


class Convention(enum.Flag):
    """The attribute conventions a span is written in; a span may carry more than one."""

    NONE = 0
    GENAI = enum.auto()
    """OpenTelemetry GenAI semantic conventions (``gen_ai.operation.name``, JSON content attributes)."""
    OPENLLMETRY = enum.auto()
    """OpenLLMetry / Traceloop (``llm.request.type``, indexed ``gen_ai.prompt.N.*``)."""
    OPENINFERENCE = enum.auto()
    """OpenInference (``openinference.span.kind``, indexed ``llm.input_messages.N.*``)."""
    SHAPECHECK = enum.auto()
    """Our own analyst-attempt spans (``shapecheck.analyst.*``)."""
    ADK = enum.auto()
    """google-adk's own record (``gcp.vertex.agent.llm_request`` / ``llm_response`` JSON, tool fields)."""
    AI_SDK = enum.auto()
    """The Vercel AI SDK's own telemetry (``ai.operationId``, ``ai.prompt.*``, ``ai.response.*``)."""


@dataclass(frozen=True, slots=True)
class SpanClass:
    """A span's role, the convention that said so, and the rule's label (one shared instance per rule)."""

    role: SpanRole
    convention: Convention
    label: str = "other"
    """How the span was classified, as counted (``ProcessorCounts.classified``, ``check``'s report)."""


OTHER = SpanClass(SpanRole.OTHER, Convention.NONE)
"""The class of every span that is nothing to the checks."""
LLM_CALL_GENAI = SpanClass(SpanRole.LLM_CALL, Convention.GENAI, "llm_call:genai")
LLM_CALL_GENAI_CONTENT = SpanClass(SpanRole.LLM_CALL, Convention.GENAI, "llm_call:genai-content")
"""A model call known by its GenAI messages or tool definitions: it names no operation."""
LLM_CALL_OPENINFERENCE = SpanClass(SpanRole.LLM_CALL, Convention.OPENINFERENCE, "llm_call:openinference")
LLM_CALL_OPENLLMETRY = SpanClass(SpanRole.LLM_CALL, Convention.OPENLLMETRY, "llm_call:openllmetry")
LLM_CALL_AI_SDK = SpanClass(SpanRole.LLM_CALL, Convention.AI_SDK, "llm_call:ai-sdk")
TOOL_EXECUTION_GENAI = SpanClass(SpanRole.TOOL_EXECUTION, Convention.GENAI, "tool_execution:genai")
TOOL_EXECUTION_OPENINFERENCE = SpanClass(
    SpanRole.TOOL_EXECUTION, Convention.OPENINFERENCE, "tool_execution:openinference"
)
TOOL_EXECUTION_OPENLLMETRY = SpanClass(
    SpanRole.TOOL_EXECUTION, Convention.OPENLLMETRY, "tool_execution:openllmetry"
)
TOOL_EXECUTION_AI_SDK = SpanClass(SpanRole.TOOL_EXECUTION, Convention.AI_SDK, "tool_execution:ai-sdk")
ANALYST_ATTEMPT_SPAN = SpanClass(SpanRole.ANALYST_ATTEMPT, Convention.SHAPECHECK, "analyst_attempt")
AGENT_GENAI = SpanClass(SpanRole.AGENT, Convention.GENAI, "agent:genai")
AGENT_OPENINFERENCE = SpanClass(SpanRole.AGENT, Convention.OPENINFERENCE, "agent:openinference")
AGENT_OPENLLMETRY = SpanClass(SpanRole.AGENT, Convention.OPENLLMETRY, "agent:openllmetry")
AGENT_AI_SDK = SpanClass(SpanRole.AGENT, Convention.AI_SDK, "agent:ai-sdk")
LLM_CALL_ADK = SpanClass(SpanRole.LLM_CALL, Convention.ADK, "llm_call:adk")
TOOL_EXECUTION_ADK = SpanClass(SpanRole.TOOL_EXECUTION, Convention.ADK, "tool_execution:adk")
# Shared instances: classify_span runs once per recorded span and must not build objects (nor look
# them up by enum members, whose hashing runs Python code).


def classify_span(name: str, attributes: Mapping[str, object]) -> SpanClass:
    """The role of a span and its convention, from the few attributes that say it and a name prefix.

    A plain dict (what the hot path hands over: an ended span's frozen attribute dict) is read as it
    is; any other mapping only for the keys it has, because the SDK's attribute mapping answers a
    missing key by raising and catching ``KeyError``. Both read the same: a key that is missing and
    one that holds no text match nothing below.
    """
    is_tool_name = isinstance(name, str) and name.startswith(EXECUTE_TOOL_SPAN_PREFIX)
    if type(attributes) is dict:
        values: Mapping[str, object] = attributes
    else:
        present = CLASSIFYING_KEYS.intersection(attributes)
        if not present:
            return TOOL_EXECUTION_GENAI if is_tool_name else OTHER
        values = {key: attributes[key] for key in present}
    if ANALYST_ID in values and ANALYST_ATTEMPT in values:
        return ANALYST_ATTEMPT_SPAN
    # Runs for every recorded span: each value is tested for text in line (what _string() does).
    operation = values.get(OPERATION_NAME)
    if not isinstance(operation, str):
        operation = None
    elif operation in _LLM_OPERATIONS:
        return LLM_CALL_GENAI
    openinference_kind = values.get(OPENINFERENCE_SPAN_KIND)
    if not isinstance(openinference_kind, str):
        openinference_kind = None
    traceloop_kind = values.get(TRACELOOP_SPAN_KIND)
    if not isinstance(traceloop_kind, str):
        traceloop_kind = None
    if operation == _EXECUTE_TOOL:
        return _tool_class(openinference_kind, traceloop_kind, values)
    if openinference_kind == "LLM":
        return LLM_CALL_OPENINFERENCE
    request_type = values.get(LLM_REQUEST_TYPE)
    if isinstance(request_type, str) and request_type in _LEGACY_LLM_REQUEST_TYPES:
        return LLM_CALL_OPENLLMETRY
    ai_operation = values.get(OPERATION_ID)
    if not isinstance(ai_operation, str):
        ai_operation = None
    elif ai_operation in MODEL_CALL_OPERATIONS:
        return LLM_CALL_AI_SDK
    if (
        openinference_kind == "TOOL"
        or traceloop_kind == "tool"
        or _string(values.get(MCP_METHOD_NAME)) == _MCP_TOOLS_CALL
        or ai_operation == TOOL_CALL_OPERATION
        or is_tool_name
    ):
        if ai_operation == TOOL_CALL_OPERATION and openinference_kind is None and traceloop_kind is None:
            return TOOL_EXECUTION_AI_SDK
        return _tool_class(openinference_kind, traceloop_kind, values)
    if operation is None and (LLM_REQUEST in values or LLM_RESPONSE in values):
        # google-adk's call_llm span names no operation: its request and response say it is a model
        # call (also with content capture off, when they read "{}": a call seen, its content not).
        return LLM_CALL_ADK
    if operation == _INVOKE_AGENT:
        return AGENT_GENAI
    if openinference_kind == _OPENINFERENCE_AGENT:
        return AGENT_OPENINFERENCE
    if traceloop_kind in _TRACELOOP_AGENT_KINDS:
        return AGENT_OPENLLMETRY
    if ai_operation in RUN_OPERATIONS:
        return AGENT_AI_SDK
    if (
        operation is None
        and openinference_kind is None
        and traceloop_kind is None
        and ai_operation is None
        and not _MODEL_CALL_CONTENT_KEYS.isdisjoint(values)
    ):
        # Traceloop's JS span processor writes a model call's messages and tool definitions without
        # gen_ai.operation.name: spans that name another operation, or another convention's role, are not.
        return LLM_CALL_GENAI_CONTENT
    return OTHER


def is_agent_span(attributes: Mapping[str, object]) -> bool:
    """Whether a span's attributes make it an agent span (three key lookups; for live ancestors).

    The same rule as :func:`classify_span`'s agent role, without the roles that take precedence over it:
    an ancestor of an LLM call is never itself an LLM call or a tool execution in practice.
    """
    if attributes.get(OPERATION_NAME) == _INVOKE_AGENT:
        return True
    if attributes.get(OPENINFERENCE_SPAN_KIND) == _OPENINFERENCE_AGENT:
        return True
    kind = attributes.get(TRACELOOP_SPAN_KIND)
    if isinstance(kind, str) and kind in _TRACELOOP_AGENT_KINDS:
        return True
    operation = attributes.get(OPERATION_ID)
    return isinstance(operation, str) and operation in RUN_OPERATIONS


def _tool_class(
    openinference_kind: str | None, traceloop_kind: str | None, values: Mapping[str, object]
) -> SpanClass:
    """Whose reader reads a tool span: OpenInference's TOOL spans, Traceloop's tool tasks and ADK's tool
    spans keep their arguments and results in their own attributes; every other one is read as
    ``execute_tool``."""
    if openinference_kind == "TOOL":
        return TOOL_EXECUTION_OPENINFERENCE
    if traceloop_kind == "tool":
        return TOOL_EXECUTION_OPENLLMETRY
    if TOOL_CALL_ARGS in values or TOOL_RESPONSE in values:
        return TOOL_EXECUTION_ADK
    return TOOL_EXECUTION_GENAI


def content_conventions(attributes: Mapping[str, object]) -> Convention:
    """The conventions whose LLM-call content a span's attributes carry (one pass over the keys).

    The worker reads a span with the reader of its classified convention and of each convention found
    here, so a span written in two conventions (a provider instrumentation beside a framework's, or
    OpenLLMetry's JSON attributes under its legacy request type) is read in both and merged.
    """
    found = Convention.NONE
    for key in attributes:
        if not isinstance(key, str):
            continue
        if key in GENAI_CONTENT_KEYS:
            found |= Convention.GENAI
        elif key.startswith(OPENLLMETRY_CONTENT_PREFIXES):
            found |= Convention.OPENLLMETRY
        elif key.startswith(OPENINFERENCE_CONTENT_PREFIXES):
            found |= Convention.OPENINFERENCE
        elif key in ADK_CONTENT_KEYS:
            found |= Convention.ADK
        elif key in AI_SDK_CONTENT_KEYS:
            found |= Convention.AI_SDK
    return found


_MESSAGE_CONTENT_KEYS = frozenset(
    {INPUT_MESSAGES, OUTPUT_MESSAGES, SYSTEM_INSTRUCTIONS, INPUT_VALUE, OUTPUT_VALUE}
    | {PROMPT_MESSAGES, RESPONSE_TEXT, RESPONSE_TOOL_CALLS}
)
_MESSAGE_CONTENT_PREFIXES = (PROMPT_PREFIX, COMPLETION_PREFIX, INPUT_MESSAGES_PREFIX, OUTPUT_MESSAGES_PREFIX)


def carries_message_content(attributes: Mapping[str, object], events: Sequence[object] = ()) -> bool:
    """Whether a span itself carries message content (prompts, replies), in attributes or span events.

    Only then may its enriched copy quote content (the figures of its answer and of tool results, tool
    names the model wrote): a span whose instrumentation kept content out (log events only, or none)
    must not gain it through us. Tool definitions are the application's, not message content.
    """
    for key in attributes:
        if isinstance(key, str) and (
            key in _MESSAGE_CONTENT_KEYS or key.startswith(_MESSAGE_CONTENT_PREFIXES)
        ):
            return True
        if key in ADK_CONTENT_KEYS and is_captured(attributes[key]):  # "{}": capture was off
            return True
    return any(getattr(event, "name", None) in CONTENT_EVENT_NAMES for event in events)


def names_own_tool_calls(attributes: Mapping[str, object]) -> bool:
    """Whether a span's own attributes carry its output, so its tool calls are known at its end.

    Flattened output that says the model stopped to call tools but names no tool call does not count:
    some instrumentations record the text of a reply and never its tool calls. A raw ``output.value``
    with no flattened output (an OpenInference LLM span of a streamed reply) is the whole reply.
    """
    if OUTPUT_MESSAGES in attributes:  # the GenAI convention's output: the common case, first
        return True
    if LLM_RESPONSE in attributes:  # google-adk's whole response, unless capture was off ("{}")
        return is_captured(attributes[LLM_RESPONSE])
    present = _OUTPUT_KEYS.intersection(attributes)
    if not present:
        return False
    if not present.isdisjoint(COMPLETION_MARKERS):
        tool_call_marker, finish_reason_key = COMPLETION_TOOL_CALL_MARKER, COMPLETION_FINISH_REASON
    elif not present.isdisjoint(OUTPUT_MESSAGE_MARKERS):
        tool_call_marker, finish_reason_key = OUTPUT_TOOL_CALL_MARKER, OPENINFERENCE_FINISH_REASON
    elif RESPONSE_TEXT in present or RESPONSE_TOOL_CALLS in present:
        tool_call_marker, finish_reason_key = RESPONSE_TOOL_CALLS, RESPONSE_FINISH_REASON
    else:
        return OUTPUT_VALUE in present
    if tool_call_marker in present:
        return True
    reasons = [attributes[key] for key in (finish_reason_key, FINISH_REASONS) if key in present]
    return not any(stopped_for_tools(reason) for reason in reasons)


def is_genai_content_record(log_record: AnyLogRecord) -> bool:
    """Whether a log record is a GenAI event that carries LLM-call content."""
    log_record = api_record(log_record)
    attributes = log_record.attributes
    name = event_name_of(log_record.event_name, attributes if isinstance(attributes, Mapping) else None)
    return name in CONTENT_EVENT_NAMES


def api_record(record: AnyLogRecord) -> LogRecord:
    """The API log record inside the SDK's processor and exporter wrappers."""
    if isinstance(record, ReadableLogRecord | ReadWriteLogRecord):
        return record.log_record
    return record


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None

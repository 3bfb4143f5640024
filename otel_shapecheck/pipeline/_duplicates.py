"""One model call recorded by two instrumentations: which span is evaluated, and which is a duplicate.

OpenInference and OpenLLMetry on one LangChain app write two parallel span trees; a framework's own
LLM span sits above a provider instrumentation's. Both spans then record the same call. The rule, the
same live and offline: a span is a duplicate of the earliest-ended span of its trace that records the
same call; the span that ended first is the one evaluated. Two spans record the same call when

- they overlap in time (one model call runs inside both);
- they come from different instrumentation scopes (one instrumentation never records a call twice,
  so parallel or repeated calls of one framework are never merged);
- their response ids are equal when both have one; otherwise their tool calls' ids (with the tools'
  names) are equal when both carry ids (a provider gives every tool call an id of its own, so a
  shared id is strong evidence of one call, and different ids are two calls); otherwise their
  outputs are known and equal (the same tool calls with the same arguments, or the same answer text)
  and so are their user messages. Absent arguments and ``{}`` are the same arguments: OpenInference
  leaves out those of a call without arguments, OpenLLMetry writes ``{}``.

An output that is unknown on either side never merges: two calls are kept apart unless the telemetry
shows they are one.

One instrumentation may also write one call as two spans: the request, without an output, and the
response (logfire writes a streamed response as a span of its own once the stream is read). Such a
*request/response pair* is joined whatever the scopes: both of one trace and one scope, the response
a child of the request (or the request of the response), or a span beside it (the same parent) that
started once the request ended; the request has no output, the response has one, and their inputs,
where both were captured, are the same turn. The response is the span evaluated (taking the request's
menu and input when it has no input of its own), and the request is marked a duplicate of it.

Side by side, the two spans are joined only on what the trace shows ran between them, never on what
had been recorded when the request was evaluated: a tool execution under their parent that ended
after the request ended and before the response did says the request's tool calls ran (its output was
just not captured), so the response is the next call's; and where a bound dropped facts of the trace
(a span forwarded unrecorded, a fact refused, the trace's facts forgotten) that may have ended in
between, the pair cannot be decided and the spans stay two calls. Nested spans are one call whatever
ran beside them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._model import LLMCall
from otel_shapecheck.otlp._ids import span_id_hex
from otel_shapecheck.pipeline._facts import Losses


def duplicate_of(
    span: ReadableSpan, call: LLMCall, earlier: Sequence[tuple[ReadableSpan, LLMCall]]
) -> str | None:
    """The span id (hex) of the earliest span in ``earlier`` that records the same call, else ``None``.

    ``earlier`` holds other LLM-call spans of the trace with their readings.
    """
    matches = [
        other
        for other, other_call in earlier
        if could_record_one_call(other, span) and same_call(call, other_call)
    ]
    if not matches:
        return None
    first = min(matches, key=_end_key)
    return span_id_hex(first.context.span_id) if first.context is not None else None


def response_of(
    span: ReadableSpan, call: LLMCall, others: Sequence[tuple[ReadableSpan, LLMCall]]
) -> str | None:
    """For a request span (no output): the span id (hex) of the earliest span in ``others`` that records
    its response, else ``None``."""
    if has_output(call):
        return None
    matches = [
        other
        for other, other_call in others
        if other is not span
        and could_pair(span, other)
        and awaits_response(span, call, other)
        and has_output(other_call)
        and _same_turn(call, other_call)
    ]
    if not matches:
        return None
    first = min(matches, key=_end_key)
    return format(first.context.span_id, "016x") if first.context is not None else None


def request_of(
    span: ReadableSpan, call: LLMCall, others: Sequence[tuple[ReadableSpan, LLMCall]]
) -> LLMCall | None:
    """For a response span without its own input: the reading of the latest request span in ``others``
    it answers, else ``None``."""
    if call.input_captured:
        return None
    matches = [
        (other, other_call)
        for other, other_call in others
        if other is not span
        and could_pair(other, span)
        and awaits_response(other, other_call, span)
        and _same_turn(call, other_call)
    ]
    if not matches:
        return None
    return max(matches, key=lambda match: _end_key(match[0]))[1]


def could_pair(request: ReadableSpan, response: ReadableSpan) -> bool:
    """The span-level half of the pair rule: one trace and one scope, nested, or side by side in order."""
    if (
        request.context is None
        or response.context is None
        or request.context.trace_id != response.context.trace_id
    ):
        return False
    if request.instrumentation_scope is None or _other_scope(request, response):
        return False
    request_parent, response_parent = request.parent, response.parent
    if response_parent is not None and response_parent.span_id == request.context.span_id:
        return True
    if request_parent is not None and request_parent.span_id == response.context.span_id:
        return True
    same_parent = (request_parent.span_id if request_parent else None) == (
        response_parent.span_id if response_parent else None
    )
    return same_parent and (request.end_time or 0) <= (response.start_time or 0)


def apart(
    request: ReadableSpan, response: ReadableSpan, executions: Iterable[ReadableSpan], losses: Losses
) -> bool:
    """Whether spans that :func:`could_pair` are not shown to be one call by what ran between them.

    Side by side, they are apart when a tool execution under their parent ended between the request's
    end and the response's (the request's tool calls ran: the response is the next call's), or when a
    span of the trace whose facts were lost (``losses``) may have ended then. Nested, never.
    """
    if _is_parent(request, response) or _is_parent(response, request):
        return False
    first, last = request.end_time or 0, response.end_time or 0
    parent = request.parent.span_id if request.parent is not None else None
    for execution in executions:
        end = execution.end_time
        if (
            end is not None
            and first <= end <= last
            and (execution.parent.span_id if execution.parent is not None else None) == parent
        ):
            return True
    return losses.between(first, last)


def awaits_response(request: ReadableSpan, call: LLMCall, response: ReadableSpan) -> bool:
    """Whether ``request`` (read as ``call``) may be the request half of a pair with ``response``: no
    output read, and, beside its response rather than around or under it, no finish reason either. A
    finish reason says the response was recorded on the request's own span (its content was just not
    captured), so such a span is not paired with a later sibling, a separate call of the same turn; a
    nested pair (google-adk's ``call_llm`` over ``generate_content``) is one call either way."""
    if has_output(call):
        return False
    nested = _is_parent(request, response) or _is_parent(response, request)
    return nested or not call.finish_reasons


def _is_parent(parent: ReadableSpan, child: ReadableSpan) -> bool:
    return (
        parent.context is not None
        and child.parent is not None
        and child.parent.span_id == parent.context.span_id
    )


def has_output(call: LLMCall) -> bool:
    """Whether the call's output was read: tool calls, an answer, or an answer tool."""
    return call.tool_calls is not None or call.answer_text is not None or call.answer_tool is not None


def _same_turn(first: LLMCall, second: LLMCall) -> bool:
    """Whether two readings may be one call's input: equal where both were captured."""
    if not (first.input_captured and second.input_captured):
        return True
    return (first.user_text, first.turn_tool_calls) == (second.user_text, second.turn_tool_calls)


def could_record_one_call(other: ReadableSpan, span: ReadableSpan) -> bool:
    """The span-level half of the rule (``other`` ended first, they overlap, other scopes): no reading."""
    return _ended_before(other, span) and _overlap(other, span) and _other_scope(other, span)


def one_instrumentation(spans: Iterable[ReadableSpan]) -> bool:
    """Whether every span has the same known instrumentation scope, so none can record another's call.

    :func:`could_record_one_call` needs other scopes; a trace written by one instrumentation (the usual
    case) is thereby settled once per release instead of once per pair of its calls.
    """
    scopes = {_scope_key(span) for span in spans}
    return len(scopes) == 1 and None not in scopes


def _scope_key(span: ReadableSpan) -> tuple[str, str | None] | None:
    scope = span.instrumentation_scope
    return (scope.name, scope.version) if scope is not None else None


def same_call(first: LLMCall, second: LLMCall) -> bool:
    """Whether two readings record one model call (see the module docstring)."""
    if first.response_id and second.response_id:
        return first.response_id == second.response_id
    first_ids, second_ids = _identified_calls(first), _identified_calls(second)
    if first_ids and second_ids:
        return first_ids == second_ids
    output = _output(first)
    if output is None or output != _output(second):
        return False
    return first.user_text is None or second.user_text is None or first.user_text == second.user_text


def _identified_calls(call: LLMCall) -> frozenset[tuple[str, str]]:
    """The call's tool calls that carry an id, as (id, tool name)."""
    return frozenset((c.call_id, c.name) for c in call.tool_calls or () if c.call_id)


def _output(call: LLMCall) -> tuple[object, ...] | None:
    if call.tool_calls:
        return tuple(sorted((c.name, _canonical(c.arguments)) for c in call.tool_calls))
    text = " ".join((call.answer_text or "").split())
    if call.answer_tool is not None or (call.tool_calls == () and text):
        return ("text", text)
    return None


def _canonical(arguments: object) -> str:
    if arguments is None or arguments == "" or arguments == {}:
        return "{}"  # no arguments, whether left out or written as an empty object
    try:
        return json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):
        return repr(arguments)


def _end_key(span: ReadableSpan) -> tuple[int, int]:
    return (span.end_time or 0, span.context.span_id if span.context else 0)


def _ended_before(other: ReadableSpan, span: ReadableSpan) -> bool:
    return _end_key(other) < _end_key(span)


def _overlap(first: ReadableSpan, second: ReadableSpan) -> bool:
    if None in (first.start_time, first.end_time, second.start_time, second.end_time):
        return False
    return (first.start_time or 0) <= (second.end_time or 0) and (second.start_time or 0) <= (
        first.end_time or 0
    )


def _other_scope(first: ReadableSpan, second: ReadableSpan) -> bool:
    a, b = first.instrumentation_scope, second.instrumentation_scope
    if a is None or b is None:
        return True
    return (a.name, a.version) != (b.name, b.version)

"""Readers never raise: arbitrary attribute maps and log records, and hostile values, read as missing.

The hypothesis tests feed every reader spans and log records whose keys mix the names readers look
for with arbitrary ones, and whose values are arbitrary scalars, nested structures, JSON strings of
them and truncated JSON strings. The hostile-value tests use deep nesting, 10 MB strings and
non-finite numbers; they must finish (bounded work), and what they return must be well-formed.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NonRecordingSpan, SpanContext, set_span_in_context

from otel_shapecheck._model import AnalystAttempt, LLMCall, ToolExecution
from otel_shapecheck.readers._classify import (
    SpanClass,
    classify_span,
    is_genai_content_record,
    names_own_tool_calls,
)
from otel_shapecheck.readers._lenient_json import parse_json, parse_json_or_text
from otel_shapecheck.readers._read import (
    read_analyst_attempt,
    read_llm_call,
    read_log_records,
    read_tool_execution,
)
from otel_shapecheck.readers._tool_join import join_tool_executions

TRACE_ID = 0x0AF7651916CD43DD8448EB211C80319C
SPAN_ID = 0x00F067AA0BA902B7
PARENT_ID = 0x0000000000000001

KNOWN_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.definitions",
    "gen_ai.response.finish_reasons",
    "gen_ai.response.id",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "llm.request.type",
    "traceloop.span.kind",
    "traceloop.entity.name",
    "traceloop.entity.input",
    "traceloop.entity.output",
    "openinference.span.kind",
    "mcp.method.name",
    "tool.name",
    "tool.id",
    "input.value",
    "output.value",
    "shapecheck.analyst.id",
    "shapecheck.analyst.attempt",
    "shapecheck.rows.emitted",
    "shapecheck.rows.accepted",
    "event.name",
    "gcp.vertex.agent.llm_request",
    "gcp.vertex.agent.llm_response",
    "gcp.vertex.agent.tool_call_args",
    "gcp.vertex.agent.tool_response",
]
INDEXED_KEYS = [
    "gen_ai.prompt.{i}.role",
    "gen_ai.prompt.{i}.content",
    "gen_ai.prompt.{i}.tool_call_id",
    "gen_ai.prompt.{i}.tool_calls.{j}.name",
    "gen_ai.completion.{i}.content",
    "gen_ai.completion.{i}.role",
    "gen_ai.completion.{i}.tool_calls.{j}.name",
    "gen_ai.completion.{i}.tool_calls.{j}.arguments",
    "llm.request.functions.{i}.name",
    "llm.input_messages.{i}.message.role",
    "llm.input_messages.{i}.message.content",
    "llm.input_messages.{i}.message.contents.{j}.message_content.text",
    "llm.input_messages.{i}.message.contents.{j}.message_content.type",
    "llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.name",
    "llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.arguments",
    "llm.tools.{i}.tool.json_schema",
]
KIND_VALUES = ["chat", "execute_tool", "text_completion", "LLM", "TOOL", "tool", "completion", "tools/call"]
ROLES = ["user", "assistant", "tool", "system", "developer", 7, None]
PART_TYPES = ["text", "tool_call", "tool_call_response", "reasoning", "blob", 3, None]
EVENT_NAMES = [
    "gen_ai.client.inference.operation.details",
    "gen_ai.system.message",
    "gen_ai.user.message",
    "gen_ai.assistant.message",
    "gen_ai.tool.message",
    "gen_ai.choice",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(KIND_VALUES + ROLES[:5] + PART_TYPES[:5]),
    st.binary(max_size=8),
)
structures = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=4).map(tuple),
        st.dictionaries(
            st.sampled_from(
                ["role", "parts", "type", "content", "name", "id", "arguments", "response", "result"]
            )
            | st.text(max_size=6),
            children,
            max_size=5,
        ),
    ),
    max_leaves=20,
)
messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(ROLES)},
        optional={
            "parts": st.lists(
                st.fixed_dictionaries(
                    {"type": st.sampled_from(PART_TYPES)},
                    optional={
                        "content": structures,
                        "name": structures,
                        "id": structures,
                        "arguments": structures,
                        "response": structures,
                        "result": structures,
                    },
                ),
                max_size=3,
            ),
            "finish_reason": structures,
            "content": structures,
        },
    ),
    max_size=4,
)


def _json_text(value: Any) -> str:
    return json.dumps(value, default=repr)


json_strings = st.one_of(structures, messages).map(_json_text)
truncated_json = st.tuples(json_strings, st.integers(min_value=0, max_value=200)).map(lambda t: t[0][: t[1]])
values = st.one_of(scalars, structures, messages, messages.map(tuple), json_strings, truncated_json)
indexed_keys = st.builds(
    lambda template, i, j: template.format(i=i, j=j),
    st.sampled_from(INDEXED_KEYS),
    st.integers(min_value=0, max_value=3),
    st.integers(min_value=0, max_value=2),
)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), indexed_keys, st.text(max_size=12))
attribute_maps = st.dictionaries(keys, values, max_size=12)
span_names = st.one_of(
    st.sampled_from(["chat gpt", "execute_tool lookup", "tools/call x", "x.tool"]), st.text()
)


def _span(name: str, attributes: Mapping[str, Any], *, end_time: int | None = 2_000) -> ReadableSpan:
    context = SpanContext(TRACE_ID, SPAN_ID, is_remote=False)
    parent = SpanContext(TRACE_ID, PARENT_ID, is_remote=False)
    return ReadableSpan(
        name, context=context, parent=parent, attributes=attributes, start_time=1_000, end_time=end_time
    )


def _context(span_id: int = SPAN_ID) -> Context:
    return set_span_in_context(NonRecordingSpan(SpanContext(TRACE_ID, span_id, is_remote=False)))


def _read_everything(span: ReadableSpan) -> None:
    attributes = span.attributes or {}
    assert isinstance(classify_span(span.name, attributes), SpanClass)
    assert isinstance(names_own_tool_calls(attributes), bool)
    call = read_llm_call(span)
    execution = read_tool_execution(span)
    attempt = read_analyst_attempt(span)
    assert call is None or isinstance(call, LLMCall)
    assert execution is None or isinstance(execution, ToolExecution)
    assert attempt is None or isinstance(attempt, AnalystAttempt)
    if call is not None:
        assert call.span_id == f"{SPAN_ID:016x}" and call.trace_id == f"{TRACE_ID:032x}"
        assert all(isinstance(tool.name, str) and tool.name for tool in call.offered_tools or ())
        assert all(isinstance(tool_call.name, str) and tool_call.name for tool_call in call.tool_calls or ())
        assert call.user_text is None or isinstance(call.user_text, str)
        assert all(isinstance(text, str) for text in call.user_texts)
        assert all(isinstance(reason, str) for reason in call.finish_reasons)
        join_tool_executions([call], [execution] if execution else [])
    if execution is not None:
        assert isinstance(execution.name, str) and execution.name


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=span_names, attributes=attribute_maps)
def test_span_readers_never_raise_on_arbitrary_attributes(name: str, attributes: dict[str, Any]) -> None:
    _read_everything(_span(name, attributes))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(
        [
            {"gen_ai.operation.name": "chat"},
            {"gen_ai.operation.name": "execute_tool"},
            {"llm.request.type": "chat"},
            {"openinference.span.kind": "LLM"},
            {"openinference.span.kind": "TOOL"},
            {"traceloop.span.kind": "tool"},
            {"shapecheck.analyst.id": "a", "shapecheck.analyst.attempt": 1},
            {"gcp.vertex.agent.llm_request": "{}"},
        ]
    ),
    attributes=attribute_maps,
)
def test_every_reader_path_survives_arbitrary_content(
    kind: dict[str, Any], attributes: dict[str, Any]
) -> None:
    _read_everything(_span("span", {**attributes, **kind}))


records = st.builds(
    lambda event_name, attributes, body, span_id: LogRecord(
        context=_context(span_id), event_name=event_name, attributes=attributes, body=body
    ),
    st.one_of(st.none(), st.sampled_from(EVENT_NAMES), st.text(max_size=10)),
    st.one_of(st.none(), attribute_maps),
    st.one_of(
        values, st.dictionaries(st.sampled_from(["content", "message", "tool_calls", "index", "id"]), values)
    ),
    st.sampled_from([SPAN_ID, 0]),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(log_records=st.lists(records, max_size=6))
def test_log_record_readers_never_raise(log_records: list[LogRecord]) -> None:
    for record in log_records:
        assert isinstance(is_genai_content_record(record), bool)
    call = read_log_records(log_records)
    assert call is None or isinstance(call, LLMCall)
    if call is not None:
        assert call.span_id == f"{SPAN_ID:016x}"


def _deeply_nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_deeply_nested_json_reads_as_missing() -> None:
    nested = _deeply_nested(200_000)
    assert parse_json(nested) is None
    span = _span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.input.messages": nested})
    call = read_llm_call(span)
    assert call is not None and call.user_text is None and call.tool_calls is None


def test_deeply_nested_structures_are_cut_at_a_bounded_depth() -> None:
    value: Any = "leaf"
    for _ in range(5_000):
        value = [value]
    record = LogRecord(
        context=_context(),
        event_name="gen_ai.tool.message",
        body={"content": value, "id": "call_1"},
    )
    call = read_log_records([record])
    assert call is not None
    (result,) = call.tool_results
    depth, content = 0, result.content
    while isinstance(content, list) and content:
        depth, content = depth + 1, content[0]
    assert depth < 100 and content is None


def test_ten_megabyte_strings_are_read_or_dropped_without_failing() -> None:
    huge = "x" * (10 * 1024 * 1024)
    messages = json.dumps([{"role": "user", "parts": [{"type": "text", "content": huge}]}])
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": messages,
        "gen_ai.output.messages": huge,
        "gen_ai.tool.definitions": "[" + huge,
        "gen_ai.response.id": huge,
    }
    call = read_llm_call(_span("chat m", attributes))
    assert call is not None
    assert call.user_text == huge
    assert call.tool_calls is None and call.offered_tools is None
    too_big = json.dumps([{"role": "user", "parts": [{"type": "text", "content": huge * 2}]}])
    assert parse_json(too_big) is None
    assert parse_json_or_text(huge) == huge


def test_non_finite_and_huge_numbers_are_read_as_values_not_errors() -> None:
    arguments = '{"x":NaN,"y":1e308,"z":-Infinity,"w":1e999}'
    output = '[{"role":"assistant","parts":[{"type":"tool_call","name":"f","arguments":' + arguments + "}]}]"
    call = read_llm_call(_span("chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": output}))
    assert call is not None and call.tool_calls is not None
    (tool_call,) = call.tool_calls
    assert isinstance(tool_call.arguments, dict)
    assert [tool_call.arguments[key] for key in "xzw"] == [None, None, None]
    assert tool_call.arguments["y"] == 1e308
    record = LogRecord(
        context=_context(), event_name="gen_ai.tool.message", body={"content": [math.nan, math.inf, 1e308]}
    )
    from_events = read_log_records([record])
    assert from_events is not None and from_events.tool_results[0].content == [None, None, 1e308]


def test_hostile_indexes_and_key_counts_stay_bounded() -> None:
    attributes: dict[str, Any] = {"llm.request.type": "chat"}
    attributes.update({f"gen_ai.prompt.{i}.content": "hi" for i in range(50_000)})
    attributes.update({f"gen_ai.prompt.{i}.role": "user" for i in range(50_000)})
    attributes["gen_ai.prompt.99999999999999999999999.role"] = "user"
    attributes["gen_ai.prompt.-1.role"] = "user"
    call = read_llm_call(_span("cohere.chat", attributes))
    assert call is not None and call.user_text == "hi" and len(call.user_texts) == 50_000

"""Joining tool executions to the LLM calls that requested them.

The integration tests build ``execute_tool`` spans with util-genai's ``TelemetryHandler.tool`` (no
client instrumentation makes them) next to chat spans from the genai-openai instrumentation, all under
one agent span; the plain-data tests pin the ordering rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck._model import LLMCall, ToolCall, ToolExecution, ToolResult
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import SpanRole
from otel_shapecheck.readers._read import read_tool_execution
from otel_shapecheck.readers._tool_join import _completed_calls, _Joined, join_tool_executions

from .telemetry import (
    CALL_ID,
    WEATHER_ARGUMENTS,
    WEATHER_RESULT,
    CapturedTelemetry,
    run_openai_turn,
    weather_script,
)


@pytest.fixture
def handler(genai_openai: CapturedTelemetry) -> TelemetryHandler:
    """A util-genai handler beside the genai-openai instrumentation, in the capture mode the test names."""
    return TelemetryHandler(
        tracer_provider=genai_openai.tracer_provider, logger_provider=genai_openai.logger_provider
    )


def _agent_turn(
    telemetry: CapturedTelemetry, handler: TelemetryHandler, *, record_call_id: bool
) -> tuple[list[LLMCall], list[ToolExecution]]:
    """The weather turn under an agent span, the tool run inside an ``execute_tool`` span; read back."""

    def run_tool(name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        with handler.tool(name, tool_type="function") as tool:
            if record_call_id:
                tool.tool_call_id = call_id
            tool.arguments = dict(arguments)
            tool.tool_result = WEATHER_RESULT
        return WEATHER_RESULT

    with (
        ScriptedOpenAIServer(weather_script()) as server,
        handler.invoke_local_agent(agent_name="weather-agent"),
    ):
        run_openai_turn(server.base_url, run_tool=run_tool)
    executions = [read_tool_execution(span) for span in telemetry.spans_of_kind(SpanRole.TOOL_EXECUTION)]
    assert all(execution is not None for execution in executions)
    return telemetry.llm_calls(), [execution for execution in executions if execution is not None]


@pytest.mark.parametrize("genai_openai", ["SPAN_ONLY"], indirect=True)
def test_execute_tool_span_is_read_and_joined_by_call_id(
    telemetry: CapturedTelemetry, handler: TelemetryHandler
) -> None:
    calls, executions = _agent_turn(telemetry, handler, record_call_id=True)

    (execution,) = executions
    assert execution.name == "get_weather"
    assert execution.call_id == CALL_ID
    assert execution.arguments == WEATHER_ARGUMENTS
    assert execution.result == WEATHER_RESULT
    assert execution.parent_id is not None
    assert {call.parent_id for call in calls} == {execution.parent_id}, "tool and chat spans are siblings"

    joined = join_tool_executions(calls, executions)
    assert joined[0] == calls[0], "the first call already named its tool call"
    assert joined[1].tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),), "no duplicate result"


@pytest.mark.parametrize("genai_openai", ["SPAN_ONLY"], indirect=True)
def test_execute_tool_span_without_call_id_joins_by_name_and_order(
    telemetry: CapturedTelemetry, handler: TelemetryHandler
) -> None:
    calls, executions = _agent_turn(telemetry, handler, record_call_id=False)
    assert executions[0].call_id is None

    joined = join_tool_executions(calls, executions)
    assert joined[1].tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    # Without the result in its own input, the successor still sees it, under the joined call's id.
    without_inputs = join_tool_executions([calls[0], LLMCall("f" * 16, "e" * 32, tool_calls=())], executions)
    assert without_inputs[1].tool_results == (
        ToolResult(WEATHER_RESULT, call_id=CALL_ID, name="get_weather"),
    )


@pytest.mark.parametrize("genai_openai", ["NO_CONTENT"], indirect=True)
def test_call_without_captured_output_gets_the_executions_after_it(
    telemetry: CapturedTelemetry, handler: TelemetryHandler
) -> None:
    calls, executions = _agent_turn(telemetry, handler, record_call_id=True)
    assert [call.tool_calls for call in calls] == [None, None]

    joined = join_tool_executions(calls, executions)
    assert joined[0].tool_calls == (ToolCall("get_weather", CALL_ID, None),)
    assert joined[0].chosen == ("get_weather",)
    assert joined[1].tool_calls is None, "nothing ran after the last call"


def _call(name: str, end: int | None, tool_calls: tuple[ToolCall, ...] | None) -> LLMCall:
    return LLMCall(span_id=name * 16, trace_id="a" * 32, tool_calls=tool_calls, end_time_ns=end)


def _execution(name: str, end: int | None, result: str, call_id: str | None = None) -> ToolExecution:
    return ToolExecution(
        span_id=f"{end or 0:016x}",
        trace_id="a" * 32,
        name=name,
        call_id=call_id,
        result=result,
        end_time_ns=end,
    )


def test_parallel_calls_to_one_tool_join_in_end_time_order() -> None:
    first = _call("1", 10, (ToolCall("get_weather", "A"), ToolCall("get_weather", "B")))
    later = _call("2", 40, ())
    # Given out of order: the join sorts by end time.
    executions = [_execution("get_weather", 30, "sunny"), _execution("get_weather", 20, "rainy")]
    _, second = join_tool_executions([first, later], executions)
    assert second.tool_results == (
        ToolResult("rainy", call_id="A", name="get_weather"),
        ToolResult("sunny", call_id="B", name="get_weather"),
    )


def test_id_join_wins_over_order_and_ids_never_cross() -> None:
    first = _call("1", 10, (ToolCall("get_weather", "A"), ToolCall("get_weather", "B")))
    later = _call("2", 40, ())
    executions = [_execution("get_weather", 20, "for B", "B"), _execution("get_weather", 30, "for A", "A")]
    _, second = join_tool_executions([first, later], executions)
    assert {result.call_id: result.content for result in second.tool_results} == {"A": "for A", "B": "for B"}


def test_execution_that_ended_before_the_call_is_not_its_tool_call() -> None:
    stale = _execution("get_weather", 5, "old")
    call = _call("1", 10, None)
    (joined,) = join_tool_executions([call], [stale])
    assert joined.tool_calls is None


def test_calls_without_output_split_executions_at_the_next_call() -> None:
    calls = [_call("1", 10, None), _call("2", 30, None), _call("3", 50, None)]
    executions = [
        _execution("lookup", 20, "x"),
        _execution("fetch", 25, "y"),
        _execution("lookup", 40, "z"),
    ]
    joined = join_tool_executions(calls, executions)
    assert [call.chosen for call in joined] == [("lookup", "fetch"), ("lookup",), ()]
    assert joined[2].tool_calls is None
    assert [result.content for result in joined[2].tool_results] == ["x", "y", "z"]
    assert [result.content for result in joined[1].tool_results] == ["x", "y"]
    assert joined[0].tool_results == ()


def test_unmatched_execution_is_left_alone() -> None:
    call = _call("1", 10, (ToolCall("get_weather", "A"),))
    (joined,) = join_tool_executions([call], [_execution("send_email", 20, "sent")])
    assert joined == call


names = st.sampled_from(["lookup", "fetch", "send"])
ids = st.one_of(st.none(), st.sampled_from(["A", "B", "C"]))
ends = st.one_of(st.none(), st.integers(min_value=0, max_value=100))
tool_calls = st.lists(st.builds(ToolCall, name=names, call_id=ids), max_size=3).map(tuple)
calls_strategy = st.lists(
    st.builds(
        LLMCall,
        span_id=st.text(alphabet="0123456789abcdef", min_size=16, max_size=16),
        trace_id=st.just("a" * 32),
        tool_calls=st.one_of(st.none(), tool_calls),
        tool_results=st.lists(
            st.builds(ToolResult, content=st.text(max_size=3), call_id=ids), max_size=2
        ).map(tuple),
        end_time_ns=ends,
    ),
    max_size=4,
)
executions_strategy = st.lists(
    st.builds(
        ToolExecution,
        span_id=st.just("e" * 16),
        trace_id=st.just("a" * 32),
        name=names,
        call_id=ids,
        result=st.one_of(st.none(), st.text(max_size=3)),
        end_time_ns=ends,
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(calls=calls_strategy, executions=executions_strategy)
def test_join_keeps_calls_in_order_and_only_adds(
    calls: list[LLMCall], executions: list[ToolExecution]
) -> None:
    joined = join_tool_executions(calls, executions)
    assert [call.span_id for call in joined] == [call.span_id for call in calls]
    for before, after in zip(calls, joined, strict=True):
        if before.tool_calls is not None:
            assert after.tool_calls == before.tool_calls
        else:
            assert after.tool_calls is None or len(after.tool_calls) <= len(executions)
        assert after.tool_results[: len(before.tool_results)] == before.tool_results
    assigned = sum(
        len(after.tool_calls or ())
        for before, after in zip(calls, joined, strict=True)
        if before.tool_calls is None
    )
    assert assigned <= len(executions), "an execution answers at most one call"
    assert joined[:1] == [] or joined[0].tool_results == calls[0].tool_results, (
        "nothing precedes the first call"
    )


def _reference_completion(calls: list[LLMCall], joined: list[list[_Joined]]) -> list[LLMCall]:
    """The completion step as first written: every earlier joined result compared with every result held."""

    def same(result: ToolResult, seen: ToolResult) -> bool:
        if result.call_id and seen.call_id:
            return result.call_id == seen.call_id
        return bool(result.content == seen.content)

    completed = []
    for index, call in enumerate(calls):
        if call.tool_calls is None and joined[index]:
            requested = tuple(
                ToolCall(p.execution.name, p.execution.call_id, p.execution.arguments) for p in joined[index]
            )
            call = replace(call, tool_calls=requested)
        results = list(call.tool_results)
        for earlier in joined[:index]:
            for pair in earlier:
                result = pair.result()
                if pair.execution.result is not None and not any(same(result, seen) for seen in results):
                    results.append(result)
        completed.append(replace(call, tool_results=tuple(results)))
    return completed


_CONTENTS = st.sampled_from(
    [None, "r", "", 1, 1.0, True, 0, False, math.nan, [1, 2], [1.0, 2], {"a": 1}, {"a": True},
     {"a": [1, {"b": "x"}]}, {"a": [1, {"b": "y"}]}, [[[[[1]]]]], [[[[[1.0]]]]], [[[[[2]]]]]]
)  # fmt: skip
_IDS = st.sampled_from([None, "", "c1", "c2", "c3"])
_RESULTS = st.builds(ToolResult, content=_CONTENTS, call_id=_IDS, name=st.sampled_from(["t", "u"]))
_EXECUTIONS = st.builds(
    ToolExecution,
    span_id=st.just("e" * 16),
    trace_id=st.just("a" * 32),
    name=st.sampled_from(["t", "u"]),
    call_id=_IDS,
    result=_CONTENTS,
)


@settings(max_examples=400, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(_RESULTS, max_size=3),
            st.booleans(),
            st.lists(st.tuples(_EXECUTIONS, st.booleans()), max_size=3),
        ),
        max_size=6,
    )
)
def test_completion_adds_the_results_the_pairwise_comparison_adds(
    rows: list[tuple[list[ToolResult], bool, list[tuple[ToolExecution, bool]]]],
) -> None:
    """Results found by id and content key are the ones comparing every pair finds, in the same order:
    ids against ids, contents otherwise (1, 1.0 and True alike, NaN equal to nothing, nesting past the
    key's depth), with and without results of the call's own."""
    calls = [
        LLMCall(
            span_id=f"{i:016x}", trace_id="a" * 32, tool_calls=None if bare else (), tool_results=tuple(own)
        )
        for i, (own, bare, _) in enumerate(rows)
    ]
    joined = [
        [
            _Joined(execution, ToolCall(execution.name, "c9") if answered else None)
            for execution, answered in pairs
        ]
        for _, _, pairs in rows
    ]
    got, want = _completed_calls(calls, joined), _reference_completion(calls, joined)
    assert repr(got) == repr(want)  # repr: NaN is not equal to itself


def test_a_thousand_calls_each_see_every_earlier_result_once() -> None:
    """Each of 1 000 calls answered by id sees the results of all the calls before it, once each."""
    calls = [
        LLMCall(
            span_id=f"{i:016x}", trace_id="a" * 32, tool_calls=(ToolCall("t", f"c{i}"),), end_time_ns=10 * i
        )
        for i in range(1000)
    ]
    executions = [
        ToolExecution(f"e{i:015x}", "a" * 32, "t", call_id=f"c{i}", result=f"r{i}", end_time_ns=10 * i + 5)
        for i in range(1000)
    ]
    joined = join_tool_executions(calls, executions)
    assert [len(call.tool_results) for call in joined] == list(range(1000))
    assert [result.call_id for result in joined[-1].tool_results] == [f"c{i}" for i in range(999)]

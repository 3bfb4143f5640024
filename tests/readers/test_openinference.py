"""The readers on telemetry from openinference-instrumentation-openai.

The real instrumentation wraps the real ``openai`` client against the scripted server; the tool runs
inside a TOOL span made by OpenInference's own ``OITracer.tool`` decorator, under an AGENT span.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from openinference.instrumentation import OITracer, TraceConfig
from openinference.instrumentation.openai import OpenAIInstrumentor

from otel_shapecheck._model import ToolCall, ToolResult
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import SpanRole, names_own_tool_calls
from otel_shapecheck.readers._read import read_tool_execution
from otel_shapecheck.readers._tool_join import join_tool_executions

from .telemetry import (
    ANSWER,
    CALL_ID,
    OFFERED_TOOLS,
    QUESTION,
    WEATHER_ARGUMENTS,
    WEATHER_RESULT,
    CapturedTelemetry,
    instrumenting,
    run_openai_turn,
    weather_script,
)


@pytest.fixture
def instrumented(telemetry: CapturedTelemetry) -> Iterator[CapturedTelemetry]:
    with instrumenting(telemetry, OpenAIInstrumentor()):
        yield telemetry


def test_llm_spans_give_menu_choice_results_and_answer(instrumented: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script()) as server:
        run_openai_turn(server.base_url)

    spans = instrumented.spans_of_kind(SpanRole.LLM_CALL)
    assert len(spans) == 2
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = instrumented.llm_calls()
    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert first.answer_text is None
    assert first.finish_reasons == ("tool_calls",)
    assert second.tool_calls == ()
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER
    assert second.user_texts == (QUESTION,)


def test_tool_span_is_read_and_joined_by_name(instrumented: CapturedTelemetry) -> None:
    tracer = OITracer(instrumented.tracer_provider.get_tracer(__name__), TraceConfig())

    @tracer.tool(name="get_weather", description="Get the current weather for a city")
    def get_weather(city: str) -> str:
        return WEATHER_RESULT

    def run_tool(name: str, call_id: str, arguments: Mapping[str, Any]) -> str:
        return get_weather(**arguments)

    agent_span = tracer.start_as_current_span("weather-agent", openinference_span_kind="agent")
    with ScriptedOpenAIServer(weather_script()) as server, agent_span:
        run_openai_turn(server.base_url, run_tool=run_tool)

    (tool_span,) = instrumented.spans_of_kind(SpanRole.TOOL_EXECUTION)
    execution = read_tool_execution(tool_span)
    assert execution is not None
    assert execution.name == "get_weather"
    assert execution.arguments == WEATHER_ARGUMENTS
    assert execution.result == WEATHER_RESULT
    calls = instrumented.llm_calls()
    assert {call.parent_id for call in calls} == {execution.parent_id}

    first, second = join_tool_executions([calls[0], calls[1]], [execution])
    assert first.chosen == ("get_weather",)
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)

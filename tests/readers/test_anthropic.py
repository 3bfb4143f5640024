"""The readers on Anthropic-client telemetry, where tool results travel inside ``user`` messages.

OpenLLMetry's ``opentelemetry-instrumentation-anthropic`` (OTel GenAI JSON form) and
``openinference-instrumentation-anthropic`` wrap the real ``anthropic`` client talking to the scripted
server's messages endpoint. A ``user`` message that carries only a tool result does not open a new
turn: the user text stays the question, and the assistant's text before the tool call stays the
turn's assistant text.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from openinference.instrumentation.anthropic import (
    AnthropicInstrumentor as OpenInferenceAnthropicInstrumentor,
)
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor as OpenLLMetryAnthropicInstrumentor

from otel_shapecheck._model import ToolCall, ToolResult
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import SpanRole, names_own_tool_calls

from .telemetry import (
    ANSWER,
    OFFERED_TOOLS,
    QUESTION,
    SYSTEM_PROMPT,
    TOOLS,
    WEATHER_ARGUMENTS,
    WEATHER_RESULT,
    CapturedTelemetry,
    instrumenting,
    weather_script,
)

PLAN = "Let me check the forecast."
TOOL_USE_ID = "toolu_weather_1"
ANTHROPIC_TOOLS = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]
INSTRUMENTORS = {
    "openllmetry": OpenLLMetryAnthropicInstrumentor,
    "openinference": OpenInferenceAnthropicInstrumentor,
}


@pytest.fixture(params=sorted(INSTRUMENTORS))
def instrumented(telemetry: CapturedTelemetry, request: pytest.FixtureRequest) -> Iterator[CapturedTelemetry]:
    with instrumenting(telemetry, INSTRUMENTORS[request.param]()):
        yield telemetry


def _anthropic_turn(root_url: str) -> None:
    with anthropic.Anthropic(api_key="scripted", base_url=root_url, max_retries=0) as client:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        first = client.messages.create(
            model="claude-test",
            max_tokens=256,
            system=SYSTEM_PROMPT,
            messages=messages,
            tools=ANTHROPIC_TOOLS,
        )
        messages.append(
            {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]}
        )
        result = {"type": "tool_result", "tool_use_id": TOOL_USE_ID, "content": WEATHER_RESULT}
        messages.append({"role": "user", "content": [result]})
        client.messages.create(
            model="claude-test",
            max_tokens=256,
            system=SYSTEM_PROMPT,
            messages=messages,
            tools=ANTHROPIC_TOOLS,
        )


def test_tool_result_in_a_user_message_keeps_the_turn(instrumented: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script(call_id=TOOL_USE_ID, plan=PLAN)) as server:
        _anthropic_turn(server.root_url)

    spans = instrumented.spans_of_kind(SpanRole.LLM_CALL)
    assert len(spans) == 2
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = instrumented.llm_calls()

    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", TOOL_USE_ID, WEATHER_ARGUMENTS),)
    assert first.answer_text == PLAN
    assert first.user_text == QUESTION

    assert second.user_text == QUESTION and second.user_texts == (QUESTION,)
    assert second.assistant_text == PLAN
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=TOOL_USE_ID),)
    assert second.tool_calls == ()
    assert second.answer_text == ANSWER

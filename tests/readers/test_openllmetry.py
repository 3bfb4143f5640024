"""The readers on telemetry from OpenLLMetry instrumentations.

``opentelemetry-instrumentation-openai`` (OpenLLMetry) writes the OTel GenAI JSON attributes on its
``openai.chat`` spans; ``opentelemetry-instrumentation-cohere`` still writes the legacy indexed
``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` / ``llm.request.functions.N.*`` form. Both run their
real client against the scripted server on loopback. OpenLLMetry's events path (``use_attributes=False``)
writes the deprecated per-message events, with ``tool_calls`` beside ``message`` in ``gen_ai.choice``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import cohere
import pytest
from opentelemetry.instrumentation.cohere import CohereInstrumentor
from opentelemetry.instrumentation.openai import OpenAIInstrumentor

from otel_shapecheck._model import ToolCall, ToolResult
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import SpanRole, names_own_tool_calls
from otel_shapecheck.readers._read import read_log_records

from .telemetry import (
    ANSWER,
    CALL_ID,
    OFFERED_TOOLS,
    QUESTION,
    SYSTEM_PROMPT,
    TOOLS,
    WEATHER_ARGUMENTS,
    WEATHER_RESULT,
    CapturedTelemetry,
    instrumenting,
    records_by_span,
    run_openai_turn,
    weather_script,
)

PLAN = "I will look up the weather in Paris."


@pytest.fixture
def openai_instrumented(telemetry: CapturedTelemetry) -> Iterator[CapturedTelemetry]:
    with instrumenting(telemetry, OpenAIInstrumentor()):
        yield telemetry


@pytest.fixture
def cohere_instrumented(telemetry: CapturedTelemetry) -> Iterator[CapturedTelemetry]:
    with instrumenting(telemetry, CohereInstrumentor()):
        yield telemetry


def test_openai_json_form(openai_instrumented: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script()) as server:
        run_openai_turn(server.base_url)

    spans = openai_instrumented.spans_of_kind(SpanRole.LLM_CALL)
    assert [span.name for span in spans] == ["openai.chat", "openai.chat"]
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = openai_instrumented.llm_calls()
    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert first.response_id == "chatcmpl-turn-1"
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER


def _cohere_turn(root_url: str) -> None:
    client = cohere.ClientV2(api_key="scripted", base_url=root_url)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": QUESTION},
    ]
    first = client.chat(model="command-r", messages=messages, tools=TOOLS)
    assert first.message.tool_calls
    call = first.message.tool_calls[0]
    messages.append({"role": "assistant", "tool_plan": first.message.tool_plan, "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": call.id, "content": WEATHER_RESULT})
    client.chat(model="command-r", messages=messages, tools=TOOLS)


def test_cohere_legacy_indexed_form(cohere_instrumented: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script(plan=PLAN)) as server:
        _cohere_turn(server.root_url)

    spans = cohere_instrumented.spans_of_kind(SpanRole.LLM_CALL)
    assert [span.name for span in spans] == ["cohere.chat", "cohere.chat"]
    attributes = spans[0].attributes or {}
    assert "gen_ai.input.messages" not in attributes and "gen_ai.prompt.1.content" in attributes
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = cohere_instrumented.llm_calls()

    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert first.answer_text == PLAN, "the legacy content list of the tool-call reply holds the tool plan"
    assert first.finish_reasons == ("TOOL_CALL",)
    assert first.response_id == "chatcmpl-turn-1"

    assert second.tool_calls == ()
    assert second.tool_results == (ToolResult(WEATHER_RESULT),), "cohere records no tool_call_id"
    assert second.answer_text == ANSWER
    assert second.user_texts == (QUESTION,)
    assert second.finish_reasons == ("COMPLETE",)


@pytest.fixture
def openai_events_instrumented(telemetry: CapturedTelemetry) -> Iterator[CapturedTelemetry]:
    with instrumenting(telemetry, OpenAIInstrumentor(use_attributes=False)):
        yield telemetry


def test_openai_events_path_puts_tool_calls_beside_the_message(
    openai_events_instrumented: CapturedTelemetry,
) -> None:
    with ScriptedOpenAIServer(weather_script(plan=PLAN)) as server:
        run_openai_turn(server.base_url)

    spans = openai_events_instrumented.spans_of_kind(SpanRole.LLM_CALL)
    assert not any(names_own_tool_calls(span.attributes or {}) for span in spans)
    grouped = records_by_span(openai_events_instrumented.log_records())
    first, second = (read_log_records(grouped[span.context.span_id]) for span in spans)
    assert first is not None and second is not None
    choice = next(r for r in grouped[spans[0].context.span_id] if r.event_name == "gen_ai.choice")
    assert isinstance(choice.body, dict) and "tool_calls" in choice.body, "the spec's place, beside message"
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.answer_text == PLAN and first.user_text == QUESTION
    assert second.assistant_text == PLAN
    assert second.tool_results == (ToolResult(WEATHER_RESULT),), (
        "this emitter leaves the tool message's id out"
    )
    assert second.answer_text == ANSWER

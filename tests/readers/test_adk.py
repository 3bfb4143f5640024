"""The readers on google-adk's own record of a model call, built on the shape its telemetry writes.

ADK's schema-1 ``call_llm`` span names no GenAI operation: the request (``model``, ``config`` with the
system instruction and ``tools[].function_declarations``, and ``contents``, google-genai ``Content``
objects) and the response (an ``LlmResponse``) are JSON in ``gcp.vertex.agent.llm_request`` and
``gcp.vertex.agent.llm_response``; with content capture off both read ``"{}"``. Its ``execute_tool``
spans keep arguments and results in ``gcp.vertex.agent.tool_call_args`` / ``tool_response``, and its
``generate_content`` child span's per-message events say ``"<elided>"`` when content is off. (google-adk
itself needs another OpenTelemetry release than the suite's; ``tests/frameworks`` runs the real one.)
The spans here are real SDK spans.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import set_span_in_context

from otel_shapecheck._model import OfferedTool, ToolCall, ToolExecution, ToolParameter, ToolResult
from otel_shapecheck.readers._adk import read_adk_content, read_adk_tool_execution
from otel_shapecheck.readers._classify import (
    Convention,
    SpanRole,
    carries_message_content,
    classify_span,
    names_own_tool_calls,
)
from otel_shapecheck.readers._content import CallContent, SpanRef
from otel_shapecheck.readers._menus import has_own_menu
from otel_shapecheck.readers._read import read_llm_call, read_log_records, read_tool_execution

from .telemetry import ANSWER, QUESTION, WEATHER_RESULT, CapturedTelemetry

LLM_REQUEST = "gcp.vertex.agent.llm_request"
LLM_RESPONSE = "gcp.vertex.agent.llm_response"
INSTRUCTION = "You are a weather assistant."
CALL_ID = "adk-call-1"
DECLARATIONS = [
    {
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters_json_schema": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
            "required": ["city"],
        },
    },
    {
        # A declaration built from a google-genai Schema: upper-case types, ``parameters``.
        "name": "get_time",
        "description": "Get the local time in a city",
        "parameters": {"type": "OBJECT", "properties": {"city": {"type": "STRING"}}},
    },
]
OFFERED = (
    OfferedTool(
        "get_weather", "Get the current weather for a city", (ToolParameter("city", "The city, e.g. Paris"),)
    ),
    OfferedTool("get_time", "Get the local time in a city", (ToolParameter("city"),)),
)
USER_TURN = {"role": "user", "parts": [{"text": QUESTION}]}
MODEL_CALL = {
    "role": "model",
    "parts": [{"function_call": {"id": CALL_ID, "name": "get_weather", "args": {"city": "Paris"}}}],
}
FUNCTION_RESPONSE = {
    "role": "user",
    "parts": [
        {"function_response": {"id": CALL_ID, "name": "get_weather", "response": {"result": WEATHER_RESULT}}}
    ],
}


def request(contents: list[dict[str, Any]] | None, *, tools: bool = True) -> str:
    """``gcp.vertex.agent.llm_request`` as ADK serialises it (``None`` contents: the key left out)."""
    config: dict[str, Any] = {"system_instruction": INSTRUCTION}
    if tools:
        config["tools"] = [{"function_declarations": DECLARATIONS}]
    body: dict[str, Any] = {"model": "openai/gpt-4o-mini", "config": config}
    if contents is not None:
        body["contents"] = contents
    return json.dumps(body)


def response(content: dict[str, Any] | None, finish_reason: str = "STOP") -> str:
    """``gcp.vertex.agent.llm_response``: an ``LlmResponse`` dumped without its ``None`` fields."""
    body: dict[str, Any] = {"model_version": "gpt-4o-mini", "partial": False, "finish_reason": finish_reason}
    if content is not None:
        body["content"] = content
    return json.dumps(body)


@pytest.fixture
def adk_span(telemetry: CapturedTelemetry) -> Iterator[Any]:
    """Record one span of ADK's tracer (``gcp.vertex.agent``) with the given name and attributes."""
    tracer = telemetry.tracer_provider.get_tracer("gcp.vertex.agent")

    def record(name: str, attributes: Mapping[str, Any]) -> ReadableSpan:
        with tracer.start_as_current_span(name) as span:
            span.set_attribute("gen_ai.system", "gcp.vertex.agent")
            span.set_attributes(dict(attributes))
        return telemetry.spans()[-1]

    yield record


def call_llm(adk_span: Any, attributes: Mapping[str, Any]) -> ReadableSpan:
    return adk_span("call_llm", {"gen_ai.request.model": "openai/gpt-4o-mini", **attributes})


class TestCallLlm:
    def test_the_choosing_call_gives_menu_choice_and_question(self, adk_span: Any) -> None:
        span = call_llm(
            adk_span,
            {
                LLM_REQUEST: request([USER_TURN]),
                LLM_RESPONSE: response(MODEL_CALL),
                "gen_ai.response.finish_reasons": ["stop"],
            },
        )
        classified = classify_span(span.name, span.attributes or {})
        assert (classified.role, classified.convention) == (SpanRole.LLM_CALL, Convention.ADK)
        assert names_own_tool_calls(span.attributes or {}) and has_own_menu(span.attributes or {})
        call = read_llm_call(span)
        assert call is not None
        assert call.offered_tools == OFFERED and call.menu_source == "span"
        assert call.tool_calls == (ToolCall("get_weather", CALL_ID, {"city": "Paris"}),)
        assert call.user_text == QUESTION and call.answer_text is None
        assert call.finish_reasons == ("stop",)

    def test_the_answering_call_gives_the_function_response_and_the_answer(self, adk_span: Any) -> None:
        answer = {
            "role": "model",
            "parts": [{"text": "Checking the result.", "thought": True}, {"text": ANSWER}],
        }
        span = call_llm(
            adk_span,
            {
                LLM_REQUEST: request([USER_TURN, MODEL_CALL, FUNCTION_RESPONSE]),
                LLM_RESPONSE: response(answer),
            },
        )
        call = read_llm_call(span)
        assert call is not None
        # ADK wraps a tool's non-object return value as {"result": value}: the result is the value.
        assert call.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID, name="get_weather"),)
        assert call.answer_text == ANSWER, "a thought part is not the answer"
        assert call.tool_calls == ()
        assert call.user_texts == (QUESTION,), "a turn of function responses opens no new question"
        assert call.turn_tool_calls == 1

    def test_json_aliases_read_as_field_names(self, adk_span: Any) -> None:
        """google-genai's camel-case aliases (``functionCall``, ``functionDeclarations``…) read the same."""
        aliased = json.loads(
            request([USER_TURN])
            .replace("function_declarations", "functionDeclarations")
            .replace("parameters_json_schema", "parametersJsonSchema")
        )
        content = {
            "role": "model",
            "parts": [{"functionCall": {"id": CALL_ID, "name": "get_weather", "args": {"city": "Paris"}}}],
        }
        call = read_llm_call(
            call_llm(
                adk_span,
                {
                    LLM_REQUEST: json.dumps(aliased),
                    LLM_RESPONSE: json.dumps({"content": content, "finishReason": "STOP"}),
                },
            )
        )
        assert call is not None
        assert call.offered_tools == OFFERED
        assert call.tool_calls == (ToolCall("get_weather", CALL_ID, {"city": "Paris"}),)
        assert call.finish_reasons == ("stop",)


class TestAbsentAndEmpty:
    def test_content_capture_off_is_a_call_seen_with_nothing_captured(self, adk_span: Any) -> None:
        """``"{}"`` is ADK's "not captured": no input, no menu, no output, not empty ones."""
        span = call_llm(adk_span, {LLM_REQUEST: "{}", LLM_RESPONSE: "{}"})
        attributes = span.attributes or {}
        assert classify_span(span.name, attributes).role is SpanRole.LLM_CALL
        assert not names_own_tool_calls(attributes)
        assert not carries_message_content(attributes)
        call = read_llm_call(span)
        assert call is not None
        assert call.input_captured is False and call.user_text is None
        assert call.offered_tools is None and call.menu_source is None
        assert call.tool_calls is None and call.answer_text is None

    def test_a_captured_request_without_tools_offered_none(self, adk_span: Any) -> None:
        """The request is whole: no ``tools`` in its config is an empty menu, not an unknown one."""
        call = read_llm_call(call_llm(adk_span, {LLM_REQUEST: request([USER_TURN], tools=False)}))
        assert call is not None
        assert call.offered_tools == () and call.user_text == QUESTION

    def test_a_request_without_contents_captured_no_input(self, adk_span: Any) -> None:
        call = read_llm_call(call_llm(adk_span, {LLM_REQUEST: request(None)}))
        assert call is not None
        assert call.input_captured is False and call.offered_tools == OFFERED

    def test_empty_contents_are_a_captured_empty_input(self, adk_span: Any) -> None:
        call = read_llm_call(call_llm(adk_span, {LLM_REQUEST: request([])}))
        assert call is not None
        assert call.input_captured is True and call.user_text is None

    def test_a_response_without_content_is_a_captured_empty_reply(self, adk_span: Any) -> None:
        span = call_llm(adk_span, {LLM_REQUEST: request([USER_TURN]), LLM_RESPONSE: response(None)})
        assert names_own_tool_calls(span.attributes or {})
        call = read_llm_call(span)
        assert call is not None
        assert call.tool_calls == () and call.answer_text is None

    def test_a_span_without_adks_request_or_response_is_no_adk_call(self, adk_span: Any) -> None:
        span = adk_span("invocation", {"gcp.vertex.agent.invocation_id": "e-1"})
        assert classify_span(span.name, span.attributes or {}).role is SpanRole.OTHER
        assert read_llm_call(span) is None


class TestOutputOnAnotherSpan:
    def test_a_request_without_its_response_has_no_output_not_an_empty_one(self, adk_span: Any) -> None:
        """The output may be on another span (or was not captured): its tool calls are unknown."""
        span = call_llm(adk_span, {LLM_REQUEST: request([USER_TURN])})
        assert not names_own_tool_calls(span.attributes or {})
        call = read_llm_call(span)
        assert call is not None
        assert call.offered_tools == OFFERED and call.user_text == QUESTION
        assert call.tool_calls is None and call.answer_text is None

    def test_a_response_without_its_request_has_output_and_no_input(self, adk_span: Any) -> None:
        span = adk_span("call_llm", {LLM_RESPONSE: response(MODEL_CALL)})
        assert classify_span(span.name, span.attributes or {}).convention is Convention.ADK
        call = read_llm_call(span)
        assert call is not None
        assert call.tool_calls == (ToolCall("get_weather", CALL_ID, {"city": "Paris"}),)
        assert call.input_captured is False and call.offered_tools is None

    def test_the_generate_content_child_with_elided_events_captures_nothing(
        self, telemetry: CapturedTelemetry
    ) -> None:
        """Under ``call_llm`` ADK's ``generate_content`` span names the operation and carries no content;
        its per-message events say ``"<elided>"``: no input and no output were captured, not that text."""
        tracer = telemetry.tracer_provider.get_tracer("gcp.vertex.agent")
        logger = telemetry.logger_provider.get_logger("gcp.vertex.agent")
        with tracer.start_as_current_span("generate_content openai/gpt-4o-mini") as span:
            span.set_attributes({"gen_ai.operation.name": "generate_content", "gen_ai.system": "openai"})
            context = set_span_in_context(span)
            for name in ("gen_ai.system.message", "gen_ai.user.message"):
                logger.emit(LogRecord(event_name=name, body={"content": "<elided>"}, context=context))
            choice = {"content": "<elided>", "index": 0, "finish_reason": "STOP"}
            logger.emit(LogRecord(event_name="gen_ai.choice", body=choice, context=context))
        call = read_log_records(telemetry.log_records())
        assert call is not None
        assert call.input_captured is False and call.user_text is None
        assert call.tool_calls is None and call.answer_text is None
        assert call.finish_reasons == ("STOP",)


class TestToolSpans:
    def test_schema_1_arguments_and_result_in_adks_fields(self, adk_span: Any) -> None:
        span = adk_span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": CALL_ID,
                LLM_REQUEST: "{}",  # ADK writes an empty request and response on its tool spans
                LLM_RESPONSE: "{}",
                "gcp.vertex.agent.tool_call_args": json.dumps({"city": "Paris"}),
                "gcp.vertex.agent.tool_response": json.dumps({"result": WEATHER_RESULT}),
            },
        )
        classified = classify_span(span.name, span.attributes or {})
        assert (classified.role, classified.convention) == (SpanRole.TOOL_EXECUTION, Convention.ADK)
        execution = read_tool_execution(span)
        assert execution is not None
        assert (execution.name, execution.call_id) == ("get_weather", CALL_ID)
        assert execution.arguments == {"city": "Paris"} and execution.result == WEATHER_RESULT

    def test_capture_off_and_an_unknown_call_id_are_not_captured(self, adk_span: Any) -> None:
        span = adk_span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "<not specified>",
                "gcp.vertex.agent.tool_call_args": "{}",
                "gcp.vertex.agent.tool_response": "{}",
            },
        )
        execution = read_tool_execution(span)
        assert execution is not None
        assert execution.call_id is None and execution.arguments is None and execution.result is None

    def test_an_object_result_is_kept_whole(self, adk_span: Any) -> None:
        result = {"result": WEATHER_RESULT, "source": "met office"}
        span = adk_span(
            "execute_tool get_weather",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_weather",
                "gcp.vertex.agent.tool_response": json.dumps(result),
            },
        )
        execution = read_tool_execution(span)
        assert execution is not None and execution.result == result

    def test_the_merged_responses_span_is_no_tool(self, adk_span: Any) -> None:
        """Parallel calls each have their span; the one repeating their responses names no tool."""
        span = adk_span(
            "execute_tool (merged)",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "(merged tools)",
                "gcp.vertex.agent.tool_call_args": "N/A",
                "gcp.vertex.agent.tool_response": json.dumps([{"id": "e-1"}]),
            },
        )
        assert read_tool_execution(span) is None


_FIELDS = [
    "model", "config", "contents", "role", "parts", "text", "thought", "function_call", "functionCall",
    "function_response", "functionResponse", "id", "name", "args", "response", "result", "tools",
    "function_declarations", "functionDeclarations", "parameters", "parameters_json_schema",
    "description", "content", "finish_reason", "finishReason", "properties",
]  # fmt: skip
_adk_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.sampled_from(_FIELDS), children, max_size=5)
    ),
    max_leaves=30,
)
_adk_attributes = st.one_of(_adk_values.map(json.dumps), _adk_values, st.just("{}"), st.text(max_size=20))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(request_value=_adk_attributes, response_value=_adk_attributes, result=_adk_attributes)
def test_adk_readers_read_any_shaped_value_without_failing(
    request_value: Any, response_value: Any, result: Any
) -> None:
    """ADK-shaped JSON of any nesting, unguarded: the readers return well-formed content, never raise."""
    content = read_adk_content({LLM_REQUEST: request_value, LLM_RESPONSE: response_value})
    assert isinstance(content, CallContent)
    messages = (*(content.input_messages or ()), *(content.output_messages or ()))
    assert all(isinstance(text, str) for message in messages for text in message.texts)
    assert all(
        call.name and isinstance(call.name, str) for message in messages for call in message.tool_calls
    )
    assert all(tool.name and isinstance(tool.name, str) for tool in content.offered_tools or ())
    attributes = {"gen_ai.tool.name": "t", "gcp.vertex.agent.tool_call_args": result}
    execution = read_adk_tool_execution(
        "execute_tool t", {**attributes, "gcp.vertex.agent.tool_response": result}, SpanRef("a", "b")
    )
    assert isinstance(execution, ToolExecution) and execution.name == "t"

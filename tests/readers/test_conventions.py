"""Convention details the readers must honour.

Where a real instrumentation produces the case, it does (the turn structure tests). The variants that
no installed emitter writes but the specifications, their published examples or other emitters do
(``result`` instead of ``response``, ids with a stray space, OpenAI-nested tool definitions, the old
``event.name`` attribute, choices out of index order, MCP and Traceloop tool spans, OpenInference
multi-part contents, a reply recorded without its tool calls) are written as those documents and
emitters show them, on spans made by the real SDK tracer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import openai
import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import NonRecordingSpan, set_span_in_context

from otel_shapecheck._model import OfferedTool, ToolCall, ToolResult
from otel_shapecheck.cli.demo._script import ScriptedReply
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import (
    SpanRole,
    classify_span,
    is_agent_span,
    is_genai_content_record,
    names_own_tool_calls,
)
from otel_shapecheck.readers._read import read_llm_call, read_log_records, read_tool_execution

from .telemetry import MODEL, QUESTION, TOOLS, CapturedTelemetry, run_openai_turn, weather_script

PLAN = "Let me check the forecast."
FOLLOW_UP = "And should I take an umbrella?"


def test_assistant_text_is_the_latest_of_the_current_turn(genai_openai: CapturedTelemetry) -> None:
    script = [*weather_script(plan=PLAN), ScriptedReply(text="Yes, take one.")]
    with ScriptedOpenAIServer(script) as server:
        answer = run_openai_turn(server.base_url)
        with openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0) as client:
            history: list[Any] = [
                {"role": "user", "content": QUESTION},
                {"role": "assistant", "content": answer},
                {"role": "user", "content": FOLLOW_UP},
            ]
            client.chat.completions.create(model=MODEL, messages=history, tools=TOOLS)

    first, second, third = genai_openai.llm_calls()
    assert first.answer_text == PLAN and first.assistant_text is None
    assert second.assistant_text == PLAN, "the plan precedes the tool result in this turn"
    assert third.user_text == FOLLOW_UP
    assert third.user_texts == (QUESTION, FOLLOW_UP)
    assert third.assistant_text is None, "the earlier answer belongs to the previous turn"


def _span(telemetry: CapturedTelemetry, name: str, attributes: Mapping[str, Any]) -> ReadableSpan:
    with telemetry.tracer_provider.get_tracer(__name__).start_as_current_span(name, attributes=attributes):
        pass
    return telemetry.spans()[-1]


def test_published_example_shapes_result_key_spaced_ids_and_nested_definitions(
    telemetry: CapturedTelemetry,
) -> None:
    inputs = [
        {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]},
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": " call_VSPy",
                    "name": "get_weather",
                    "arguments": '{"city":"Paris"}',
                }
            ],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": " call_VSPy", "result": "rainy, 57°F"}],
        },
        {"role": "critic", "parts": [{"type": "hologram", "content": "ignored"}, "not a part"]},
    ]
    definitions = [
        {"type": "function", "function": {"name": "get_weather", "description": "Weather by city"}},
        {"type": "web_search", "name": "web_search"},
        {"type": "function", "description": "nameless"},
    ]
    outputs = [{"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}]}]
    span = _span(
        telemetry,
        "chat gpt-4",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(inputs),
            "gen_ai.output.messages": json.dumps(outputs),
            "gen_ai.tool.definitions": json.dumps(definitions),
        },
    )
    call = read_llm_call(span)
    assert call is not None
    assert call.tool_results == (ToolResult("rainy, 57°F", call_id="call_VSPy"),)
    assert call.offered_tools == (OfferedTool("get_weather", "Weather by city"), OfferedTool("web_search"))
    assert call.tool_calls == () and call.finish_reasons == ()
    assert call.answer_text == "Rainy." and call.user_text == "Weather in Paris?"


def test_truncated_content_reads_as_not_captured(telemetry: CapturedTelemetry) -> None:
    full = json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "name": "get_weather"}]}])
    span = _span(
        telemetry,
        "chat m",
        {"gen_ai.operation.name": "chat", "gen_ai.output.messages": full[:-7], "gen_ai.input.messages": "[{"},
    )
    call = read_llm_call(span)
    assert call is not None and call.tool_calls is None and call.user_text is None
    assert names_own_tool_calls(span.attributes or {}), "the attribute is there, even if unreadable"


def _record(telemetry: CapturedTelemetry, span: ReadableSpan, **fields: Any) -> LogRecord:
    context = set_span_in_context(NonRecordingSpan(span.get_span_context()))
    return LogRecord(context=context, **fields)


def test_choice_with_tool_calls_beside_message_and_old_event_name_attribute(
    telemetry: CapturedTelemetry,
) -> None:
    span = _span(telemetry, "chat m", {"gen_ai.operation.name": "chat"})
    tool_calls = [
        {
            "id": "call_1",
            "type": "function",
            "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
        }
    ]
    records = [
        _record(
            telemetry,
            span,
            attributes={"event.name": "gen_ai.user.message"},
            body={"content": "Oslo weather?"},
        ),
        _record(
            telemetry,
            span,
            event_name="gen_ai.choice",
            body={
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant"},
                "tool_calls": tool_calls,
            },
        ),
        _record(telemetry, span, event_name="app.unrelated", body={"content": "not read"}),
    ]
    assert [is_genai_content_record(record) for record in records] == [True, True, False]
    call = read_log_records(records)
    assert call is not None
    assert call.span_id == format(span.context.span_id, "016x")
    assert call.user_text == "Oslo weather?"
    assert call.tool_calls == (ToolCall("get_weather", "call_1", {"city": "Oslo"}),)
    assert call.finish_reasons == ("tool_calls",)


def test_choices_are_ordered_by_index_and_the_first_is_the_answer(telemetry: CapturedTelemetry) -> None:
    span = _span(telemetry, "chat m", {"gen_ai.operation.name": "chat"})
    records = [
        _record(
            telemetry,
            span,
            event_name="gen_ai.choice",
            body={"index": 1, "finish_reason": "stop", "message": {"content": "B"}},
        ),
        _record(
            telemetry,
            span,
            event_name="gen_ai.choice",
            body={"index": 0, "finish_reason": "length", "message": {"content": "A"}},
        ),
    ]
    call = read_log_records(records)
    assert call is not None and call.answer_text == "A" and call.finish_reasons == ("length", "stop")


def test_records_without_a_span_context_give_nothing() -> None:
    record = LogRecord(event_name="gen_ai.user.message", body={"content": "hi"})
    assert read_log_records([record]) is None


def test_mcp_and_traceloop_tool_spans(telemetry: CapturedTelemetry) -> None:
    mcp = _span(
        telemetry, "tools/call get-weather", {"mcp.method.name": "tools/call", "gen_ai.tool.call.id": "7"}
    )
    traceloop = _span(
        telemetry,
        "get_weather.tool",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "get_weather",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"city": "Paris"}}),
            "traceloop.entity.output": json.dumps("rainy"),
        },
    )
    assert classify_span(mcp.name, mcp.attributes or {}).role is SpanRole.TOOL_EXECUTION
    mcp_execution, traceloop_execution = read_tool_execution(mcp), read_tool_execution(traceloop)
    assert mcp_execution is not None and (mcp_execution.name, mcp_execution.call_id) == ("get-weather", "7")
    assert traceloop_execution is not None
    assert traceloop_execution.name == "get_weather"
    assert traceloop_execution.arguments == {"city": "Paris"}
    assert traceloop_execution.result == '"rainy"', "results are kept as captured"


def test_openinference_multipart_contents_and_tool_messages(telemetry: CapturedTelemetry) -> None:
    prefix = "llm.input_messages"
    span = _span(
        telemetry,
        "ChatCompletion",
        {
            "openinference.span.kind": "LLM",
            f"{prefix}.0.message.role": "user",
            f"{prefix}.0.message.contents.0.message_content.type": "text",
            f"{prefix}.0.message.contents.0.message_content.text": "Compare these",
            f"{prefix}.0.message.contents.1.message_content.type": "image",
            f"{prefix}.0.message.contents.2.message_content.type": "text",
            f"{prefix}.0.message.contents.2.message_content.text": "two files",
            f"{prefix}.1.message.role": "tool",
            f"{prefix}.1.message.name": "diff",
            f"{prefix}.1.message.tool_call_id": "call_9",
            f"{prefix}.1.message.content": "3 lines differ",
        },
    )
    call = read_llm_call(span)
    assert call is not None
    assert call.user_text == "Compare these\ntwo files"
    assert call.tool_results == (ToolResult("3 lines differ", call_id="call_9", name="diff"),)
    assert call.tool_calls is None and call.offered_tools is None


@pytest.mark.parametrize(
    ("name", "attributes", "kind"),
    [
        ("chat m", {"gen_ai.operation.name": "chat"}, SpanRole.LLM_CALL),
        ("generate_content m", {"gen_ai.operation.name": "generate_content"}, SpanRole.LLM_CALL),
        ("text_completion m", {"gen_ai.operation.name": "text_completion"}, SpanRole.LLM_CALL),
        ("embeddings m", {"gen_ai.operation.name": "embeddings"}, SpanRole.OTHER),
        ("invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, SpanRole.AGENT),
        ("invoke_workflow w", {"gen_ai.operation.name": "invoke_workflow"}, SpanRole.OTHER),
        ("Agent workflow", {"openinference.span.kind": "AGENT"}, SpanRole.AGENT),
        ("LangGraph", {"openinference.span.kind": "CHAIN"}, SpanRole.OTHER),
        ("storage.workflow", {"traceloop.span.kind": "workflow"}, SpanRole.AGENT),
        ("storage.agent", {"traceloop.span.kind": "agent"}, SpanRole.AGENT),
        ("invoke_agent a", {}, SpanRole.OTHER),
        ("execute_tool f", {"gen_ai.operation.name": "execute_tool"}, SpanRole.TOOL_EXECUTION),
        ("execute_tool f", {}, SpanRole.TOOL_EXECUTION),
        ("ollama.chat", {"llm.request.type": "chat"}, SpanRole.LLM_CALL),
        ("ollama.embeddings", {"llm.request.type": "embedding"}, SpanRole.OTHER),
        ("ChatCompletion", {"openinference.span.kind": "LLM"}, SpanRole.LLM_CALL),
        ("f", {"openinference.span.kind": "TOOL"}, SpanRole.TOOL_EXECUTION),
        ("f.tool", {"traceloop.span.kind": "tool"}, SpanRole.TOOL_EXECUTION),
        ("f.task", {"traceloop.span.kind": "task"}, SpanRole.OTHER),
        (
            "analyze",
            {"shapecheck.analyst.id": "a", "shapecheck.analyst.attempt": 1},
            SpanRole.ANALYST_ATTEMPT,
        ),
        ("analyze", {"shapecheck.analyst.id": "a"}, SpanRole.OTHER),
        ("chat m", {"gen_ai.operation.name": ["chat"]}, SpanRole.OTHER),
    ],
)
def test_classification(name: str, attributes: dict[str, Any], kind: SpanRole) -> None:
    assert classify_span(name, attributes).role is kind
    assert is_agent_span(attributes) is (kind is SpanRole.AGENT)


def test_output_that_stopped_for_tools_but_names_none_leaves_tool_calls_unknown(
    telemetry: CapturedTelemetry,
) -> None:
    # As opentelemetry-instrumentation-mistralai 0.62.4 records a tool-call reply: text fields only.
    legacy = _span(
        telemetry,
        "mistralai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": QUESTION,
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
        },
    )
    assert not names_own_tool_calls(legacy.attributes or {})
    legacy_call = read_llm_call(legacy)
    assert legacy_call is not None and legacy_call.tool_calls is None and legacy_call.user_text == QUESTION

    outputs = json.dumps([{"role": "assistant", "parts": [], "finish_reason": "tool_call"}])
    genai = _span(telemetry, "chat m", {"gen_ai.operation.name": "chat", "gen_ai.output.messages": outputs})
    genai_call = read_llm_call(genai)
    assert genai_call is not None and genai_call.tool_calls is None

    answered = _span(
        telemetry,
        "mistralai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.completion.0.content": "Rainy.",
            "gen_ai.completion.0.finish_reason": "stop",
        },
    )
    assert names_own_tool_calls(answered.attributes or {})
    answered_call = read_llm_call(answered)
    assert answered_call is not None and answered_call.tool_calls == ()


def test_tool_span_without_any_tool_name_is_not_a_tool_execution(telemetry: CapturedTelemetry) -> None:
    bare = _span(telemetry, "execute_tool", {"gen_ai.operation.name": "execute_tool"})
    named = _span(
        telemetry, "execute_tool", {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "f"}
    )
    assert read_tool_execution(bare) is None
    execution = read_tool_execution(named)
    assert execution is not None and execution.name == "f"


def test_legacy_content_block_lists_and_json_looking_text(telemetry: CapturedTelemetry) -> None:
    # Legacy instrumentations dump a provider's content list into gen_ai.prompt.N.content as JSON.
    assistant = [
        {"type": "text", "text": "Let me check."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
    ]
    tool_result = [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "rainy"}]
    span = _span(
        telemetry,
        "anthropic.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "[1, 2, 3] is my list; sum it",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "[4, 5]",
            "gen_ai.prompt.2.role": "assistant",
            "gen_ai.prompt.2.content": json.dumps(assistant),
            "gen_ai.prompt.3.role": "user",
            "gen_ai.prompt.3.content": json.dumps(tool_result),
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": json.dumps([{"type": "text", "text": "The sum is 15."}]),
        },
    )
    call = read_llm_call(span)
    assert call is not None
    assert call.user_texts == ("[1, 2, 3] is my list; sum it", "[4, 5]")
    assert call.user_text == "[4, 5]"
    assert call.assistant_text == "Let me check."
    assert call.tool_results == (ToolResult("rainy", call_id="toolu_1"),)
    assert call.answer_text == "The sum is 15." and call.tool_calls == ()


def test_model_role_is_the_assistant_and_function_role_returns_a_result(telemetry: CapturedTelemetry) -> None:
    prefix = "llm.input_messages"
    span = _span(
        telemetry,
        "GenerateContent",
        {
            "openinference.span.kind": "LLM",
            f"{prefix}.0.message.role": "user",
            f"{prefix}.0.message.content": QUESTION,
            f"{prefix}.1.message.role": "model",
            f"{prefix}.1.message.content": "Looking it up.",
            f"{prefix}.2.message.role": "function",
            f"{prefix}.2.message.name": "get_weather",
            f"{prefix}.2.message.content": "rainy",
        },
    )
    call = read_llm_call(span)
    assert call is not None
    assert call.assistant_text == "Looking it up."
    assert call.tool_results == (ToolResult("rainy", name="get_weather"),)


def test_provider_executed_tool_calls_and_their_responses(telemetry: CapturedTelemetry) -> None:
    # The v1.40 server_tool_call parts, as the schema shows them for a built-in web search.
    outputs = [
        {
            "role": "assistant",
            "parts": [
                {
                    "type": "server_tool_call",
                    "id": "ws_1",
                    "name": "web_search",
                    "server_tool_call": {"type": "web_search", "query": "Paris weather"},
                },
                {
                    "type": "server_tool_call_response",
                    "id": "ws_1",
                    "server_tool_call_response": {"type": "web_search", "results": ["57F, rain"]},
                },
                {"type": "text", "content": "It is 57F and raining."},
            ],
        }
    ]
    span = _span(
        telemetry,
        "chat m",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": json.dumps(outputs),
            "gen_ai.tool.definitions": json.dumps([{"type": "web_search", "name": "web_search"}]),
        },
    )
    call = read_llm_call(span)
    assert call is not None
    assert call.chosen == ("web_search",)
    assert call.tool_calls == (
        ToolCall("web_search", "ws_1", {"type": "web_search", "query": "Paris weather"}),
    )
    assert call.answer_text == "It is 57F and raining."
    search_result = {"type": "web_search", "results": ["57F, rain"]}
    assert call.tool_results == (ToolResult(search_result, call_id="ws_1"),)

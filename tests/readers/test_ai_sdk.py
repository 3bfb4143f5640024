"""The readers on the Vercel AI SDK's own telemetry (``ai.*``) and on GenAI spans that name no operation.

The attributes are written as the AI SDK 7's ``LegacyOpenTelemetry`` integration writes them (its
``ai.*`` convention, the one the SDK's own telemetry used before version 7), on spans made by the real
SDK tracer; the real Node SDK's spans go through the whole pipeline in ``tests/frameworks/test_js_matrix.py``.
Version 4's field names (``args``, ``result``, ``parameters``) are read too. The GenAI spans without
``gen_ai.operation.name`` are the shape Traceloop's JavaScript span processor writes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._model import OfferedTool, ToolCall, ToolParameter, ToolResult
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.readers._classify import (
    AGENT_AI_SDK,
    LLM_CALL_AI_SDK,
    LLM_CALL_GENAI_CONTENT,
    LLM_CALL_OPENINFERENCE,
    OTHER,
    TOOL_EXECUTION_AI_SDK,
    TOOL_EXECUTION_OPENINFERENCE,
    SpanRole,
    classify_span,
    is_agent_span,
    names_own_tool_calls,
)
from otel_shapecheck.readers._menus import has_own_menu, read_menu
from otel_shapecheck.readers._read import read_llm_call, read_tool_execution

from .telemetry import CapturedTelemetry

QUESTION = "How much capacity do the storage volumes in eu-west use?"
SYSTEM = "You are a storage operations assistant."
ARGUMENTS = {"region": "eu-west"}
ROWS = {"region": "eu-west", "rows": [{"volume": "vol-a", "used_tb": 412.5}]}
ANSWER = "vol-a uses 412.5 TB."
CALL_ID = "call_usage_1"
SCHEMA = {"type": "object", "properties": {"region": {"type": "string", "description": "Region name"}}}
TOOLS = (
    json.dumps({"type": "function", "name": "volume_usage", "inputSchema": SCHEMA, "description": "Usage."}),
    json.dumps({"type": "function", "name": "send_email", "inputSchema": {"type": "object"}}),
)
MENU = (
    OfferedTool("volume_usage", "Usage.", (ToolParameter("region", "Region name"),)),
    OfferedTool("send_email"),
)
PROMPT = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
]
TOOL_TURN = [
    {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "toolCallId": CALL_ID, "toolName": "volume_usage", "input": ARGUMENTS}
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": CALL_ID,
                "toolName": "volume_usage",
                "output": {"type": "json", "value": ROWS},
            }
        ],
    },
]
CHOICE = [{"toolCallId": CALL_ID, "toolName": "volume_usage", "input": ARGUMENTS}]


def _span(telemetry: CapturedTelemetry, name: str, attributes: Mapping[str, Any]) -> ReadableSpan:
    with telemetry.tracer_provider.get_tracer(__name__).start_as_current_span(name, attributes=attributes):
        pass
    return telemetry.spans()[-1]


def _model_call(operation: str = "ai.generateText.doGenerate", **attributes: Any) -> dict[str, Any]:
    """A model-call span's attributes as the SDK writes them; keyword arguments replace or drop (``None``)."""
    written: dict[str, Any] = {
        "operation.name": f"{operation} storage-ops",
        "ai.operationId": operation,
        "ai.model.provider": "openai.chat",
        "ai.model.id": "gpt-4o-mini",
        "ai.prompt.messages": json.dumps(PROMPT),
        "ai.prompt.tools": TOOLS,
        "ai.prompt.toolChoice": json.dumps({"type": "auto"}),
        "gen_ai.system": "openai.chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "ai.response.finishReason": "tool-calls",
        "ai.response.text": "",
        "ai.response.toolCalls": json.dumps(CHOICE),
        "ai.response.id": "scripted-choice",
        "gen_ai.response.finish_reasons": ("tool-calls",),
        "gen_ai.response.id": "scripted-choice",
    }
    written.update(attributes)
    return {key: value for key, value in written.items() if value is not None}


class TestClassification:
    @pytest.mark.parametrize("operation", ["ai.generateText.doGenerate", "ai.streamText.doStream"])
    def test_model_calls_are_llm_calls(self, operation: str) -> None:
        """The ``.doGenerate`` / ``.doStream`` spans are the model calls, by their operation id alone."""
        assert classify_span(operation, {"ai.operationId": operation}) is LLM_CALL_AI_SDK

    @pytest.mark.parametrize("operation", ["ai.generateText", "ai.streamText"])
    def test_a_whole_call_is_the_runs_root(self, operation: str) -> None:
        """``ai.generateText`` / ``ai.streamText`` cover the tool loop: an agent span, live and recorded."""
        attributes = {"ai.operationId": operation, "ai.response.text": ANSWER}
        assert classify_span(operation, attributes) is AGENT_AI_SDK
        assert is_agent_span(attributes)

    def test_tool_calls_are_tool_executions(self) -> None:
        assert classify_span("ai.toolCall", {"ai.operationId": "ai.toolCall"}) is TOOL_EXECUTION_AI_SDK

    @pytest.mark.parametrize("operation", ["ai.embed", "ai.embedMany.doEmbed", "ai.rerank"])
    def test_other_operations_are_nothing_to_the_checks(self, operation: str) -> None:
        assert classify_span(operation, {"ai.operationId": operation}) is OTHER

    def test_openinference_kinds_keep_their_reader(self) -> None:
        """OpenInference's Vercel processor adds its span kinds: its readers read those spans first."""
        llm = {"ai.operationId": "ai.generateText.doGenerate", "openinference.span.kind": "LLM"}
        tool = {"ai.operationId": "ai.toolCall", "openinference.span.kind": "TOOL"}
        assert classify_span("ai.generateText.doGenerate", llm) is LLM_CALL_OPENINFERENCE
        assert classify_span("ai.toolCall", tool) is TOOL_EXECUTION_OPENINFERENCE


class TestModelCall:
    def test_the_choosing_call(self, telemetry: CapturedTelemetry) -> None:
        """Menu, prompt, the chosen tool with its id and arguments, the finish reason and the response id."""
        span = _span(telemetry, "ai.generateText.doGenerate", _model_call())
        call = read_llm_call(span)
        assert call is not None
        assert call.offered_tools == MENU and call.menu_source == "span"
        assert call.user_text == QUESTION
        assert call.tool_calls == (ToolCall("volume_usage", CALL_ID, ARGUMENTS),)
        assert call.answer_text is None, "the empty text beside the tool calls is no answer"
        assert call.finish_reasons == ("tool-calls",)
        assert call.response_id == "scripted-choice"
        attributes = span.attributes or {}
        assert names_own_tool_calls(attributes) and has_own_menu(attributes)

    def test_the_answering_call_sees_the_tool_result(self, telemetry: CapturedTelemetry) -> None:
        """A ``tool-result`` part's result is its ``output.value``; the answer is ``ai.response.text``."""
        attributes = _model_call(
            "ai.streamText.doStream",
            **{
                "ai.prompt.messages": json.dumps(PROMPT + TOOL_TURN),
                "ai.response.finishReason": "stop",
                "ai.response.text": ANSWER,
                "ai.response.toolCalls": None,
                "gen_ai.response.finish_reasons": ("stop",),
            },
        )
        call = read_llm_call(_span(telemetry, "ai.streamText.doStream", attributes))
        assert call is not None
        assert call.tool_calls == ()
        assert call.tool_results == (ToolResult(ROWS, call_id=CALL_ID, name="volume_usage"),)
        assert call.answer_text == ANSWER
        assert call.turn_tool_calls == 1 and call.user_texts == (QUESTION,)

    def test_an_output_not_recorded_is_unknown(self, telemetry: CapturedTelemetry) -> None:
        """With ``recordOutputs: false`` the response keys are absent: its tool calls are unknown."""
        attributes = _model_call(**{"ai.response.text": None, "ai.response.toolCalls": None})
        span = _span(telemetry, "ai.generateText.doGenerate", attributes)
        call = read_llm_call(span)
        assert call is not None and call.tool_calls is None and call.answer_text is None
        assert not names_own_tool_calls(span.attributes or {}), "its tool spans must say what it chose"

    def test_tool_calls_not_recorded_beside_a_tool_finish_are_unknown(
        self, telemetry: CapturedTelemetry
    ) -> None:
        attributes = _model_call(**{"ai.response.toolCalls": None})
        span = _span(telemetry, "ai.generateText.doGenerate", attributes)
        call = read_llm_call(span)
        assert call is not None and call.tool_calls is None
        assert not names_own_tool_calls(span.attributes or {})

    def test_inputs_not_recorded_are_not_captured(self, telemetry: CapturedTelemetry) -> None:
        """With ``recordInputs: false`` neither the prompt nor the menu is there: both read as unknown."""
        attributes = _model_call(**{"ai.prompt.messages": None, "ai.prompt.tools": None})
        call = read_llm_call(_span(telemetry, "ai.generateText.doGenerate", attributes))
        assert call is not None
        assert not call.input_captured and call.user_text is None
        assert call.offered_tools is None and call.menu_source is None

    def test_an_empty_menu_is_known_to_be_empty(self, telemetry: CapturedTelemetry) -> None:
        call = read_llm_call(
            _span(telemetry, "ai.generateText.doGenerate", _model_call(**{"ai.prompt.tools": ()}))
        )
        assert call is not None and call.offered_tools == ()

    def test_unreadable_entries_leave_the_rest_of_the_menu(self, telemetry: CapturedTelemetry) -> None:
        tools = (TOOLS[0], '{"type": "function", "na', json.dumps({"type": "function"}))
        call = read_llm_call(
            _span(telemetry, "ai.generateText.doGenerate", _model_call(**{"ai.prompt.tools": tools}))
        )
        assert call is not None and call.offered_tools == MENU[:1]

    def test_version_4_field_names(self, telemetry: CapturedTelemetry) -> None:
        """Before version 5: ``args`` (a JSON string in the response), ``result`` and ``parameters``."""
        old_turn = [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool-call",
                        "toolCallId": CALL_ID,
                        "toolName": "volume_usage",
                        "args": ARGUMENTS,
                    }
                ],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "tool-result", "toolCallId": CALL_ID, "toolName": "volume_usage", "result": ROWS}
                ],
            },
        ]
        attributes = _model_call(
            **{
                "ai.prompt.messages": json.dumps([{"role": "user", "content": QUESTION}, *old_turn]),
                "ai.prompt.tools": (
                    json.dumps({"type": "function", "name": "volume_usage", "parameters": SCHEMA}),
                ),
                "ai.response.toolCalls": json.dumps(
                    [{"toolCallId": "call_2", "toolName": "volume_usage", "args": json.dumps(ARGUMENTS)}]
                ),
            }
        )
        call = read_llm_call(_span(telemetry, "ai.generateText.doGenerate", attributes))
        assert call is not None
        assert call.user_text == QUESTION, "a user message's content may be a plain string"
        assert call.offered_tools == (
            OfferedTool("volume_usage", None, (ToolParameter("region", "Region name"),)),
        )
        assert call.tool_calls == (ToolCall("volume_usage", "call_2", ARGUMENTS),)
        assert call.tool_results == (ToolResult(ROWS, call_id=CALL_ID, name="volume_usage"),)

    def test_openinference_spans_take_the_menu_from_ai_prompt_tools(
        self, telemetry: CapturedTelemetry
    ) -> None:
        """OpenInference's Vercel processor writes no ``llm.tools.*``: the menu is the SDK's, on the span."""
        attributes = _model_call(
            **{
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": QUESTION,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "volume_usage",
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": CALL_ID,
            }
        )
        call = read_llm_call(_span(telemetry, "ai.generateText.doGenerate storage-ops", attributes))
        assert call is not None
        assert call.offered_tools == MENU and call.menu_source == "span"
        assert call.chosen == ("volume_usage",)

    def test_an_agent_spans_menu_serves_its_calls(self) -> None:
        """``ai.prompt.tools`` is a menu where menus are looked for on ancestors, too."""
        assert read_menu({"ai.prompt.tools": TOOLS}) == MENU


class TestToolCall:
    def test_the_result_is_on_the_tool_span(self, telemetry: CapturedTelemetry) -> None:
        attributes = {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "volume_usage",
            "ai.toolCall.id": CALL_ID,
            "ai.toolCall.args": json.dumps(ARGUMENTS),
            "ai.toolCall.result": json.dumps(ROWS),
        }
        execution = read_tool_execution(_span(telemetry, "ai.toolCall", attributes))
        assert execution is not None
        assert (execution.name, execution.call_id, execution.arguments) == (
            "volume_usage",
            CALL_ID,
            ARGUMENTS,
        )
        assert execution.result == json.dumps(ROWS), "results are kept as captured"

    def test_a_result_not_recorded_is_none(self, telemetry: CapturedTelemetry) -> None:
        """A failed call, or ``recordOutputs: false``, leaves no result: none, not an empty one."""
        attributes = {
            "ai.operationId": "ai.toolCall",
            "ai.toolCall.name": "volume_usage",
            "ai.toolCall.id": CALL_ID,
        }
        execution = read_tool_execution(_span(telemetry, "ai.toolCall", attributes))
        assert execution is not None and execution.result is None and execution.arguments is None

    def test_a_tool_call_without_a_name_is_none(self, telemetry: CapturedTelemetry) -> None:
        assert read_tool_execution(_span(telemetry, "ai.toolCall", {"ai.operationId": "ai.toolCall"})) is None


GENAI_INPUT = json.dumps([{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}])
GENAI_TOOLS = json.dumps([{"type": "function", "name": "volume_usage", "parameters": SCHEMA}])
GENAI_OUTPUT = json.dumps(
    [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": CALL_ID, "name": "volume_usage", "arguments": ARGUMENTS}],
        }
    ]
)


class TestGenAIWithoutOperationName:
    @pytest.mark.parametrize(
        "key, value",
        [
            ("gen_ai.input.messages", GENAI_INPUT),
            ("gen_ai.output.messages", GENAI_OUTPUT),
        ],
    )
    def test_content_makes_a_model_call(self, key: str, value: str) -> None:
        """Input or output messages alone say it is a model call, classified apart to be counted."""
        assert (
            classify_span("chat gpt-4o-mini", {"gen_ai.request.model": "gpt-4o-mini", key: value})
            is LLM_CALL_GENAI_CONTENT
        )

    def test_a_menu_alone_is_no_model_call(self) -> None:
        """A span that only carries tool definitions (a loop or agent span holding its calls' menu, with
        no operation name) is not a model call; its menu still reaches the calls below it."""
        assert classify_span("agent loop", {"gen_ai.tool.definitions": GENAI_TOOLS}) is OTHER

    def test_traceloop_span_processor_shape_is_read(self, telemetry: CapturedTelemetry) -> None:
        attributes = {
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": GENAI_INPUT,
            "gen_ai.tool.definitions": GENAI_TOOLS,
            "gen_ai.output.messages": GENAI_OUTPUT,
        }
        call = read_llm_call(_span(telemetry, "chat gpt-4o-mini", attributes))
        assert call is not None
        assert call.user_text == QUESTION and call.chosen == ("volume_usage",)
        assert call.offered_tools == (
            OfferedTool("volume_usage", None, (ToolParameter("region", "Region name"),)),
        )

    @pytest.mark.parametrize(
        "extra",
        [
            {"gen_ai.operation.name": "embeddings"},
            {"gen_ai.operation.name": "invoke_agent"},
            {"openinference.span.kind": "CHAIN"},
            {"traceloop.span.kind": "task"},
            {"ai.operationId": "ai.embed"},
        ],
    )
    def test_spans_that_say_what_they_are_are_not(self, extra: dict[str, str]) -> None:
        """An operation name or another convention's role decides; content does not override it."""
        span_class = classify_span("span", {"gen_ai.input.messages": GENAI_INPUT, **extra})
        assert span_class.role is not SpanRole.LLM_CALL


def test_the_processor_counts_how_spans_were_classified(telemetry: CapturedTelemetry) -> None:
    """``ProcessorCounts.classified`` counts recorded spans by the rule that classified them."""
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected, checks=build_checks("hashing"), options=ProcessorOptions(schedule_delay_millis=10)
    )
    telemetry.tracer_provider.add_span_processor(processor)
    tracer = telemetry.tracer_provider.get_tracer(__name__)
    with tracer.start_as_current_span("ai.generateText", attributes={"ai.operationId": "ai.generateText"}):
        with (
            tracer.start_as_current_span("ai.generateText.doGenerate", attributes=_model_call()),
            tracer.start_as_current_span("ai.toolCall", attributes={"ai.operationId": "ai.toolCall"}),
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o-mini", attributes={"gen_ai.input.messages": GENAI_INPUT}
        ):
            pass
        with tracer.start_as_current_span("an ordinary span"):
            pass
    assert processor.force_flush(10_000)
    counts = processor.counts()
    assert counts.classified == (
        ("agent:ai-sdk", 1),
        ("llm_call:ai-sdk", 1),
        ("llm_call:genai-content", 1),
        ("tool_execution:ai-sdk", 1),
    )
    assert counts.classified_count("llm_call:genai-content") == 1

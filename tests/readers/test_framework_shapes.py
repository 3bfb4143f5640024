"""Readers on the shapes agent frameworks write: span events, raw payloads, Converse blocks, answer tools."""

from __future__ import annotations

import json

import openai
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall, ToolResult
from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._answer_tools import (
    AnswerToolNames,
    arguments_text,
    with_answer_tools,
)
from otel_shapecheck.readers._classify import names_own_tool_calls
from otel_shapecheck.readers._genai_events import events_name_tool_calls
from otel_shapecheck.readers._menus import read_menu
from otel_shapecheck.readers._payloads import is_request_payload, payload_messages
from otel_shapecheck.readers._read import read_llm_call

CONTEXT = SpanContext(trace_id=0xA1, span_id=0xB2, is_remote=False, trace_flags=TraceFlags(1))


def _span(attributes: dict[str, object], events: tuple[Event, ...] = ()) -> ReadableSpan:
    return ReadableSpan(
        name="chat", context=CONTEXT, attributes=attributes, events=events, start_time=1, end_time=2
    )


class TestSpanEvents:
    def test_per_message_span_events_with_converse_blocks(self) -> None:
        """strands' default mode: per-message events whose attributes hold JSON-dumped Converse blocks."""
        events = (
            Event("gen_ai.user.message", {"content": json.dumps([{"text": "How much in eu-west?"}])}),
            Event(
                "gen_ai.assistant.message",
                {
                    "content": json.dumps(
                        [{"toolUse": {"toolUseId": "t1", "name": "usage", "input": {"r": "eu"}}}]
                    )
                },
            ),
            Event(
                "gen_ai.tool.message",
                {
                    "content": json.dumps(
                        [{"toolResult": {"toolUseId": "t1", "content": [{"text": '{"tb": 412.5}'}]}}]
                    )
                },
            ),
            Event(
                "gen_ai.choice",
                {"finish_reason": "end_turn", "message": json.dumps([{"text": "It is 412.5 TB."}])},
            ),
        )
        call = read_llm_call(_span({"gen_ai.operation.name": "chat"}, events))
        assert call is not None
        assert call.user_text == "How much in eu-west?"
        assert call.tool_results == (ToolResult('{"tb": 412.5}', call_id="t1"),)
        assert call.answer_text == "It is 412.5 TB." and call.tool_calls == ()
        assert call.turn_tool_calls == 1
        assert events_name_tool_calls(events)

    def test_operation_details_span_event(self) -> None:
        """The latest-experimental event as a span event reads like the span attributes."""
        output = json.dumps(
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c", "name": "usage"}]}]
        )
        events = (Event("gen_ai.client.inference.operation.details", {"gen_ai.output.messages": output}),)
        call = read_llm_call(_span({"gen_ai.operation.name": "chat"}, events))
        assert call is not None and call.tool_calls == (ToolCall("usage", "c"),)
        assert events_name_tool_calls(events)

    def test_a_choice_that_stopped_for_tools_naming_none_does_not_name_them(self) -> None:
        """The hot path does not take a tool_use finish without calls as the span's own output."""
        assert not events_name_tool_calls(
            (Event("gen_ai.choice", {"finish_reason": "tool_use", "message": ""}),)
        )


class TestPayloads:
    def test_responses_list_with_parallel_function_calls(self) -> None:
        """A list of Responses objects (openai-agents' streaming chat path) gives one assistant message."""
        value = json.dumps(
            [
                {
                    "object": "response",
                    "output": [
                        {
                            "type": "function_call",
                            "name": "usage",
                            "call_id": "c1",
                            "arguments": '{"r": "eu"}',
                        },
                        {
                            "type": "function_call",
                            "name": "usage",
                            "call_id": "c2",
                            "arguments": '{"r": "us"}',
                        },
                    ],
                }
            ]
        )
        (message,) = payload_messages(value, "application/json", output=True) or ()
        assert [call.call_id for call in message.tool_calls] == ["c1", "c2"]

    def test_chat_completion_message_and_plain_text(self) -> None:
        """A chat completion, a bare message and plain text are each one reply."""
        completion = json.dumps(
            {"choices": [{"message": {"role": "assistant", "content": "4 TB"}, "finish_reason": "stop"}]}
        )
        (reply,) = payload_messages(completion, "application/json", output=True) or ()
        assert reply.texts == ("4 TB",) and reply.finish_reason == "stop"
        (text,) = payload_messages("just text", "text/plain", output=True) or ()
        assert text.role == "assistant" and text.texts == ("just text",)

    def test_requests_as_inputs(self) -> None:
        """Chat and Responses requests read as input messages, tool outputs as tool results."""
        chat = json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "tool_call_id": "c", "content": "5"},
                ]
            }
        )
        user, tool = payload_messages(chat, "application/json", output=False) or ()
        assert user.texts == ("hi",) and tool.tool_results == (ToolResult("5", call_id="c"),)
        responses = json.dumps(
            {
                "input": [
                    {"role": "user", "content": "q"},
                    {"type": "function_call_output", "call_id": "c", "output": "7"},
                ]
            }
        )
        _, result = payload_messages(responses, "application/json", output=False) or ()
        assert result.tool_results == (ToolResult("7", call_id="c"),)

    def test_an_openinference_llm_span_with_only_raw_payloads(self) -> None:
        """output.value alone is the span's own output (hot path) and its reply (worker)."""
        attributes = {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps([{"role": "user", "content": "How much?"}]),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"role": "assistant", "content": "12 TB"}),
            "output.mime_type": "application/json",
        }
        assert names_own_tool_calls(attributes)
        call = read_llm_call(_span(attributes))
        assert call is not None and call.user_text == "How much?" and call.answer_text == "12 TB"

    def test_a_request_shaped_output_is_no_model_call(self) -> None:
        """llama-index's _prepare_chat_with_tools is an LLM span whose output is a request."""
        output = json.dumps({"messages": ["ChatMessage(...)"], "tools": []})
        assert is_request_payload(output, "application/json")
        attributes = {
            "openinference.span.kind": "LLM",
            "output.value": output,
            "output.mime_type": "application/json",
        }
        assert read_llm_call(_span(attributes)) is None


class TestAnswerTools:
    def _call(self, *calls: ToolCall, declared: tuple[str, ...] | None = None) -> LLMCall:
        return LLMCall(
            span_id="b2",
            trace_id="a1",
            tool_calls=calls,
            declared_answer_tools=declared,
            offered_tools=(OfferedTool("usage"), OfferedTool("final_answer")),
        )

    def test_a_configured_answer_tool_is_the_answer(self) -> None:
        """final_answer's arguments become the answer text; it leaves the tool calls and the menu."""
        call = with_answer_tools(
            self._call(ToolCall("final_answer", "c", {"answer": "It is 4 TB."})), ("final_answer",)
        )
        assert call.answer_tool == "final_answer" and call.answer_text == "It is 4 TB."
        assert call.tool_calls == () and call.offered_tools == (OfferedTool("usage"),)

    def test_a_declaration_wins_over_the_configured_names(self) -> None:
        """A framework that declares its output tools (none here) is not second-guessed by the names."""
        call = self._call(ToolCall("final_answer", "c", {"answer": "x"}), declared=())
        assert with_answer_tools(call, ("final_answer",)) is call

    @settings(max_examples=300, deadline=None)
    @given(
        names=st.lists(
            st.sampled_from(["", "*", "a", "a*", "ab", "ab*", "abc*", "b*", "b", "a*b", "final_*"])
        ),
        name=st.sampled_from(["", "a", "ab", "abc", "abd", "b", "ba", "a*b", "*", "final_", "final_x", "c"]),
    )
    def test_prefix_bisection_matches_the_pattern_loop(self, names: list[str], name: str) -> None:
        """Exact names and ``*`` prefixes (nested, empty, overlapping) decide as trying each pattern does."""
        looped = any(
            (pattern.endswith("*") and name.startswith(pattern[:-1])) or name == pattern for pattern in names
        )
        assert AnswerToolNames(names).matches(name) is looped

    def test_a_prefix_inside_another_keeps_the_shorter(self) -> None:
        """``final*`` covers ``final_result_*``; the greatest prefix before a name is the one to try."""
        names = AnswerToolNames(("final_result_*", "final*", "zeta"))
        assert names.matches("final") and names.matches("finalize") and names.matches("final_result_X")
        assert not names.matches("fina") and not names.matches("zet") and not names.matches("zeta_")
        between = AnswerToolNames(("a*", "ab_x", "b*"))
        assert between.matches("ab_x") and between.matches("az") and between.matches("b")
        assert not between.matches("") and not between.matches("_a")

    def test_a_large_menu_against_as_many_declared_tools(self) -> None:
        """16 000 declared output tools against a 16 000-tool menu: exactly the declared ones leave it."""
        menu = tuple(OfferedTool(f"tool_{i}") for i in range(16_000))
        declared = tuple(f"tool_{i}" for i in range(0, 32_000, 2))
        call = with_answer_tools(
            LLMCall(
                span_id="b2",
                trace_id="a1",
                offered_tools=menu,
                tool_calls=(ToolCall("tool_1"), ToolCall("tool_2", "c", {"answer": "Done."})),
                declared_answer_tools=declared,
            ),
            (),
        )
        assert call.offered_tools == menu[1::2]
        assert call.tool_calls == (ToolCall("tool_1"),)
        assert call.answer_tool == "tool_2" and call.answer_text == "Done."

    def test_patterns_and_structured_arguments(self) -> None:
        """A trailing * matches a prefix; numbers in structured arguments keep their keys."""
        assert AnswerToolNames(("final_result_*",)).matches("final_result_Report")
        assert not AnswerToolNames(("final_result*",)).matches("final")
        assert (
            arguments_text({"summary": "Usage is up.", "total_tb": 812.5}) == "Usage is up.\ntotal_tb: 812.5"
        )


def test_names_only_menu_from_strands_agent_tools() -> None:
    """gen_ai.agent.tools (names only) is a menu when no definitions are recorded."""
    assert read_menu({"gen_ai.agent.tools": '["a", "b"]'}) == (OfferedTool("a"), OfferedTool("b"))


def test_scripted_server_speaks_the_responses_api() -> None:
    """Plain and streamed Responses API replies, parallel function calls included, for the real client."""
    calls = [ScriptedToolCall("a", {"x": 1}, "c1"), ScriptedToolCall("b", {"y": 2}, "c2")]
    script = [ScriptedReply(tool_calls=calls), ScriptedReply(text="5 TB")] * 2
    with ScriptedOpenAIServer(script) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        try:
            first = client.responses.create(model="m", input="hi")
            assert [(item.type, item.call_id) for item in first.output] == [
                ("function_call", "c1"),
                ("function_call", "c2"),
            ]
            assert client.responses.create(model="m", input="hi").output_text == "5 TB"
            with client.responses.stream(model="m", input="hi") as stream:
                assert [item.name for item in stream.get_final_response().output] == ["a", "b"]
            with client.responses.stream(model="m", input="hi") as stream:
                assert stream.get_final_response().output_text == "5 TB"
        finally:
            client.close()

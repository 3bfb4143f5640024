"""Parity of the choice context built from what the readers take out of real telemetry.

The reference recorder's tests pin the exact strings ``'user: why did fc1/3 drop?'`` and
``'user: why?\\n\\nassistant: checking the FLOGI DB'``, and that a tool result never reaches the
embedder. Here the user text and the turn's assistant text come from genai-openai spans of a real
client run against the scripted server, read by our readers, and go through the tool-choice check's
``choice_context``.
"""

from __future__ import annotations

from typing import Any

import openai

from otel_shapecheck._model import LLMCall
from otel_shapecheck.checks.tool_choice._margin import choice_context
from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer

from .telemetry import MODEL, TOOLS, CapturedTelemetry

TOOL_RESULT_MARKER = "<<tool-result: fc1/3 link down at 04:12>>"


def _two_calls(telemetry: CapturedTelemetry, question: str, first_text: str | None) -> list[LLMCall]:
    """The user asks; the model (maybe saying something) calls a tool; after its result, calls another."""
    script = [
        ScriptedReply(text=first_text, tool_calls=[ScriptedToolCall("get_weather", {"city": "x"}, "call_1")]),
        ScriptedReply(tool_calls=[ScriptedToolCall("get_time", {"city": "x"}, "call_2")]),
    ]
    with ScriptedOpenAIServer(script) as server:
        _converse(server.base_url, question)
    return telemetry.llm_calls()


def _converse(base_url: str, question: str) -> None:
    with openai.OpenAI(base_url=base_url, api_key="scripted", max_retries=0) as client:
        messages: list[Any] = [{"role": "user", "content": question}]
        first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": TOOL_RESULT_MARKER})
        client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)


def test_context_is_the_user_prompt_alone_without_earlier_assistant_text(
    genai_openai: CapturedTelemetry,
) -> None:
    first, second = _two_calls(genai_openai, "why did fc1/3 drop?", None)
    assert choice_context(first.user_text or "", first.assistant_text) == "user: why did fc1/3 drop?"
    assert choice_context(second.user_text or "", second.assistant_text) == "user: why did fc1/3 drop?"
    assert TOOL_RESULT_MARKER not in choice_context(second.user_text or "", second.assistant_text)


def test_context_adds_the_latest_assistant_text_of_the_turn(genai_openai: CapturedTelemetry) -> None:
    first, second = _two_calls(genai_openai, "why?", "  checking the FLOGI DB ")
    assert choice_context(first.user_text or "", first.assistant_text) == "user: why?"
    context = choice_context(second.user_text or "", second.assistant_text)
    assert context == "user: why?\n\nassistant: checking the FLOGI DB"
    assert TOOL_RESULT_MARKER not in context

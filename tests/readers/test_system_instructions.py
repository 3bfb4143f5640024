"""The instructions an application gives the model, read in each convention that records them.

GenAI records them apart from the history in ``gen_ai.system_instructions`` (an array of parts) or as
``system``/``developer`` messages inside ``gen_ai.input.messages``; OpenInference as a ``system`` input
message; google-adk in its request's ``config.system_instruction``. They land in
``LLMCall.system_texts``: numbers in them were supplied, not invented, so the figures check exempts
them as it does the user's (``tests/pipeline/test_supplied_figures.py``); they are no choice context
(``user_text`` is unchanged). The spans are real SDK spans.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_shapecheck._model import LLMCall
from otel_shapecheck.readers._read import read_llm_call

from .telemetry import CapturedTelemetry

POLICY = "Refunds are capped at 2500 EUR per order."
QUESTION = "Can I get my money back?"
ANSWER = "Yes: refunds are capped at 2500 EUR per order."
REPLY = {"role": "model", "parts": [{"text": ANSWER}]}


def _chat(telemetry: CapturedTelemetry, attributes: dict[str, Any]) -> LLMCall:
    tracer = telemetry.tracer_provider.get_tracer("tests.system")
    with tracer.start_as_current_span(
        "chat gpt-4o-mini", attributes={"gen_ai.operation.name": "chat"}
    ) as span:
        span.set_attributes(attributes)
    call = read_llm_call(telemetry.spans()[-1])
    assert call is not None
    return call


def _messages(*messages: tuple[str, str]) -> str:
    return json.dumps(
        [{"role": role, "parts": [{"type": "text", "content": text}]} for role, text in messages]
    )


class TestGenAI:
    def test_system_instructions_recorded_apart_are_read_as_text_parts(
        self, telemetry: CapturedTelemetry
    ) -> None:
        instructions = json.dumps([{"type": "text", "content": POLICY}, {"type": "blob", "content": "AAAA"}])
        call = _chat(
            telemetry,
            {
                "gen_ai.system_instructions": instructions,
                "gen_ai.input.messages": _messages(("user", QUESTION)),
            },
        )
        assert call.system_texts == (POLICY,)
        assert (call.user_text, call.user_texts) == (QUESTION, (QUESTION,))  # no choice context from them

    def test_system_and_developer_messages_in_the_history_are_instructions(
        self, telemetry: CapturedTelemetry
    ) -> None:
        inputs = _messages(("system", POLICY), ("developer", "Answer in 2 lines."), ("user", QUESTION))
        call = _chat(telemetry, {"gen_ai.input.messages": inputs})
        assert call.system_texts == (POLICY, "Answer in 2 lines.")
        assert call.user_texts == (QUESTION,)

    @pytest.mark.parametrize("value", [None, "[]", "", "not json at all is its own text"])
    def test_absent_empty_and_plain_instructions(
        self, telemetry: CapturedTelemetry, value: str | None
    ) -> None:
        attributes: dict[str, Any] = {"gen_ai.input.messages": _messages(("user", QUESTION))}
        if value is not None:
            attributes["gen_ai.system_instructions"] = value
        call = _chat(telemetry, attributes)
        assert call.system_texts == ((value,) if value and not value.startswith("[") else ())


def test_openinference_reads_a_system_input_message(telemetry: CapturedTelemetry) -> None:
    tracer = telemetry.tracer_provider.get_tracer("openinference.instrumentation.openai")
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": POLICY,
        "llm.input_messages.1.message.role": "user",
        "llm.input_messages.1.message.content": QUESTION,
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
    }
    with tracer.start_as_current_span("ChatCompletion", attributes=attributes):
        pass
    call = read_llm_call(telemetry.spans()[-1])
    assert call is not None and call.system_texts == (POLICY,) and call.user_text == QUESTION


@pytest.mark.parametrize(
    "instruction",
    [POLICY, {"role": "system", "parts": [{"text": POLICY}]}, [{"text": POLICY}], [POLICY]],
    ids=["string", "content", "parts", "strings"],
)
def test_adk_reads_its_configs_system_instruction(telemetry: CapturedTelemetry, instruction: Any) -> None:
    tracer = telemetry.tracer_provider.get_tracer("gcp.vertex.agent")
    body = {
        "model": "gemini-2.0-flash",
        "config": {"system_instruction": instruction},
        "contents": [{"role": "user", "parts": [{"text": QUESTION}]}],
    }
    attributes = {
        "gen_ai.system": "gcp.vertex.agent",
        "gcp.vertex.agent.llm_request": json.dumps(body),
        "gcp.vertex.agent.llm_response": json.dumps(
            {"content": {"role": "model", "parts": [{"text": ANSWER}]}}
        ),
    }
    with tracer.start_as_current_span("call_llm", attributes=attributes):
        pass
    call = read_llm_call(telemetry.spans()[-1])
    assert call is not None and call.system_texts == (POLICY,)

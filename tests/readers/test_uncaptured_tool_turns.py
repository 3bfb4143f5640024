"""A tool turn recorded without its content, in every convention's layout: not captured, never empty.

A framework may record that a tool answered without recording what it answered. Each span is written
through a real SDK ``TracerProvider`` in one convention's attributes and read back: the turn counts as a
tool turn (``turn_tool_calls``) and gives no tool result, so the figures check has nothing to hold an
answer against and says so (``no-results``) instead of reading an empty result.
"""

from __future__ import annotations

import json

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_shapecheck._model import LLMCall
from otel_shapecheck.readers._read import read_llm_call

QUESTION = "How much usable storage does Lyon have?"
ANSWER = "Lyon has 1200 TB usable."

CONVENTIONS: dict[str, dict[str, object]] = {
    "openinference": {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.input_messages.1.message.role": "tool",
        "llm.input_messages.1.message.tool_call_id": "c1",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
    },
    "openllmetry": {
        "llm.request.type": "chat",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION,
        "gen_ai.prompt.1.role": "tool",
        "gen_ai.prompt.1.tool_call_id": "c1",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": ANSWER,
    },
    "genai": {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": json.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1"}]},
            ]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
        ),
    },
    "openinference payload": {
        "openinference.span.kind": "LLM",
        "input.value": json.dumps(
            {"messages": [{"role": "user", "content": QUESTION}, {"role": "tool", "tool_call_id": "c1"}]}
        ),
        "input.mime_type": "application/json",
        "output.value": ANSWER,
    },
}


def _read(attributes: dict[str, object]) -> LLMCall:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.get_tracer("framework").start_span("chat", attributes=attributes).end()  # type: ignore[arg-type]
    provider.shutdown()
    (span,) = exporter.get_finished_spans()
    call = read_llm_call(span)
    assert call is not None
    return call


@pytest.mark.parametrize("convention", sorted(CONVENTIONS))
def test_a_tool_turn_without_content_is_a_turn_without_a_result(convention: str) -> None:
    """The tool turn is seen (it counts), its result is not captured (no empty result)."""
    call = _read(CONVENTIONS[convention])
    assert call.answer_text == ANSWER
    assert call.tool_results == ()
    assert call.turn_tool_calls == 1


def test_a_tool_turn_with_empty_text_is_a_captured_empty_result() -> None:
    """Content recorded as an empty string was captured: the tool answered nothing."""
    attributes = {**CONVENTIONS["openinference"], "llm.input_messages.1.message.content": ""}
    call = _read(attributes)
    assert [result.content for result in call.tool_results] == [""]

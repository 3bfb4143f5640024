"""A figure the application's own instructions supplied is not flagged: written end to end by
``opentelemetry-util-genai``'s handler (``gen_ai.system_instructions``), through the processor."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, OutputMessage, TextPart

from otel_shapecheck import FiguresCheck, ShapecheckSpanProcessor
from otel_shapecheck._attributes import FIGURES_CARRIED, FIGURES_UNSUPPORTED, FLAGGED
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import TOOLS, CountingProcessor, execute_tool

POLICY = "Refunds are capped at 2500 EUR per order."
QUESTION = "Can I get my money back?"
ANSWER = "Yes: refunds are capped at 2500 EUR per order."


def _answer_with_policy(monkeypatch: pytest.MonkeyPatch, *, instructed: bool) -> dict[str, Any]:
    """A tool turn whose answer quotes the policy, written by util-genai's handler; the answer's copy."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[FiguresCheck()], options=ProcessorOptions())
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    handler = TelemetryHandler(tracer_provider=provider)
    with provider.get_tracer("tests.system").start_as_current_span("invoke_agent support"):
        execute_tool(handler, result={"order": "A-1", "total_eur": 3100})
        invocation = handler.inference("openai", request_model="gpt-4o-mini")
        invocation.tool_definitions = list(TOOLS)
        if instructed:
            invocation.system_instruction = [TextPart(content=POLICY)]
        invocation.input_messages = [InputMessage(role="user", parts=[TextPart(content=QUESTION)])]
        invocation.output_messages = [
            OutputMessage(role="assistant", parts=[TextPart(content=ANSWER)], finish_reason="stop")
        ]
        invocation.stop()
    assert processor.force_flush()
    provider.shutdown()
    (copy,) = [span for span in downstream.spans if span.name.startswith("chat")]
    assert copy.attributes is not None
    return dict(copy.attributes)


def test_a_figure_the_instructions_supplied_is_not_flagged(monkeypatch: pytest.MonkeyPatch) -> None:
    instructed = _answer_with_policy(monkeypatch, instructed=True)
    assert "gen_ai.system_instructions" in instructed
    assert (instructed[FIGURES_CARRIED], instructed[FLAGGED]) == (1, False)
    uninstructed = _answer_with_policy(monkeypatch, instructed=False)  # the control: nothing supplied it
    assert tuple(uninstructed[FIGURES_UNSUPPORTED]) == ("2500",) and uninstructed[FLAGGED] is True

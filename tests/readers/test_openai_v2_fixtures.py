"""The readers on telemetry from opentelemetry-instrumentation-openai-v2 2.4b0 with util-genai 0.4b0.

That stack cannot share an environment with util-genai 1.3b0, so ``tests/fixtures/generate_openai_v2.py``
runs it (the real instrumentation, the real ``openai`` client, the scripted server) in its own
environment and commits OTLP/JSON. These tests load the files back into real ``ReadableSpan`` and
``LogRecord`` objects and read them.
"""

from __future__ import annotations

from pathlib import Path

from opentelemetry._logs import LogRecord
from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck._model import LLMCall, ToolCall, ToolResult
from otel_shapecheck.otlp._files import parse_telemetry
from otel_shapecheck.readers._classify import (
    SpanRole,
    classify_span,
    is_genai_content_record,
    names_own_tool_calls,
)
from otel_shapecheck.readers._read import read_llm_call, read_log_records

from .telemetry import WEATHER_ARGUMENTS, WEATHER_RESULT, records_by_span

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "openai_v2"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is rainy in Paris, 57F."
CALL_ID = "call_weather_1"


def _load(mode: str) -> tuple[list[ReadableSpan], list[LogRecord]]:
    """The spans (in end order) and log records of one fixture run, read by the package's OTLP/JSON loader."""
    spans, logs = (FIXTURES / f"{mode}.spans.json", FIXTURES / f"{mode}.logs.json")
    loaded_spans = parse_telemetry(spans.read_bytes(), str(spans)).spans
    records = [record.log_record for record in parse_telemetry(logs.read_bytes(), str(logs)).log_records]
    return sorted(loaded_spans, key=lambda span: span.end_time or 0), records


def _calls_from_events(spans: list[ReadableSpan], records: list[LogRecord]) -> list[LLMCall]:
    grouped = records_by_span(records)
    calls = []
    for span in spans:
        from_span = read_llm_call(span)
        from_events = read_log_records(grouped[span.context.span_id])
        assert from_span is not None and from_events is not None
        calls.append(from_span.merged_with(from_events))
    return calls


def test_default_path_per_message_events_are_read() -> None:
    spans, records = _load("events")
    assert [classify_span(span.name, span.attributes or {}).role for span in spans] == [SpanRole.LLM_CALL] * 2
    assert not any(names_own_tool_calls(span.attributes or {}) for span in spans)
    assert {record.event_name for record in records} == {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    }
    assert all(is_genai_content_record(record) for record in records)

    first, second = _calls_from_events(spans, records)
    # openai-v2 puts tool_calls inside gen_ai.choice's message, arguments as a JSON string.
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert first.finish_reasons == ("tool_calls",)
    assert first.response_id == "chatcmpl-v2-1"
    assert first.offered_tools is None, "openai-v2 records no tool definitions"
    assert second.tool_calls == ()
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER
    assert second.user_texts == (QUESTION,)
    assert second.assistant_text is None, "the assistant message of this turn carried tool calls, no text"


def test_latest_experimental_content_on_spans_and_in_the_details_event() -> None:
    spans, records = _load("latest")
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = (read_llm_call(span) for span in spans)
    assert first is not None and second is not None
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER

    from_events = _calls_from_events(spans, records)
    assert [call.tool_calls for call in from_events] == [first.tool_calls, second.tool_calls]
    assert from_events[1].tool_results == second.tool_results
    assert from_events[1].answer_text == ANSWER


def test_events_alone_give_the_same_content_as_spans_with_content() -> None:
    spans, records = _load("latest")
    grouped = records_by_span(records)
    for span in spans:
        from_span, from_events = read_llm_call(span), read_log_records(grouped[span.context.span_id])
        assert from_span is not None and from_events is not None
        assert from_events.span_id == from_span.span_id and from_events.trace_id == from_span.trace_id
        assert (from_events.tool_calls, from_events.user_text, from_events.answer_text) == (
            from_span.tool_calls,
            from_span.user_text,
            from_span.answer_text,
        )
        assert from_events.offered_tools is None and from_span.offered_tools is None

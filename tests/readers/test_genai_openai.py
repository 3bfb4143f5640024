"""The readers on telemetry from opentelemetry-instrumentation-genai-openai 1.3b0 with util-genai 1.3b0.

The real instrumentation wraps the real ``openai`` client talking to the scripted server on loopback;
spans and log records come from the SDK's in-memory exporters.
"""

from __future__ import annotations

import pytest
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord

from otel_shapecheck._model import ToolCall, ToolResult
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.readers._classify import SpanRole, is_genai_content_record, names_own_tool_calls
from otel_shapecheck.readers._read import read_llm_call, read_log_records

from .telemetry import (
    ANSWER,
    CALL_ID,
    OFFERED_TOOLS,
    QUESTION,
    WEATHER_ARGUMENTS,
    WEATHER_RESULT,
    CapturedTelemetry,
    records_by_span,
    run_openai_turn,
    weather_script,
)


@pytest.mark.parametrize("genai_openai", ["SPAN_ONLY"], indirect=True)
@pytest.mark.parametrize("stream", [False, True], ids=["plain", "streamed"])
def test_content_on_spans_reads_menu_choice_result_and_answer(
    genai_openai: CapturedTelemetry, stream: bool
) -> None:
    with ScriptedOpenAIServer(weather_script()) as server:
        assert run_openai_turn(server.base_url, stream=stream) == ANSWER

    spans = genai_openai.spans_of_kind(SpanRole.LLM_CALL)
    assert len(spans) == 2
    assert all(names_own_tool_calls(span.attributes or {}) for span in spans)
    first, second = genai_openai.llm_calls()

    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.chosen == ("get_weather",)
    assert first.user_text == QUESTION and first.user_texts == (QUESTION,)
    assert first.assistant_text is None
    assert first.tool_results == ()
    assert first.finish_reasons == ("tool_calls",)
    assert first.response_id == "chatcmpl-turn-1"
    assert first.span_id == format(spans[0].context.span_id, "016x")
    assert first.trace_id == format(spans[0].context.trace_id, "032x")
    assert first.end_time_ns == spans[0].end_time

    assert second.tool_calls == ()
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER
    assert second.user_text == QUESTION
    assert second.finish_reasons == ("stop",)
    assert second.response_id == "chatcmpl-turn-2"


@pytest.mark.parametrize("genai_openai", ["EVENT_ONLY"], indirect=True)
def test_event_only_mode_is_read_through_the_log_records(genai_openai: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script()) as server:
        run_openai_turn(server.base_url)

    spans = genai_openai.spans_of_kind(SpanRole.LLM_CALL)
    assert len(spans) == 2
    assert not any(names_own_tool_calls(span.attributes or {}) for span in spans)
    from_spans = [read_llm_call(span) for span in spans]
    assert all(
        call is not None and call.tool_calls is None and call.offered_tools is None for call in from_spans
    )

    records = genai_openai.log_records()
    assert records and all(is_genai_content_record(record) for record in records)
    grouped = records_by_span(records)
    first_events = read_log_records(grouped[spans[0].context.span_id])
    second_events = read_log_records(grouped[spans[1].context.span_id])
    assert first_events is not None and second_events is not None
    assert first_events.span_id == format(spans[0].context.span_id, "016x")
    assert first_events.trace_id == format(spans[0].context.trace_id, "032x")

    first = from_spans[0].merged_with(first_events)  # type: ignore[union-attr]
    assert first.offered_tools == OFFERED_TOOLS
    assert first.tool_calls == (ToolCall("get_weather", CALL_ID, WEATHER_ARGUMENTS),)
    assert first.user_text == QUESTION
    assert first.response_id == "chatcmpl-turn-1"
    second = from_spans[1].merged_with(second_events)  # type: ignore[union-attr]
    assert second.tool_results == (ToolResult(WEATHER_RESULT, call_id=CALL_ID),)
    assert second.answer_text == ANSWER


@pytest.mark.parametrize("genai_openai", ["NO_CONTENT"], indirect=True)
def test_without_content_capture_only_the_response_metadata_is_read(genai_openai: CapturedTelemetry) -> None:
    with ScriptedOpenAIServer(weather_script()) as server:
        run_openai_turn(server.base_url)

    calls = [read_llm_call(span) for span in genai_openai.spans_of_kind(SpanRole.LLM_CALL)]
    assert [call.response_id for call in calls if call] == ["chatcmpl-turn-1", "chatcmpl-turn-2"]
    assert [call.finish_reasons for call in calls if call] == [("tool_calls",), ("stop",)]
    assert all(call is not None and call.tool_calls is None and call.user_text is None for call in calls)
    assert genai_openai.log_records() == []


class _RecordingLogProcessor(LogRecordProcessor):
    """Keeps what ``on_emit`` receives: the SDK's read-write wrappers."""

    def __init__(self) -> None:
        self.emitted: list[ReadWriteLogRecord] = []

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        self.emitted.append(log_record)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


@pytest.mark.parametrize("genai_openai", ["EVENT_ONLY"], indirect=True)
def test_sdk_record_wrappers_read_like_the_records_they_wrap(genai_openai: CapturedTelemetry) -> None:
    processor = _RecordingLogProcessor()
    genai_openai.logger_provider.add_log_record_processor(processor)
    with ScriptedOpenAIServer(weather_script()) as server:
        run_openai_turn(server.base_url)

    exported = list(genai_openai.log_exporter.get_finished_logs())
    assert len(processor.emitted) == len(exported) == 2
    assert all(is_genai_content_record(record) for record in [*processor.emitted, *exported])
    for wrapped in (processor.emitted, exported):
        calls = [read_log_records([record]) for record in wrapped]
        assert calls == [read_log_records([record.log_record]) for record in wrapped]
        assert [call.chosen for call in calls if call] == [("get_weather",), ()]

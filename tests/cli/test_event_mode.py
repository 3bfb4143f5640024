"""``check`` over an instrumentation in event mode: message content arrives in exported log records."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.util.genai.handler import TelemetryHandler

from cli.console_script import run_cli
from otel_shapecheck.cli.demo._demo import _TOOL_TURNS, _ScriptedAgent
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.otlp._files import load_telemetry
from otel_shapecheck.otlp._jsonl import OtlpJsonLinesLogExporter, OtlpJsonLinesSpanExporter

CAPACITY_TURN = next(turn for turn in _TOOL_TURNS if turn.agent == "capacity-planner")


@pytest.fixture(name="event_mode_export")
def _event_mode_export(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The capacity-planner turn, instrumented with content in log events only, exported as JSON Lines."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "event_only")
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_EMIT_EVENT", "true")
    tracer_provider = TracerProvider(shutdown_on_exit=False)
    tracer_provider.add_span_processor(
        SimpleSpanProcessor(OtlpJsonLinesSpanExporter(tmp_path / "traces.jsonl"))
    )
    logger_provider = LoggerProvider(shutdown_on_exit=False)
    logger_provider.add_log_record_processor(
        SimpleLogRecordProcessor(OtlpJsonLinesLogExporter(tmp_path / "logs.jsonl"))
    )
    instrumentor = OpenAIInstrumentor()
    if instrumentor.is_instrumented_by_opentelemetry:  # left behind elsewhere: it would keep its providers
        instrumentor.uninstrument()
    instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        with ScriptedOpenAIServer(list(CAPACITY_TURN.replies)) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
            handler = TelemetryHandler(tracer_provider=tracer_provider, logger_provider=logger_provider)
            _ScriptedAgent(client, handler, tracer_provider).run_tool_turn(CAPACITY_TURN)
            client.close()
    finally:
        instrumentor.uninstrument()
        tracer_provider.shutdown()
        logger_provider.shutdown()
    return tmp_path


def _report(*paths: Path) -> dict[str, object]:
    completed = run_cli("check", "--json", "--embedder", "hashing", *map(str, paths))
    assert completed.returncode == 0, completed.stderr
    report: dict[str, object] = json.loads(completed.stdout)
    return report


class TestEventMode:
    def test_spans_carry_no_content_in_event_mode(self, event_mode_export: Path) -> None:
        """The precondition: the spans alone hold no messages, the log file holds the content events."""
        spans = load_telemetry(str(event_mode_export / "traces.jsonl")).spans
        assert not any("gen_ai.output.messages" in (span.attributes or {}) for span in spans)
        assert load_telemetry(str(event_mode_export / "logs.jsonl")).log_records

    def test_log_records_beside_the_traces_supply_the_content(self, event_mode_export: Path) -> None:
        """With the logs file given too, the invented figure is found; from the traces alone it cannot be."""
        alone = _report(event_mode_export / "traces.jsonl")
        with_logs = _report(event_mode_export / "traces.jsonl", event_mode_export / "logs.jsonl")
        assert alone["summary"]["figures"]["answers"] == 0  # type: ignore[index]
        figures = with_logs["summary"]["figures"]  # type: ignore[index]
        assert figures == {
            "answers": 1,
            "checked": 2,
            "computed": 1,
            "inferred": 0,
            "unsupported": 1,
            "skipped": 0,
            "skipped_no_content": 0,
            "skipped_no_results": 0,
            "skipped_results_lost": 0,
        }
        # From the traces alone the answer is unreadable: that is said, not passed over in silence.
        alone_figures = alone["summary"]["figures"]  # type: ignore[index]
        assert alone_figures["skipped_no_content"] == alone_figures["skipped"] == 1
        # The spans themselves carry no content, so their verdicts count the figure without quoting it.
        answers = [
            entry["attributes"]
            for entry in with_logs["spans"]  # type: ignore[attr-defined]
            if "shapecheck.figures.unsupported_count" in entry["attributes"]
        ]
        assert [answer["shapecheck.figures.unsupported_count"] for answer in answers] == [1]
        assert all("shapecheck.figures.unsupported" not in answer for answer in answers)

"""``check`` with the figures flags, in process: inferred figures in --json and the table, the two settings,
and a tool result that overflows a sum in the same batch as a flagged answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, OutputMessage, TextPart, ToolCallRequestPart

from otel_shapecheck.cli._exit import EXIT_FLAGGED, EXIT_OK, EXIT_USAGE
from otel_shapecheck.cli._main import main
from otel_shapecheck.otlp._jsonl import write_spans_jsonl

ASSETS = [
    ["(In millions)", "2019", "2018"],
    ["Food Care", "$ 1,997.8", "$ 1,914.4"],
    ["Total", "$ 5,765.2", "$ 5,050.2"],
]


@pytest.fixture(autouse=True)
def _content_on_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")


def _turn(handler: TelemetryHandler, tracer: trace.Tracer, result: Any, answer: str) -> None:
    """An agent turn: a chat asking for a tool, the tool with ``result``, a chat answering ``answer``."""
    with tracer.start_as_current_span("invoke_agent analyst"):
        ask = handler.inference("openai", request_model="gpt-4o-mini")
        ask.input_messages = [InputMessage(role="user", parts=[TextPart(content="How did assets move?")])]
        call = ToolCallRequestPart(arguments={}, name="get_table", id="call_1")
        ask.output_messages = [OutputMessage(role="assistant", parts=[call], finish_reason="tool_calls")]
        ask.stop()
        tool = handler.tool("get_table")
        tool.tool_call_id = "call_1"
        tool.tool_result = result
        tool.stop()
        reply = handler.inference("openai", request_model="gpt-4o-mini")
        reply.input_messages = [InputMessage(role="user", parts=[TextPart(content="How did assets move?")])]
        reply.output_messages = [
            OutputMessage(role="assistant", parts=[TextPart(content=answer)], finish_reason="stop")
        ]
        reply.stop()


def _traces(tmp_path: Path, *turns: tuple[Any, str]) -> str:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    handler = TelemetryHandler(tracer_provider=provider)
    tracer = provider.get_tracer("test")
    for result, answer in turns:
        _turn(handler, tracer, result, answer)
    provider.shutdown()
    path = tmp_path / "traces.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        write_spans_jsonl(exporter.get_finished_spans(), stream)
    return str(path)


def _check_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", "--embedder", "hashing", "--json", *args])
    return code, json.loads(capsys.readouterr().out)


def _figures_attributes(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        span["attributes"] for span in report["spans"] if "shapecheck.figures.checked" in span["attributes"]
    ]


def test_inferred_figure_in_the_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """By default the percent change is inferred: counted, listed with its chance, not flagged."""
    path = _traces(tmp_path, (ASSETS, "The figure grew 14.16% year over year."))
    code, report = _check_json(capsys, "--fail-on", "flagged", path)
    (attributes,) = _figures_attributes(report)
    assert attributes["shapecheck.figures.inferred"] == 1
    assert attributes["shapecheck.figures.unsupported"] == []
    (entry,) = attributes["shapecheck.figures.derivations"]
    assert entry.startswith("14.16% = percent-change: (5765.2 − 5050.2) / 5050.2, row Total (chance ")
    assert report["summary"]["figures"]["inferred"] == 1
    assert code == EXIT_OK


def test_closed_flag_keeps_the_reference_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--figures-derivations closed flags the same figure; --fail-on flagged then exits 1."""
    path = _traces(tmp_path, (ASSETS, "The figure grew 14.16% year over year."))
    code, report = _check_json(capsys, "--fail-on", "flagged", "--figures-derivations", "closed", path)
    (attributes,) = _figures_attributes(report)
    assert attributes["shapecheck.figures.unsupported"] == ["14.16%"]
    assert code == EXIT_FLAGGED


def test_coincidence_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--figures-coincidence 0 infers nothing."""
    path = _traces(tmp_path, (ASSETS, "The figure grew 14.16% year over year."))
    _, report = _check_json(capsys, "--figures-coincidence", "0", path)
    (attributes,) = _figures_attributes(report)
    assert attributes["shapecheck.figures.inferred"] == 0


@pytest.mark.parametrize("value", ["1.5", "-0.1", "nan"])
def test_bad_coincidence_is_a_usage_error(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A p outside [0, 1] is a usage error naming the flag."""
    path = _traces(tmp_path, (ASSETS, "Total assets grew 14.16%."))
    assert main(["check", "--embedder", "hashing", "--figures-coincidence", value, path]) == EXIT_USAGE
    assert "--figures-coincidence" in capsys.readouterr().err


def test_table_lists_the_inferred_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal output shows the derivation entry and counts inferred figures."""
    path = _traces(tmp_path, (ASSETS, "The figure grew 14.16% year over year."))
    assert main(["check", "--embedder", "hashing", path]) == EXIT_OK
    output = capsys.readouterr().out
    assert "percent-change" in output
    assert "1 inferred" in output


def test_overflowing_result_does_not_cost_the_batch_its_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Rows whose sum overflows beside an invented figure elsewhere: --fail-on flagged still exits 1."""
    path = _traces(
        tmp_path,
        ([{"x": 1e308}, {"x": 1e308}], "The pools hold 12.5 TB."),
        (ASSETS, "Total assets reached 9,999.9 this year."),
    )
    code, report = _check_json(capsys, "--fail-on", "flagged", path)
    unsupported = sorted(
        attributes["shapecheck.figures.unsupported"] for attributes in _figures_attributes(report)
    )
    assert unsupported == [["12.5 TB"], ["9,999.9"]]
    assert code == EXIT_FLAGGED


def test_serve_takes_the_same_flags() -> None:
    """serve parses --figures-derivations and --figures-coincidence like check."""
    from otel_shapecheck.cli._main import _parser

    arguments = _parser().parse_args(
        [
            "serve",
            "--forward",
            "127.0.0.1:4317",
            "--figures-derivations",
            "closed",
            "--figures-coincidence",
            "0.05",
        ]
    )
    assert (arguments.figures_derivations, arguments.figures_coincidence) == ("closed", 0.05)

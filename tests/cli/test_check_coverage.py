"""``check`` on exports that hold nothing to read: an empty export, and runs in which no model call was seen.

Spans come from the real SDK, are exported as OTLP/JSON and read back by the real command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_shapecheck.cli._main import main
from otel_shapecheck.otlp._jsonl import write_spans_jsonl


@pytest.mark.parametrize("document", ["{}", '{"resourceSpans": []}', "{}\n{}\n"])
def test_an_empty_export_is_zero_spans_and_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: str
) -> None:
    """Proto3 JSON writes an export without spans as ``{}``: a valid empty export, not a foreign shape."""
    path = tmp_path / "empty.json"
    path.write_text(document)
    assert main(["check", "--embedder", "hashing", "--json", str(path)]) == 0
    report: Any = json.loads(capsys.readouterr().out)
    assert report["summary"]["spans"] == 0
    assert report["spans"] == [] and report["runs"] == []


def test_an_empty_export_prints_zero_spans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal report says 0 spans for ``{}``."""
    path = tmp_path / "empty.json"
    path.write_text("{}")
    assert main(["check", "--embedder", "hashing", str(path)]) == 0
    assert "0 spans" in capsys.readouterr().out


def _export(tmp_path: Path, *, with_model_call: bool) -> Path:
    """Two runs through the real SDK, exported as OTLP/JSON: one whose framework wrote no model-call
    span (chains with Python reprs), and, with ``with_model_call``, one read whole."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("framework")
    with tracer.start_as_current_span("silent agent", attributes={"openinference.span.kind": "AGENT"}):
        chain = {"openinference.span.kind": "CHAIN", "input.value": "Message(role='user', ...)"}
        tracer.start_span("Chain.run", attributes=chain).end()
    if with_model_call:
        with tracer.start_as_current_span(
            "invoke_agent ops", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}])
            question = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Hi?"}]}])
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": question,
                "gen_ai.output.messages": answer,
            }
            tracer.start_span("chat", attributes=attributes).end()
    provider.shutdown()
    path = tmp_path / "traces.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        write_spans_jsonl(exporter.get_finished_spans(), stream)
    return path


def test_runs_are_counted_by_coverage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--json`` counts runs by coverage and gives each run its llm_calls and coverage."""
    assert (
        main(["check", "--embedder", "hashing", "--json", str(_export(tmp_path, with_model_call=True))]) == 0
    )
    report: Any = json.loads(capsys.readouterr().out)
    assert report["summary"]["runs"]["coverage"] == {"none": 1, "partial": 0, "full": 1}
    by_name = {run["name"]: run["summary"] for run in report["runs"]}
    assert (by_name["silent agent"]["llm_calls"], by_name["silent agent"]["coverage"]) == (0, "none")
    assert (by_name["invoke_agent ops"]["llm_calls"], by_name["invoke_agent ops"]["coverage"]) == (1, "full")


def test_a_run_without_a_model_call_gets_a_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal report counts runs by coverage and names the run in which nothing was read."""
    assert main(["check", "--embedder", "hashing", str(_export(tmp_path, with_model_call=True))]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "coverage: 1 full, 1 none" in out
    assert "Run silent agent" in out and "no model call was read (coverage none)" in out
    assert "Run invoke_agent ops" not in out


@pytest.mark.parametrize("with_model_call", [True, False])
def test_fail_on_unchecked_exits_1_when_a_run_was_not_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], with_model_call: bool
) -> None:
    """``--fail-on unchecked``: any run with coverage none fails; ``never`` and ``flagged`` do not."""
    path = str(_export(tmp_path, with_model_call=with_model_call))
    assert main(["check", "--embedder", "hashing", "--json", "--fail-on", "unchecked", path]) == 1
    assert main(["check", "--embedder", "hashing", "--json", "--fail-on", "flagged", path]) == 0
    assert main(["check", "--embedder", "hashing", "--json", path]) == 0
    capsys.readouterr()


def test_fail_on_unchecked_passes_when_every_run_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs that each had a model call read pass ``--fail-on unchecked``; so does an empty export."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("framework")
    with tracer.start_as_current_span(
        "invoke_agent ops", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}])
        tracer.start_span(
            "chat", attributes={"gen_ai.operation.name": "chat", "gen_ai.output.messages": answer}
        ).end()
    provider.shutdown()
    path = tmp_path / "read.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        write_spans_jsonl(exporter.get_finished_spans(), stream)
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    for given in (path, empty):
        assert main(["check", "--embedder", "hashing", "--json", "--fail-on", "unchecked", str(given)]) == 0
    capsys.readouterr()


def test_calls_without_output_are_counted_as_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A call with menu and input but no output is a tool-choice skip (no-output), listed, not a choice."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    menu = json.dumps([{"name": "get_capacity", "description": "Get a cluster's usable storage"}])
    question = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Storage in Lyon?"}]}])
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.tool.definitions": menu,
        "gen_ai.input.messages": question,
    }
    provider.get_tracer("framework").start_span("chat", attributes=attributes).end()
    provider.shutdown()
    path = tmp_path / "traces.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        write_spans_jsonl(exporter.get_finished_spans(), stream)
    assert main(["check", "--embedder", "hashing", "--json", str(path)]) == 0
    report = json.loads(capsys.readouterr().out)
    tool_choice = report["summary"]["tool_choice"]
    assert (tool_choice["skipped"], tool_choice["scored"], tool_choice["choices"]) == (1, 0, 0)
    (span,) = report["spans"]
    assert span["attributes"]["shapecheck.tool_choice.skipped"] == "no-output"
    assert main(["check", "--embedder", "hashing", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "output was not captured" in out and "answered without invoking a tool" not in out
    assert "1 skipped" in out

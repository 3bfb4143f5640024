"""``check`` on shapes other emitters write: input cut by a length limit or hidden, a tool result as text,
hostile index keys, attempt numbers written as doubles or strings. Spans come from the real SDK with
the attributes those emitters set, exported as OTLP/JSON and read back by the real command."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.types import AttributeValue

from otel_shapecheck.cli._exit import EXIT_FLAGGED
from otel_shapecheck.cli._main import main
from otel_shapecheck.otlp._jsonl import write_spans_jsonl

ANSWER = "Cluster A uses 1484.1 TB of 2429.0 TB."
RESULT = json.dumps({"used_tb": 1484.1, "total_tb": 2429.0})
TOOLS = json.dumps([{"type": "function", "name": "get_capacity", "description": "Get a cluster's capacity"}])
USER = {"role": "user", "parts": [{"type": "text", "content": "How full is cluster A?"}]}
ASK = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "get_capacity", "arguments": {}}],
}
OUTPUT = json.dumps(
    [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}]
)

Spans = list[tuple[str, Mapping[str, AttributeValue]]]


def _check(tmp_path: Path, capsys: pytest.CaptureFixture[str], spans: Spans, *flags: str) -> tuple[int, Any]:
    """Record ``spans`` (name, attributes; the first is the others' parent) and ``check --json`` them."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("field-shapes")
    (root_name, root_attributes), *children = spans
    with tracer.start_as_current_span(root_name, attributes=root_attributes):
        for name, attributes in children:
            tracer.start_span(name, attributes=attributes).end()
    provider.shutdown()
    path = tmp_path / "traces.jsonl"
    with path.open("w", encoding="utf-8") as stream:
        write_spans_jsonl(exporter.get_finished_spans(), stream)
    code = main(["check", "--embedder", "hashing", "--json", *flags, str(path)])
    return code, json.loads(capsys.readouterr().out)


def _figures(report: Any, name: str | None = None) -> dict[str, Any]:
    """The figures attributes of the one span (named ``name``, when given) that has them."""
    (attributes,) = [
        span["attributes"]
        for span in report["spans"]
        if any(key.startswith("shapecheck.figures.") for key in span["attributes"])
        and name in (None, span["name"])
    ]
    return dict(attributes)


def _chat(input_messages: str) -> tuple[str, Mapping[str, AttributeValue]]:
    return "chat gpt-4o", {
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": input_messages,
        "gen_ai.output.messages": OUTPUT,
        "gen_ai.tool.definitions": TOOLS,
    }


def _tool_message(message: dict[str, Any]) -> str:
    return json.dumps([USER, ASK, message])


def test_input_cut_by_a_length_limit_is_skipped_not_flagged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Input messages cut unreadable (an attribute length limit cuts them first): the results they held
    are unknown, so the answer is skipped as no-content instead of checked against nothing."""
    whole = _tool_message(
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "call_1", "response": RESULT + " " * 4000}],
        }
    )
    _, report = _check(tmp_path, capsys, [("invoke_agent ops", {}), _chat(whole)])
    assert _figures(report)["shapecheck.figures.unsupported"] == []
    _, report = _check(tmp_path, capsys, [("invoke_agent ops", {}), _chat(whole[:2048])])
    figures = _figures(report)
    assert figures["shapecheck.figures.skipped"] == "no-content"
    assert "shapecheck.figures.unsupported" not in figures


@pytest.mark.parametrize(
    "message",
    [
        {"role": "tool", "parts": [{"type": "text", "content": RESULT}], "tool_call_id": "call_1"},
        {"role": "tool", "content": RESULT, "tool_call_id": "call_1"},
    ],
    ids=["text-part", "content-field"],
)
def test_a_tool_message_with_text_is_a_tool_result(
    message: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A role-tool message carrying its result as text is read as the result, as in every other convention."""
    _, report = _check(tmp_path, capsys, [("invoke_agent ops", {}), _chat(_tool_message(message))])
    figures = _figures(report)
    assert figures["shapecheck.figures.unsupported"] == []
    assert figures["shapecheck.figures.carried"] == 2


def _openinference_llm(**extra: AttributeValue) -> tuple[str, Mapping[str, AttributeValue]]:
    tool = {
        "type": "function",
        "function": {"name": "get_capacity", "description": "Get a cluster's capacity"},
    }
    return "ChatCompletion", {
        "openinference.span.kind": "LLM",
        "llm.tools.0.tool.json_schema": json.dumps(tool),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": ANSWER,
        **extra,
    }


@pytest.mark.parametrize(
    "hidden",
    [
        {"input.value": "__REDACTED__"},
        {},
        {
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "__REDACTED__",
            "llm.input_messages.1.message.role": "tool",
            "llm.input_messages.1.message.content": "__REDACTED__",
        },
    ],
    ids=["hide-inputs", "hide-input-messages", "hide-input-text"],
)
def test_openinference_hidden_input_is_skipped_not_flagged(
    hidden: dict[str, AttributeValue], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """OPENINFERENCE_HIDE_* masks are not content: with the input hidden the answer is not checked."""
    _, report = _check(
        tmp_path, capsys, [("agent", {"openinference.span.kind": "AGENT"}), _openinference_llm(**hidden)]
    )
    figures = _figures(report)
    assert figures["shapecheck.figures.skipped"] == "no-content"


def test_openinference_hidden_output_is_no_answer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """OPENINFERENCE_HIDE_OUTPUT_TEXT: the masked answer is not an answer with no figures in it."""
    llm = _openinference_llm(**{"input.value": "How full is cluster A?"})
    name, attributes = llm
    masked = {**attributes, "llm.output_messages.0.message.content": "__REDACTED__"}
    _, report = _check(tmp_path, capsys, [("agent", {"openinference.span.kind": "AGENT"}), (name, masked)])
    assert _figures(report)["shapecheck.figures.skipped"] == "no-content"


def test_a_unicode_digit_index_costs_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``llm.input_messages.².…`` is no index: it costs no other span of the trace its verdict."""
    hostile = (
        "ChatCompletion",
        {"openinference.span.kind": "LLM", "llm.input_messages.².message.role": "user"},
    )
    flagged = _chat(_tool_message({"role": "tool", "parts": [{"type": "text", "content": "{}"}]}))
    code, report = _check(
        tmp_path, capsys, [("invoke_agent ops", {}), hostile, flagged], "--fail-on", "flagged"
    )
    assert _figures(report, "chat gpt-4o")["shapecheck.figures.unsupported"] == ["1484.1 TB", "2429.0 TB"]
    assert code == EXIT_FLAGGED


@pytest.mark.parametrize("attempt", [1, 1.0, "1"], ids=["int", "double", "string"])
def test_attempt_numbers_are_read_like_row_counts(
    attempt: AttributeValue, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An attempt written as ``1.0`` or ``"1"`` (JSON and other languages' emitters) still counts."""
    analyst = ("analyst findings", {"shapecheck.analyst.id": "findings"})
    first = (
        "analyst findings attempt",
        {
            "shapecheck.analyst.id": "findings",
            "shapecheck.analyst.attempt": attempt,
            "shapecheck.rows.emitted": 4,
            "shapecheck.rows.accepted": 0,
        },
    )
    _, report = _check(tmp_path, capsys, [analyst, first])
    assert report["summary"]["conformance"]["analysts"] == 1
    assert report["summary"]["conformance"]["collapsed"] == 1


def test_a_reader_failing_on_one_span_costs_only_that_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fault injection: should a convention reader raise on some span, the trace's other spans keep
    their verdicts and the gate still fails on the flagged answer."""
    from otel_shapecheck.readers import _read
    from otel_shapecheck.readers._classify import Convention

    def broken(attributes: Mapping[str, object]) -> Any:
        raise RuntimeError("a reader bug")

    readers = tuple(
        (flag, broken if flag is Convention.OPENINFERENCE else read) for flag, read in _read._CONTENT_READERS
    )
    monkeypatch.setattr(_read, "_CONTENT_READERS", readers)
    hostile = (
        "ChatCompletion",
        {"openinference.span.kind": "LLM", "llm.input_messages.0.message.role": "user"},
    )
    flagged = _chat(_tool_message({"role": "tool", "parts": [{"type": "text", "content": "{}"}]}))
    code, report = _check(
        tmp_path, capsys, [("invoke_agent ops", {}), hostile, flagged], "--fail-on", "flagged"
    )
    assert _figures(report, "chat gpt-4o")["shapecheck.figures.unsupported"] == ["1484.1 TB", "2429.0 TB"]
    assert code == EXIT_FLAGGED

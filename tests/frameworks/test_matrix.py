"""The framework matrix: real agent frameworks' telemetry, through the live processor and through ``check``.

Every row is a real framework run against the scripted server (``tests/fixtures/generate_frameworks.py``
ran it in the framework's own pinned environment and committed the export and the tape). The scenario
(``tests/fixtures/frameworks/scenario.py``): a menu with two near-identical usage tools and two unrelated
ones, a tool result with rows of numbers, an answer stating one carried, one derived and one invented
figure. Each row asserts that the tool-choosing call is scored (where the telemetry has a menu at all),
that the answer's figures verdict names only the invented figure, the exact numbers of evaluated,
flagged and duplicate spans, the run summary on the agent span (where the framework writes one) with
how much of the run was read (``shapecheck.run.coverage``), and that ``check`` over the export gives the
live processor's verdicts and runs. Every row is also checked in fresh processes under several
``PYTHONHASHSEED`` values, which must give the same verdict attributes bit for bit.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan

import otel_shapecheck
from otel_shapecheck._attributes import (
    DUPLICATE_OF,
    FIGURES_DERIVATIONS,
    FIGURES_SKIPPED,
    FIGURES_UNSUPPORTED,
    FIGURES_UNSUPPORTED_COUNT,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_MENU_SOURCE,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli._main import main
from otel_shapecheck.cli._report import json_report
from otel_shapecheck.otlp._files import parse_telemetry
from otel_shapecheck.pipeline._log_processor import ShapecheckLogRecordProcessor
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
sys.path.insert(0, str(FIXTURES))

import scenario  # noqa: E402


@dataclass(frozen=True)
class Row:
    """One framework run and what it must give."""

    framework: str
    mode: str
    flagged: int = 2
    """Spans flagged: the narrow choice between the near-identical tools, and the invented figure."""
    duplicates: int = 0
    menu_source: str | None = "span"
    """Where the choosing call's menu comes from; ``None``: the telemetry records no menu at all."""
    answer_tool: bool = False
    """The answer arrives through an output tool (its tool choice is skipped as ``answer-tool``)."""
    run: str | None = None
    """The name of the run's agent span (the outermost agent span); ``None``: the telemetry has none."""
    choice_recorded: bool = True
    """The choosing call's output records its tool calls; ``False``: the telemetry writes them only as
    text, so that call reads as a reply with no figures and no verdict: one span evaluated, no choice."""
    content_on_span: bool = True
    """The model calls' content is on their spans; ``False``: only in log records, so the verdict leaves
    the figures themselves (``FIGURES_UNSUPPORTED``, ``FIGURES_DERIVATIONS``) off the span, counts kept."""
    tool_prefix: str = ""
    """What the framework puts before a tool's name (Semantic Kernel: ``<plugin>-``), as the generator's
    ``Mode`` scripted it."""
    figures_skipped: str | None = None
    """Why the answer's figures are not checked (``shapecheck.figures.skipped``); ``None``: they are, and
    only the invented one is unsupported."""

    @property
    def id(self) -> str:
        return f"{self.framework}:{self.mode}"

    @property
    def evaluated(self) -> int:
        """Spans evaluated: the choosing call (where its choice is recorded) and the answering call."""
        return 2 if self.choice_recorded else 1

    @property
    def coverage(self) -> str:
        """How much of the run the checks read (``shapecheck.run.coverage``): a call skipped for its
        missing menu makes it partial, and so do tools that ran when no call was read choosing one."""
        return "partial" if self.menu_source is None else "full"


_PYDANTIC_AI = "invoke_agent agent"
_OPENAI_AGENTS = "Agent workflow"  # OpenInference AGENT, above the named AGENT span "storage-ops"
_LANGGRAPH = "invoke_agent LangGraph"  # above Traceloop's workflow span, itself an invoke_agent
_SMOLAGENTS = "ToolCallingAgent.run"
_STRANDS = "invoke_agent Strands Agents"
_ADK = "invoke_agent storage_ops"
_AGNO = "storage_ops.run"
_AUTOGEN = "invoke_agent storage_ops"  # autogen-core's own agent span over OpenInference's LLM spans
_CREWAI = "Storage operations assistant._execute_core"  # OpenInference AGENT, under the crew's CHAIN
_OTEL_OPENAI_AGENTS = "Agent workflow"  # the instrumentation's invoke_agent span for the SDK's trace
_SEMANTIC_KERNEL = "invoke_agent storage_ops"  # the ChatCompletionAgent's span, its tools' definitions on it
_AGENT_FRAMEWORK = "invoke_agent storage_ops"
_APPLICATION = "invoke_agent storage-ops"  # the row's own GenAI agent span around its tool loop

ROWS = [
    Row("pydantic_ai", "chat", run=_PYDANTIC_AI),
    Row("pydantic_ai", "responses", answer_tool=True, run=_PYDANTIC_AI),
    Row("pydantic_ai", "stream", run=_PYDANTIC_AI),
    Row("openai_agents", "responses", run=_OPENAI_AGENTS),
    Row("openai_agents", "responses_stream", run=_OPENAI_AGENTS),
    # The chat-completions path of openinference-instrumentation-openai-agents records no tool
    # definitions anywhere (not on the LLM span, not on the agent span): no-menu is the honest verdict.
    Row("openai_agents", "chat", flagged=1, menu_source=None, run=_OPENAI_AGENTS),
    Row("openai_agents", "chat_stream", flagged=1, menu_source=None, run=_OPENAI_AGENTS),
    # OpenInference's LangChain and LlamaIndex instrumentations write CHAIN spans only: no agent span.
    Row("langchain", "openinference"),
    Row("langchain", "traceloop", run=_LANGGRAPH),
    Row("langchain", "both", duplicates=2, run=_LANGGRAPH),
    Row("langchain", "both_stream", duplicates=2, run=_LANGGRAPH),
    Row("llama_index", "chat"),
    Row("llama_index", "parallel"),
    Row("smolagents", "chat", answer_tool=True, run=_SMOLAGENTS),
    Row("smolagents", "stream", answer_tool=True, run=_SMOLAGENTS),
    # strands' default and attributes-only modes record only the tools' names (gen_ai.agent.tools) on the
    # agent span: the choice is scored on names, and the hashing embedder finds it clear there.
    Row("strands", "default", flagged=1, menu_source="ancestor", run=_STRANDS),
    Row("strands", "latest", menu_source="ancestor", run=_STRANDS),
    Row("strands", "attributes", flagged=1, menu_source="ancestor", run=_STRANDS),
    Row("logfire", "openai", run=_APPLICATION),
    # The streamed response is a second span (input, menu and output) beside the request span (input and
    # menu only), under the agent span's context carried across as a remote parent: each pair is one call,
    # the request span its duplicate.
    Row("logfire", "openai_stream", duplicates=2, run=_APPLICATION),
    Row("logfire", "pydantic_ai", run=_PYDANTIC_AI),
    # google-adk's schema 1: each model call is a call_llm span (ADK's request and response JSON) over a
    # generate_content span of the same call that carries no content (its events say "<elided>"): one
    # call, the content-free span its duplicate.
    Row("google_adk", "legacy", duplicates=2, run=_ADK),
    Row("google_adk", "default", run=_ADK),
    # openai-v2 2.4b0 records no tool definitions (gen_ai.tool.definitions) under the latest conventions.
    Row("openai_v2", "latest", flagged=1, menu_source=None, run=_APPLICATION),
    Row("openai_v2", "latest_stream", flagged=1, menu_source=None, run=_APPLICATION),
    Row("agno", "chat", run=_AGNO),
    Row("agno", "stream", run=_AGNO),
    Row("autogen", "chat", run=_AUTOGEN),
    Row("autogen", "stream", run=_AUTOGEN),
    Row("crewai", "chat", run=_CREWAI),
    Row("crewai", "stream", run=_CREWAI),
    # opentelemetry-instrumentation-openai-agents-v2 writes no tool definitions, and writes the model's
    # tool calls only as a text part holding their Python repr (`ResponseFunctionToolCall(...)` on the
    # Responses path, the message dict's repr on the chat path), never as `tool_call` parts: the choosing
    # call reads as a reply with no figures (no verdict); the answer is read, its basis from the
    # execute_tool spans (the Responses path's input messages drop the calls and their results). Tools
    # ran and no call was read choosing one: the run reads partial, not clean.
    *(
        Row(
            "openai_agents_v2",
            mode,
            flagged=1,
            menu_source=None,
            run=_OTEL_OPENAI_AGENTS,
            choice_recorded=False,
        )
        for mode in ("responses", "chat", "responses_stream")
    ),
    # Semantic Kernel's chat spans carry neither content nor menu: the content is in its log records
    # (per-message events), the menu on the invoke_agent span, and its tools are named <plugin>-<function>.
    # Content kept off the chat spans is not quoted back on them: the figures are counted there, not listed.
    *(
        Row(
            "semantic_kernel",
            mode,
            menu_source="ancestor",
            run=_SEMANTIC_KERNEL,
            content_on_span=False,
            tool_prefix="storage-",
        )
        for mode in ("chat", "stream")
    ),
    # openinference-instrumentation-haystack 0.1.46 writes no llm.tools.* and no content for the tool
    # results it lists in llm.input_messages (role "tool" only): the menu and the results are in
    # input.value as Python reprs of Haystack's Tool and ChatMessage only. The choice is skipped as
    # no-menu, the answer's figures as no-results; the Agent's own span is a CHAIN, no run.
    Row("haystack", "chat", flagged=0, menu_source=None, figures_skipped="no-results"),
    Row("haystack", "stream", flagged=0, menu_source=None, figures_skipped="no-results"),
    # The chat spans carry no gen_ai.tool.definitions (the framework builds their attributes without the
    # request's options): the menu is the invoke_agent span's.
    Row("agent_framework", "chat", menu_source="ancestor", run=_AGENT_FRAMEWORK),
    Row("agent_framework", "stream", menu_source="ancestor", run=_AGENT_FRAMEWORK),
]


def _paths(row: Row) -> tuple[Path, Path, Path]:
    prefix = FIXTURES / row.framework / row.mode
    return (Path(f"{prefix}.spans.json"), Path(f"{prefix}.logs.json"), Path(f"{prefix}.tape.json"))


def _load(row: Row) -> tuple[dict[str, ReadableSpan], list[ReadWriteLogRecord], list[list[Any]]]:
    spans_path, logs_path, tape_path = _paths(row)
    spans = parse_telemetry(spans_path.read_bytes(), str(spans_path)).spans
    logs = parse_telemetry(logs_path.read_bytes(), str(logs_path)).log_records
    tape = json.loads(tape_path.read_text())["tape"]
    return {format(span.context.span_id, "016x"): span for span in spans}, logs, tape


def _live(row: Row) -> list[ReadableSpan]:
    """The spans as the live processor forwards them, fed in the order the real providers called it.

    A start hands over the exported span (its final attributes): the processor reads a live ancestor's
    attributes only when a descendant ends, by when the frameworks here have set them.
    """
    spans, logs, tape = _load(row)
    records = {
        (
            format(r.log_record.span_id or 0, "016x"),
            r.log_record.event_name,
            str(r.log_record.timestamp or 0),
        ): r
        for r in logs
    }
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected,
        checks=build_checks("hashing"),
        options=ProcessorOptions(schedule_delay_millis=10, max_evaluation_batch_size=1),
    )
    content = ShapecheckLogRecordProcessor(processor)
    try:
        for entry in tape:
            if entry[0] == "start":
                processor.on_start(spans[entry[1]])  # type: ignore[arg-type]
            elif entry[0] == "end":
                processor.on_end(spans[entry[1]])
            else:
                content.on_emit(records[(entry[1], entry[2], entry[3])])
        assert processor.force_flush(30_000)
    finally:
        processor.shutdown()
    counts = processor.counts()
    assert counts.evaluated + counts.duplicates == counts.held, counts
    assert counts.held + counts.runs + counts.forwarded_untouched == counts.seen, counts
    return collected.spans


def _checked(row: Row, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    spans_path, logs_path, _ = _paths(row)
    assert main(["check", "--json", "--embedder", "hashing", str(spans_path), str(logs_path)]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


@pytest.fixture(autouse=True)
def _seed_scoring(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rows' flag counts are the seed rule's on the hashing embedder, live and in ``check`` alike.

    The matrix is about reading each framework's telemetry. Under the calibrated default the scenario's
    near-twin choice has a hashing margin of 0.018, clear of its 0.01 threshold (calibrated on MiniLM,
    where the same choice is narrow at 0.0099); the scorings themselves are tested and measured elsewhere.
    """
    monkeypatch.setenv("OTEL_SHAPECHECK_TOOL_CHOICE_SCORING", "seed")


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_row(row: Row, capsys: pytest.CaptureFixture[str]) -> None:
    """The row's verdicts, exact counts, and the same verdicts live and from ``check``."""
    live_spans = _live(row)
    live = json_report(live_spans)
    offline = _checked(row, capsys)
    assert offline["spans"] == live["spans"], "check over the export must give the live verdicts"
    assert offline["summary"] == live["summary"]
    assert offline["runs"] == live["runs"], "check must summarise the runs as the live processor does"
    _assert_run(row, live["runs"])

    summary = live["summary"]
    assert summary["evaluated"] == row.evaluated, "the choosing and the answering call, each evaluated once"
    assert summary["flagged"] == row.flagged
    assert summary["duplicates"] == row.duplicates
    duplicates = [span for span in live_spans if DUPLICATE_OF in (span.attributes or {})]
    evaluated_ids = {entry["span_id"] for entry in live["spans"]}
    assert all((span.attributes or {})[DUPLICATE_OF] in evaluated_ids for span in duplicates)

    choosing, answering = _choosing_and_answering(
        live["spans"], row.tool_prefix + scenario.CHOSEN, row.choice_recorded
    )
    if choosing is None:
        assert summary["tool_choice"]["llm_calls_with_tools"] == 0
    elif row.menu_source is None:
        assert choosing["attributes"][TOOL_CHOICE_SKIPPED] == "no-menu"
    else:
        assert TOOL_CHOICE_SKIPPED not in choosing["attributes"], "the tool-choosing call must be scored"
        assert choosing["attributes"][TOOL_CHOICE_MENU_SOURCE] == row.menu_source
    expected_skip = "answer-tool" if row.answer_tool else "nothing-chosen"
    assert answering["attributes"].get(TOOL_CHOICE_SKIPPED, "nothing-chosen") == expected_skip

    figures = answering["attributes"]
    if row.figures_skipped is not None:
        assert figures[FIGURES_SKIPPED] == row.figures_skipped and FIGURES_UNSUPPORTED not in figures
        assert summary["figures"]["answers"] == 0 and summary["figures"]["skipped"] == 1
        _assert_coverage(row, live["runs"])
        return
    if row.content_on_span:
        assert figures[FIGURES_UNSUPPORTED] == [scenario.INVENTED]
        assert any(d.startswith("812.5 = column-sum") for d in figures[FIGURES_DERIVATIONS])
    else:
        assert FIGURES_UNSUPPORTED not in figures and FIGURES_DERIVATIONS not in figures
        assert figures[FIGURES_UNSUPPORTED_COUNT] == 1 and figures["shapecheck.figures.computed"] == 1
    assert figures["shapecheck.figures.carried"] >= 1
    assert summary["figures"]["answers"] == 1 and summary["figures"]["skipped"] == 0
    _assert_coverage(row, live["runs"])


def _assert_run(row: Row, runs: list[dict[str, Any]]) -> None:
    """The outermost agent span alone carries the run: both evaluated calls, duplicates counted once."""
    if row.run is None:
        assert runs == []
        return
    assert [run["name"] for run in runs] == [row.run]
    counts = runs[0]["summary"]
    assert (counts["evaluated"], counts["flagged"], counts["duplicates"]) == (
        row.evaluated,
        row.flagged,
        row.duplicates,
    )
    assert (counts["answers_checked"], counts["figures_unsupported"], counts["figures_computed"]) == (1, 1, 1)
    assert counts["choices"] == int(row.choice_recorded) and counts["incomplete"] is False
    assert runs[0]["flagged"] is True


def _assert_coverage(row: Row, runs: list[dict[str, Any]]) -> None:
    """The run says how much of it was read: both model calls seen, and the coverage of the row."""
    if row.run is None:
        return
    counts = runs[0]["summary"]
    assert counts["llm_calls"] >= 2, "both model calls of the scenario were seen"
    assert counts["coverage"] == row.coverage


def _choosing_and_answering(
    entries: list[dict[str, Any]], chosen: str, choice_recorded: bool = True
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    choosing = [e for e in entries if chosen in e["attributes"].get(TOOL_CHOICE_CHOSEN, ())]
    answers = (FIGURES_UNSUPPORTED_COUNT, FIGURES_SKIPPED)
    answering = [e for e in entries if any(key in e["attributes"] for key in answers)]
    assert len(choosing) == int(choice_recorded) and len(answering) == 1, entries
    return (choosing[0] if choosing else None), answering[0]


_HASH_SEEDS = ("0", "1", "2026")
"""``PYTHONHASHSEED`` values the rows are checked under, each in a process of its own."""
_SCORINGS = ("seed", "calibrated")
"""Both tool-choice scorings: the calibrated one adds the lexical score, summed over sets of terms."""
_CHECK_EVERY_ROW = """
import contextlib, io, json, os, sys
from otel_shapecheck.cli._main import main
reports = {}
for scoring in json.loads(sys.argv[2]):
    os.environ["OTEL_SHAPECHECK_TOOL_CHOICE_SCORING"] = scoring
    for row_id, spans, logs in json.loads(sys.argv[1]):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["check", "--json", "--embedder", "hashing", spans, logs])
        reports[f"{scoring}/{row_id}"] = {"exit": code, "report": json.loads(out.getvalue())}
print(json.dumps(reports))
"""


@pytest.fixture(scope="module")
def reports_by_seed() -> dict[str, dict[str, Any]]:
    """Every row's ``check --json`` report from one fresh process per hash seed (the processes run side
    by side; each checks every row, so a process starts once per seed, not once per row)."""
    rows = json.dumps([(row.id, *map(str, _paths(row)[:2])) for row in ROWS])
    root = str(Path(otel_shapecheck.__file__).resolve().parent.parent)
    processes = {}
    for seed in _HASH_SEEDS:
        env = {
            **os.environ,
            "PYTHONHASHSEED": seed,
            "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH")))),
        }
        command = [sys.executable, "-c", _CHECK_EVERY_ROW, rows, json.dumps(_SCORINGS)]
        processes[seed] = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    reports = {}
    for seed, process in processes.items():
        out, _ = process.communicate(timeout=600)
        assert process.returncode == 0, f"checking the rows under PYTHONHASHSEED={seed} failed"
        reports[seed] = json.loads(out)
    return reports


@pytest.mark.parametrize("scoring", _SCORINGS)
@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_row_is_deterministic(
    row: Row,
    scoring: str,
    reports_by_seed: dict[str, dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same export gives the same verdict attributes, bit for bit, under every hash seed."""
    monkeypatch.setenv("OTEL_SHAPECHECK_TOOL_CHOICE_SCORING", scoring)
    here = _checked(row, capsys)  # this process: its own seed, random unless the environment fixes it
    for seed, reports in reports_by_seed.items():
        checked = reports[f"{scoring}/{row.id}"]
        assert checked["exit"] == 0
        assert checked["report"]["spans"] == here["spans"], f"verdicts differ under PYTHONHASHSEED={seed}"
        assert checked["report"]["runs"] == here["runs"], f"runs differ under PYTHONHASHSEED={seed}"
        assert checked["report"]["summary"] == here["summary"]


def test_every_generated_row_is_checked() -> None:
    """Each fixture the generator wrote has a row here, so no framework run goes unchecked."""
    written = {
        f"{path.parent.name}:{path.name.removesuffix('.spans.json')}"
        for path in FIXTURES.glob("*/*.spans.json")
    }
    assert written == {row.id for row in ROWS}

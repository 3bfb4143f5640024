"""The JavaScript matrix: real Node agents exporting to a real ``otel-shapecheck serve``.

Each row runs ``tests/js/agent.mjs`` (one Node process, the pinned packages of ``tests/js/package.json``,
installed by ``make test``) against the scripted server, playing the Python matrix's scenario
(``tests/fixtures/frameworks/scenario.py``), and exports with one of the standard OpenTelemetry JS
exporters (OTLP/HTTP protobuf, OTLP/HTTP JSON, gRPC) to one gateway for the module, which forwards to a
real OTLP receiver. Each row asserts what the Python rows do: the tool-choosing call is scored, the
answer's figures verdict names only the invented figure, exact counts, the run summary on the run's root
span, and that ``check`` over what the agent exported gives what the gateway forwarded.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from gateway.serve_process import ServeProcess
from google.protobuf import json_format
from opentelemetry.sdk.trace import ReadableSpan
from otlp_receiver import OTLPReceiver

from otel_shapecheck._attributes import (
    FIGURES_DERIVATIONS,
    FIGURES_UNSUPPORTED,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_MENU_SOURCE,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.cli._main import main
from otel_shapecheck.cli._report import json_report
from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.otlp._files import parse_spans

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "frameworks"
JS_DIR = Path(__file__).resolve().parent.parent / "js"
sys.path.insert(0, str(FIXTURES))

import scenario  # noqa: E402

_SCORING = {"OTEL_SHAPECHECK_TOOL_CHOICE_SCORING": "seed"}
"""The seed rule on the hashing embedder, as in the Python matrix (its ``_seed_scoring`` says why)."""
_AGENT_TIMEOUT_S = 60
_FORWARD_TIMEOUT_S = 30


@dataclass(frozen=True)
class Agent:
    """One Node agent: the AI SDK with a telemetry integration, or the ``openai`` client instrumented."""

    name: str
    runs: dict[str, str]
    """The name of the run's root span, by mode."""
    classified: dict[str, int]
    """The report's ``summary.classified`` the agent's spans give."""


AGENTS = [
    # The AI SDK 6's built-in telemetry (experimental_telemetry), its own ai.* convention.
    Agent(
        "ai-sdk-v6",
        {"generate": "ai.generateText", "stream": "ai.streamText"},
        {"agent:ai-sdk": 1, "llm_call:ai-sdk": 2, "tool_execution:ai-sdk": 1},
    ),
    # The same convention from AI SDK 7, where LegacyOpenTelemetry writes what experimental_telemetry did.
    Agent(
        "ai-sdk-legacy",
        {"generate": "ai.generateText", "stream": "ai.streamText"},
        {"agent:ai-sdk": 1, "llm_call:ai-sdk": 2, "tool_execution:ai-sdk": 1},
    ),
    # @ai-sdk/otel's OpenTelemetry integration: the OTel GenAI convention.
    Agent(
        "ai-sdk-otel",
        {"generate": "invoke_agent gpt-4o-mini", "stream": "invoke_agent gpt-4o-mini"},
        {"agent:genai": 1, "llm_call:genai": 2, "tool_execution:genai": 1},
    ),
    # OpenInference's Vercel span processor over the SDK's own spans: its menu stays in ai.prompt.tools.
    Agent(
        "ai-sdk-openinference",
        {"generate": "ai.generateText storage-ops", "stream": "ai.streamText storage-ops"},
        {"agent:openinference": 1, "llm_call:openinference": 2, "tool_execution:openinference": 1},
    ),
    # The openai client in a hand-written loop under an invoke_agent span, with Traceloop's instrumentation.
    Agent(
        "openai-traceloop",
        {"generate": "invoke_agent storage-ops", "stream": "invoke_agent storage-ops"},
        {"agent:genai": 1, "llm_call:genai": 2},
    ),
]
MODES = ("generate", "stream")
EXPORTERS = ("grpc", "http-proto", "http-json")
ROWS = [(agent, mode, exporter) for agent in AGENTS for mode in MODES for exporter in EXPORTERS]


def _row_id(row: tuple[Agent, str, str]) -> str:
    agent, mode, exporter = row
    return f"{agent.name}:{mode}:{exporter}"


@pytest.fixture(scope="module")
def node() -> str:
    """The Node binary, with the pinned packages installed (``make test`` runs ``npm ci`` in tests/js)."""
    binary = shutil.which("node")
    assert binary is not None, "the JavaScript matrix needs Node.js 20 or later on the PATH"
    assert (JS_DIR / "node_modules" / "ai").is_dir(), "run `make js-deps` (npm ci in tests/js) first"
    return binary


@pytest.fixture(scope="module")
def gateway() -> Iterator[tuple[ServeProcess, OTLPReceiver]]:
    """One gateway for the module, forwarding over gRPC to a real receiver."""
    with OTLPReceiver() as receiver:
        serve = ServeProcess(f"http://{receiver.grpc_endpoint}", None)
        serve.env.update(_SCORING)
        with serve:
            yield serve, receiver


def _script() -> list[ScriptedReply]:
    """The model's side: choose ``volume_usage`` for eu-west, then answer with the three figures."""
    call = ScriptedToolCall(scenario.CHOSEN, {"region": "eu-west"}, call_id="call_usage_1")
    return [
        ScriptedReply(tool_calls=[call], completion_id="scripted-choice"),
        ScriptedReply(text=scenario.ANSWER, completion_id="scripted-answer"),
    ]


_SCENARIO = json.dumps(
    {
        "question": scenario.QUESTION,
        "instructions": scenario.INSTRUCTIONS,
        "tools": scenario.TOOLS,
        "region_parameters": scenario.REGION_PARAMETERS,
        "usage": scenario.USAGE,
    }
)


def _run_agent(node: str, row: tuple[Agent, str, str], serve: ServeProcess, export: Path) -> None:
    agent, mode, exporter = row
    port = serve.ports["grpc" if exporter == "grpc" else "http"]
    with ScriptedOpenAIServer(_script()) as server:
        command = [node, "agent.mjs", agent.name, mode, exporter, f"http://127.0.0.1:{port}"]
        done = subprocess.run(
            [*command, server.base_url, str(export), _SCENARIO],
            cwd=JS_DIR,
            capture_output=True,
            text=True,
            timeout=_AGENT_TIMEOUT_S,
        )
    assert done.returncode == 0, f"the Node agent failed: {done.stdout}\n{done.stderr}"
    assert scenario.ANSWER in done.stdout


def _forwarded(receiver: OTLPReceiver, trace_ids: set[str], count: int) -> list[ReadableSpan]:
    """The spans of ``trace_ids`` the gateway forwarded, once all ``count`` of them arrived."""

    def arrived(r: OTLPReceiver) -> bool:
        return sum(1 for span in r.spans if span.trace_id in trace_ids) >= count

    assert receiver.wait_for(arrived, timeout=_FORWARD_TIMEOUT_S), "the gateway did not forward every span"
    spans = [
        span
        for request in receiver.trace_requests
        for span in parse_spans(json_format.MessageToJson(request).encode(), "forwarded")
    ]
    return [span for span in spans if format(span.context.trace_id, "032x") in trace_ids]


def _checked(export: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["check", "--json", "--embedder", "hashing", str(export)]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report


@pytest.mark.parametrize("row", ROWS, ids=[_row_id(row) for row in ROWS])
def test_row(
    row: tuple[Agent, str, str],
    node: str,
    gateway: tuple[ServeProcess, OTLPReceiver],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The row's verdicts and counts, and ``check`` over the agent's export equal to the gateway's."""
    for name, value in _SCORING.items():
        monkeypatch.setenv(name, value)
    agent, mode, _ = row
    serve, receiver = gateway
    export = tmp_path / "export.json"
    _run_agent(node, row, serve, export)
    exported = parse_spans(export.read_bytes(), str(export))
    trace_ids = {format(span.context.trace_id, "032x") for span in exported}
    forwarded = json_report(_forwarded(receiver, trace_ids, len(exported)))
    offline = _checked(export, capsys)
    assert _by_id(offline["spans"]) == _by_id(forwarded["spans"]), (
        "check must give what the gateway forwarded"
    )
    assert offline["summary"] == forwarded["summary"]
    assert offline["runs"] == forwarded["runs"]

    summary = forwarded["summary"]
    assert summary["classified"] == agent.classified
    assert (summary["spans"], summary["evaluated"], summary["flagged"], summary["duplicates"]) == (
        len(exported),
        2,
        2,
        0,
    ), "one choosing and one answering call; the narrow twin choice and the invented figure flagged"
    choosing, answering = _choosing_and_answering(forwarded["spans"])
    assert TOOL_CHOICE_SKIPPED not in choosing["attributes"], "the tool-choosing call must be scored"
    assert choosing["attributes"][TOOL_CHOICE_MENU_SOURCE] == "span"
    assert answering["attributes"][TOOL_CHOICE_SKIPPED] == "nothing-chosen"
    figures = answering["attributes"]
    assert figures[FIGURES_UNSUPPORTED] == [scenario.INVENTED]
    assert any("812.5 = column-sum" in derivation for derivation in figures[FIGURES_DERIVATIONS])
    assert figures["shapecheck.figures.carried"] >= 1
    _assert_run(agent.runs[mode], forwarded["runs"])


def _by_id(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Report entries in span-id order: the gateway forwards a request's spans as their checks finish."""
    return sorted(entries, key=lambda entry: entry["span_id"])


def _assert_run(name: str, runs: list[dict[str, Any]]) -> None:
    """The run's root span alone carries the run: both evaluated calls, one answer, one invented figure."""
    assert [run["name"] for run in runs] == [name]
    counts = runs[0]["summary"]
    assert (counts["evaluated"], counts["flagged"], counts["duplicates"]) == (2, 2, 0)
    assert (counts["answers_checked"], counts["figures_unsupported"], counts["figures_computed"]) == (1, 1, 1)
    assert counts["choices"] == 1 and counts["incomplete"] is False
    assert runs[0]["flagged"] is True


def _choosing_and_answering(entries: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    choosing = [e for e in entries if scenario.CHOSEN in e["attributes"].get(TOOL_CHOICE_CHOSEN, ())]
    answering = [e for e in entries if FIGURES_UNSUPPORTED in e["attributes"]]
    assert len(choosing) == 1 and len(answering) == 1, entries
    return choosing[0], answering[0]

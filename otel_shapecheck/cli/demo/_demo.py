"""The demo: a scripted agent runs four scenarios on loopback, and the checks judge its telemetry live.

The agent uses the real ``openai`` client, instrumented by ``opentelemetry-instrumentation-genai-openai``
(message content captured on spans), against a scripted OpenAI-compatible server on 127.0.0.1: no
network, no API key. Tool executions are ``execute_tool`` spans from ``opentelemetry-util-genai``, the
analyst runs under the shape-collapse retry wrapper, and :class:`ShapecheckSpanProcessor` is attached to
the tracer provider exactly as an application would attach it. The scenarios:

1. ``storage-ops``: a clear tool choice and an answer whose figures the tool result carries;
2. ``order-support``: a catalog of two near-identical order tools, so the choice margin is narrow;
3. ``capacity-planner``: an answer with one derived figure (a column sum) and one invented figure;
4. ``incident-triage``: an analyst whose first sample comes back in the wrong shape and whose retry
   recovers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletionToolParam
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler
from pydantic import BaseModel
from rich.console import Console

# The agent side uses the package's public API, as an application would.
from otel_shapecheck import (
    EvaluationEventEmitter,
    ShapecheckSpanProcessor,
    validate_rows,
    with_shape_collapse_retry,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli._report import run_entries, summary, verdict_rows
from otel_shapecheck.cli._terminal import print_runs, print_summary, print_verdicts, stdout_console
from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.otlp._counting import CountingSpanExporter
from otel_shapecheck.otlp._endpoints import describe, otlp_log_exporter, otlp_span_exporter
from otel_shapecheck.otlp._jsonl import OtlpJsonLinesLogExporter, OtlpJsonLinesSpanExporter
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor

TRACES_FILE = "traces.jsonl"
"""The enriched spans, as OTLP/JSON Lines, under the demo's output directory."""

EVENTS_FILE = "events.jsonl"
"""The flagged ``gen_ai.evaluation.result`` events, as OTLP/JSON Lines log records."""

_MODEL = "gpt-4o-mini"
_CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_EXPORT_TIMEOUT_S = 3
_FLUSH_TIMEOUT_MILLIS = 30_000

ToolFunction = Callable[[Mapping[str, Any]], Any]


def _tool(name: str, description: str, properties: Mapping[str, str]) -> ChatCompletionToolParam:
    """An OpenAI function-tool definition with string parameters."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {
                    key: {"type": "string", "description": text} for key, text in properties.items()
                },
                "required": list(properties),
            },
        },
    }


STORAGE_TOOLS = [
    _tool(
        "get_volume_usage",
        "Used and free space of one storage volume, in GB, with its usage percentage.",
        {"volume": "volume name"},
    ),
    _tool(
        "get_capacity_report",
        "Usable and raw capacity per site, in terabytes, for capacity planning.",
        {"scope": "which sites to report"},
    ),
    _tool("get_port_errors", "CRC and link error counters of a switch port.", {"port": "switch port"}),
    _tool("open_ticket", "Open a support ticket with a title and description.", {"title": "ticket title"}),
]

ORDER_TOOLS = [
    _tool(
        "get_order_status",
        "Get the shipping status of a customer order by order number.",
        {"order_id": "order number"},
    ),
    _tool(
        "lookup_order",
        "Look up a customer order by order number: items, totals and shipping status.",
        {"order_id": "order number"},
    ),
    _tool(
        "issue_refund",
        "Refund a payment to the customer's original payment method.",
        {"order_id": "order number"},
    ),
]

_TOOL_RESULTS: dict[str, Any] = {
    "get_volume_usage": {"volume": "vol-db-07", "used_gb": 412, "free_gb": 88, "used_pct": 82.4},
    "lookup_order": {"order_id": "48213", "status": "shipped", "carrier": "DHL", "items": 2},
    "get_capacity_report": {
        "rows": [
            {"site": "ams", "usable_tb": 812.5, "raw_tb": 1100},
            {"site": "fra", "usable_tb": 713.8, "raw_tb": 960},
        ]
    },
}


class TriageFinding(BaseModel):
    """One row the incident-triage analyst must emit."""

    component: str
    severity: Literal["low", "medium", "high"]
    summary: str


_TRIAGE_INPUT = (
    "02:14 san-sw-2 port 7: CRC errors rising\n"
    "02:15 array-b: path failover on LUN 12\n"
    "02:21 db-07: write latency above threshold"
)
_COLLAPSED_ROWS = [
    {"part": "san-sw-2", "sev": "HIGH", "text": "CRC errors on port 7"},
    {"part": "array-b", "sev": "MED", "text": "path failover on LUN 12"},
    {"part": "db-07", "sev": "MED", "text": "write latency"},
]
_CONFORMING_ROWS = [
    {"component": "san-sw-2", "severity": "high", "summary": "CRC errors rising on port 7"},
    {"component": "array-b", "severity": "medium", "summary": "path failover on LUN 12"},
    {"component": "db-07", "severity": "medium", "summary": "write latency above threshold"},
]


@dataclass(frozen=True)
class _ToolTurn:
    """One agent turn that may call tools: who asks what, which tools are offered, what the model says."""

    agent: str
    user_text: str
    tools: Sequence[ChatCompletionToolParam]
    replies: Sequence[ScriptedReply]


_TOOL_TURNS = (
    _ToolTurn(
        agent="storage-ops",
        user_text="How full is volume vol-db-07?",
        tools=STORAGE_TOOLS,
        replies=(
            ScriptedReply(tool_calls=[ScriptedToolCall("get_volume_usage", {"volume": "vol-db-07"})]),
            ScriptedReply(text="Volume vol-db-07 is 82.4% full: 412 GB used and 88 GB free."),
        ),
    ),
    _ToolTurn(
        agent="order-support",
        user_text="Where is my order 48213?",
        tools=ORDER_TOOLS,
        replies=(
            ScriptedReply(tool_calls=[ScriptedToolCall("lookup_order", {"order_id": "48213"})]),
            ScriptedReply(text="Order 48213 has shipped with DHL and is on its way."),
        ),
    ),
    _ToolTurn(
        agent="capacity-planner",
        user_text="How much usable capacity do we have across both sites, and what should we plan for?",
        tools=STORAGE_TOOLS,
        replies=(
            ScriptedReply(tool_calls=[ScriptedToolCall("get_capacity_report", {"scope": "all sites"})]),
            ScriptedReply(
                text="Usable capacity across both sites is 1526.3 TB. "
                "At the current growth rate you will need 2400 TB by next year."
            ),
        ),
    ),
)

_TRIAGE_REPLIES = (
    ScriptedReply(text=json.dumps({"rows": _COLLAPSED_ROWS})),
    ScriptedReply(text=json.dumps({"rows": _CONFORMING_ROWS})),
)


def demo_script() -> list[ScriptedReply]:
    """Every reply the scripted server plays, in the order the scenarios ask for them."""
    return [reply for turn in _TOOL_TURNS for reply in turn.replies] + list(_TRIAGE_REPLIES)


class _TriageAnalyst:
    """A structured-output analyst: asks the model for triage rows and keeps those the schema accepts."""

    id = "incident-triage"

    def __init__(self, client: openai.OpenAI) -> None:
        self._client = client

    def analyze(self, input: Any, ctx: Any) -> list[TriageFinding]:
        """One sample: ask for rows as JSON, validate them, return the accepted findings."""
        completion = self._client.chat.completions.create(
            model=_MODEL,
            response_format={"type": "json_object"},
            messages=[
                {
                    "role": "system",
                    "content": 'Return {"rows": [{"component", "severity": low|medium|high, "summary"}]}.',
                },
                {"role": "user", "content": str(input)},
            ],
        )
        result = validate_rows(completion.choices[0].message.content, TriageFinding, ctx)
        return list(result.accepted)


class _NullContext:
    """The analyst context of the demo: nothing to report besides the counts the wrapper reads."""

    def log(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        """Ignore the message; the retry wrapper counts the fields on its own context."""


class _ScriptedAgent:
    """Runs the scenarios through the instrumented client, one trace per scenario."""

    def __init__(self, client: openai.OpenAI, handler: TelemetryHandler, provider: TracerProvider) -> None:
        self._client = client
        self._handler = handler
        self._provider = provider

    def run_tool_turn(self, turn: _ToolTurn) -> str:
        """Ask, execute every requested tool as an ``execute_tool`` span, and ask again until it answers."""
        with self._handler.invoke_local_agent(agent_name=turn.agent, request_model=_MODEL):
            messages: list[Any] = [{"role": "user", "content": turn.user_text}]
            while True:
                completion = self._client.chat.completions.create(
                    model=_MODEL, messages=messages, tools=list(turn.tools)
                )
                message = completion.choices[0].message
                if not message.tool_calls:
                    return message.content or ""
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    if call.type != "function":
                        continue
                    result = self._execute_tool(call.function.name, call.id, call.function.arguments)
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})

    def run_analyst(self) -> list[TriageFinding]:
        """Run the triage analyst under the shape-collapse retry wrapper."""
        analyst = with_shape_collapse_retry(_TriageAnalyst(self._client), tracer_provider=self._provider)
        with self._handler.invoke_local_agent(agent_name="incident-triage", request_model=_MODEL):
            findings = analyst.analyze(_TRIAGE_INPUT, _NullContext())
        return list(findings)

    def _execute_tool(self, name: str, call_id: str, arguments: str) -> Any:
        with self._handler.tool(name) as invocation:
            invocation.tool_call_id = call_id
            invocation.arguments = json.loads(arguments or "{}")
            result = _TOOL_RESULTS.get(name, {"error": f"unknown tool {name}"})
            invocation.tool_result = result
        return result


@dataclass(frozen=True)
class DemoOutput:
    """Where the demo's telemetry goes: a span exporter, a log exporter, and words for the user."""

    span_exporter: SpanExporter
    log_exporter: LogRecordExporter
    destination: str


def run_demo(output: DemoOutput, *, embedder: str, console: Console | None = None) -> int:
    """Run every scenario with the checks attached, print the verdicts and write or export the telemetry.

    Returns 0, or 1 when spans or evaluation events could not be delivered (the endpoint is down).
    """
    console = console or stdout_console()
    span_exporter = CountingSpanExporter(output.span_exporter)
    log_exporter, destination = output.log_exporter, output.destination
    collector = CollectingSpanProcessor()
    downstream = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]  # SDK lacks the hint
    downstream.add_span_processor(BatchSpanProcessor(span_exporter))
    downstream.add_span_processor(collector)
    resource = Resource.create({"service.name": "shapecheck-demo"})
    events = EvaluationEventEmitter(log_exporter, resource=resource)
    provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_span_processor(
        ShapecheckSpanProcessor(downstream, events=events, checks=build_checks(embedder))
    )
    with _content_capture_on_spans(), _instrumented(provider):
        handler = TelemetryHandler(tracer_provider=provider)
        with ScriptedOpenAIServer(demo_script(), model=_MODEL) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
            agent = _ScriptedAgent(client, handler, provider)
            for turn in _TOOL_TURNS:
                agent.run_tool_turn(turn)
            agent.run_analyst()
            client.close()
    provider.force_flush(_FLUSH_TIMEOUT_MILLIS)
    provider.shutdown()
    spans = collector.spans
    print_verdicts(console, verdict_rows(spans), title="shapecheck demo: verdicts on the agent's telemetry")
    print_runs(console, run_entries(spans), title="shapecheck demo: the agent's runs")
    print_summary(console, summary(spans))
    undelivered_spans, undelivered_events = span_exporter.failed, events.stats().dropped
    if undelivered_spans or undelivered_events:
        console.print(
            f"[bold red]Export to {destination} failed:[/bold red] {undelivered_spans} spans and "
            f"{undelivered_events} evaluation events were not delivered."
        )
        return 1
    console.print(f"Enriched traces and flagged evaluation events: {destination}")
    return 0


def demo_output(out_dir: Path, otlp_endpoint: str | None, protocol: str | None = None) -> DemoOutput:
    """File exporters under ``out_dir`` (earlier demo files removed), or OTLP exporters for an endpoint.

    Raises:
        ValueError: ``out_dir`` cannot be written, or ``otlp_endpoint`` or ``protocol`` is not valid for
            the protocol the OTLP rule resolves (see :mod:`otel_shapecheck.otlp._endpoints`).
    """
    if otlp_endpoint is None:
        try:
            out_dir.mkdir(parents=True, exist_ok=True)
            for name in (TRACES_FILE, EVENTS_FILE):
                (out_dir / name).unlink(missing_ok=True)
        except OSError as error:
            raise ValueError(f"{out_dir}: cannot write the demo output ({error.strerror or error})") from None
        return DemoOutput(
            OtlpJsonLinesSpanExporter(out_dir / TRACES_FILE),
            OtlpJsonLinesLogExporter(out_dir / EVENTS_FILE),
            f"{out_dir / TRACES_FILE} and {out_dir / EVENTS_FILE}",
        )
    spans = otlp_span_exporter(
        otlp_endpoint, protocol=protocol, timeout=_EXPORT_TIMEOUT_S, setting="--otlp-endpoint"
    )
    try:
        logs = otlp_log_exporter(
            otlp_endpoint, protocol=protocol, timeout=_EXPORT_TIMEOUT_S, setting="--otlp-endpoint"
        )
    except ValueError:
        spans.shutdown()
        raise
    return DemoOutput(spans, logs, describe(otlp_endpoint, "traces", protocol))


@contextmanager
def _content_capture_on_spans() -> Iterator[None]:
    """Capture message content on spans while the demo runs (the instrumentation's opt-in)."""
    previous = os.environ.get(_CAPTURE_CONTENT_ENV)
    os.environ[_CAPTURE_CONTENT_ENV] = "span_only"
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(_CAPTURE_CONTENT_ENV, None)
        else:
            os.environ[_CAPTURE_CONTENT_ENV] = previous


@contextmanager
def _instrumented(provider: TracerProvider) -> Iterator[None]:
    """The openai client instrumented into ``provider`` for the duration of the block."""
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield
    finally:
        instrumentor.uninstrument()

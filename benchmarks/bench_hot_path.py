"""Hot-path cost: ``on_end`` of the span processor against the bare ``BatchSpanProcessor`` it wraps.

Spans are recorded once (ordinary HTTP-server spans, and GenAI chat spans written by
``opentelemetry-util-genai``'s ``TelemetryHandler`` with content on the span), then replayed into
``on_end`` of a fresh bare ``BatchSpanProcessor`` (the baseline) and of a fresh wrapper around an
identical one, alternating rounds, in the same process. Two figures per population, medians over the
rounds: wall-clock time per call, and CPU time of the calling thread per call (which leaves out time
the thread waited for the interpreter lock while other threads, e.g. the exporter's, ran). The wrapper
runs no checks here, so its worker only forwards what it held: the rows measure what the application's
thread pays, not evaluation. Run alone with ``python -m benchmarks hot_path``.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanKind
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import (
    FunctionToolDefinition,
    InputMessage,
    OutputMessage,
    TextPart,
    ToolCallRequestPart,
)

from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

_SPANS = 20_000
_CHATS_PER_TURN = 10
_ROUNDS = 7
_QUEUE = _SPANS * 2
_TARGETS = {"ordinary": 1.10, "genai": 1.5}


class _DiscardingExporter(SpanExporter):
    """Accepts every batch and keeps nothing: the export side costs the same for both processors."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _Recorder(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def ordinary_spans(count: int) -> list[ReadableSpan]:
    """HTTP-server spans with the attributes a web framework instrumentation writes."""
    recorder = _Recorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("bench.http")
    for index in range(count):
        with tracer.start_as_current_span("GET /api/clusters/{id}", kind=SpanKind.SERVER) as span:
            span.set_attributes(
                {
                    "http.request.method": "GET",
                    "http.route": "/api/clusters/{id}",
                    "url.path": f"/api/clusters/{index}",
                    "url.scheme": "https",
                    "server.address": "api.example.com",
                    "server.port": 443,
                    "http.response.status_code": 200,
                    "user_agent.original": "python-httpx/0.28",
                }
            )
    provider.shutdown()
    return recorder.spans


def genai_spans(count: int) -> list[ReadableSpan]:
    """Chat spans from ``TelemetryHandler`` naming their own tool call, content on the span.

    They come in agent turns of ``_CHATS_PER_TURN`` chats under one ``invoke_agent`` span (whose own
    end is not replayed), as an agent loop writes them.
    """
    previous = os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "SPAN_ONLY"
    recorder = _Recorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    handler = TelemetryHandler(tracer_provider=provider)
    tracer = provider.get_tracer("bench.agent")
    tools = [
        FunctionToolDefinition(name="get_capacity", description="Usable storage of a cluster", parameters={}),
        FunctionToolDefinition(name="get_weather", description="Current weather for a city", parameters={}),
    ]
    try:
        for index in range(count):
            if index % _CHATS_PER_TURN == 0:
                agent = tracer.start_span("invoke_agent storage", context=Context())
            invocation = handler.inference(
                "openai", request_model="gpt-4o-mini", context=trace.set_span_in_context(agent, Context())
            )
            invocation.tool_definitions = list(tools)
            invocation.input_messages = [
                InputMessage(role="user", parts=[TextPart(content=f"How much storage has cluster {index}?")])
            ]
            invocation.output_messages = [
                OutputMessage(
                    role="assistant",
                    parts=[
                        ToolCallRequestPart(arguments={"cluster": index}, name="get_capacity", id=f"c{index}")
                    ],
                    finish_reason="tool_calls",
                )
            ]
            invocation.stop()
    finally:
        if previous is None:
            os.environ.pop("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", None)
        else:
            os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = previous
        provider.shutdown()
    return [span for span in recorder.spans if span.name.startswith("chat")]


def _bare() -> SpanProcessor:
    return BatchSpanProcessor(_DiscardingExporter(), max_queue_size=_QUEUE, max_export_batch_size=512)


def _wrapped() -> SpanProcessor:
    return ShapecheckSpanProcessor(
        _bare(),
        checks=[],
        options=ProcessorOptions(max_queue_size=_QUEUE),
    )


def _per_call_ns(make: Callable[[], SpanProcessor], spans: Sequence[ReadableSpan]) -> tuple[float, float]:
    """Wall-clock and calling-thread CPU nanoseconds per ``on_end``, for a fresh processor."""
    processor = make()
    on_end = processor.on_end
    wall, cpu = time.perf_counter_ns(), time.thread_time_ns()
    for span in spans:
        on_end(span)
    cpu, wall = time.thread_time_ns() - cpu, time.perf_counter_ns() - wall
    processor.shutdown()
    return wall / len(spans), cpu / len(spans)


def measure(name: str, spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """Median ns per ``on_end`` for both processors over alternating rounds: wall clock and thread CPU."""
    baseline: list[tuple[float, float]] = []
    wrapped: list[tuple[float, float]] = []
    for _ in range(_ROUNDS):
        baseline.append(_per_call_ns(_bare, spans))
        wrapped.append(_per_call_ns(_wrapped, spans))
    rows = []
    for index, clock in enumerate(("wall", "thread_cpu")):
        base = statistics.median(sample[index] for sample in baseline)
        value = statistics.median(sample[index] for sample in wrapped)
        rows.append(
            {
                "name": f"hot_path.on_end.{name}.{clock}",
                "value": round(value, 1),
                "unit": "ns/span",
                "baseline": round(base, 1),
                "ratio": round(value / base, 3),
                "target": f"<= {_TARGETS[name]:.2f}x bare BatchSpanProcessor",
                "spans": len(spans),
                "rounds": _ROUNDS,
            }
        )
    return rows


def run() -> list[dict[str, Any]]:
    """One row per span population: ordinary spans and GenAI chat spans."""
    return [*measure("ordinary", ordinary_spans(_SPANS)), *measure("genai", genai_spans(_SPANS))]


if __name__ == "__main__":
    for row in run():
        print(row)

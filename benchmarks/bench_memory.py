"""Memory: resident set size with 10 000 agent traces in flight at the caps, and after they drain.

Each measurement runs in a fresh child process, so imports, earlier benchmarks and the allocator's
history do not blur the numbers. In the child a ``TracerProvider`` sends spans through the pipeline
(the wrapper with every check around a ``BatchSpanProcessor`` whose exporter discards, or that
``BatchSpanProcessor`` alone for the baseline). After a warm-up of complete traces, 10 000 traces are
put in flight: each has an open ``invoke_agent`` root, an ended chat span whose tool calls are only
visible as its sibling ``execute_tool`` span (so the ledger holds it until the root ends), and that
tool span. With the default caps this fills ``max_pending_spans`` (10 000) and ``max_traces`` (1 000
traces of facts; older ones are evicted and counted). The roots then end, everything drains, and the
resident set is read again.

Rows: peak RSS in flight against the same workload without the wrapper (the application's own spans
cost memory too), and RSS after draining against the child's RSS before the traces (target: within
10 %). Run alone with ``python -m benchmarks.bench_memory``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import json
import multiprocessing
import os
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

if TYPE_CHECKING:
    from otel_shapecheck import Check

TRACES = 10_000
_WARM_UP_TRACES = 500
_MB = 1024 * 1024
_QUEUE = 4 * TRACES  # the downstream never drops: both pipelines export every span
_TOOLS = json.dumps(
    [
        {
            "type": "function",
            "name": "get_capacity",
            "description": "Usable and raw storage of a cluster's pools",
        },
        {"type": "function", "name": "get_weather", "description": "Current weather for a city"},
        {"type": "function", "name": "open_ticket", "description": "Open a support ticket for an incident"},
    ]
)
_SYSTEM = "You are a storage operations assistant. Answer with figures from tools only. " * 8


class _DiscardingExporter(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _trim() -> bool:
    """Ask glibc to hand freed heap pages back to the system; whether it could be asked."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):
        return False
    return True


def start_trace(tracer: trace.Tracer, number: int) -> trace.Span:
    """Open an agent root and end its chat and tool children; the caller ends the root."""
    root = tracer.start_span("invoke_agent capacity", attributes={"gen_ai.operation.name": "invoke_agent"})
    context = trace.set_span_in_context(root)
    question = f"How much usable storage does cluster {number} have?"
    chat = tracer.start_span(
        "chat gpt-4o-mini",
        context=context,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.tool.definitions": _TOOLS,
            "gen_ai.system_instructions": json.dumps([{"type": "text", "content": _SYSTEM}]),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": question}]}]
            ),
        },
    )
    chat.end()
    tool = tracer.start_span(
        "execute_tool get_capacity",
        context=context,
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_capacity",
            "gen_ai.tool.call.result": json.dumps({"cluster": number, "usable_tb": 1200 + number % 50}),
        },
    )
    tool.end()
    return root


def _pipeline(wrapped: bool) -> SpanProcessor:
    downstream = BatchSpanProcessor(_DiscardingExporter(), max_queue_size=_QUEUE)
    if not wrapped:
        return downstream
    # Imported here so the bare child never loads numpy, faiss and the checks: its RSS is the SDK's own.
    from otel_shapecheck import (
        ConformanceCheck,
        FiguresCheck,
        HashingEmbedder,
        ShapecheckSpanProcessor,
        ToolChoiceCheck,
    )

    checks: list[Check] = [ToolChoiceCheck(HashingEmbedder()), ConformanceCheck(), FiguresCheck()]
    return ShapecheckSpanProcessor(downstream, checks=checks)


def _held(processor: SpanProcessor) -> int:
    counts = getattr(processor, "counts", None)
    return int(counts().held) if counts is not None else 0


def _cycle(
    tracer: trace.Tracer, provider: TracerProvider, processor: SpanProcessor, first: int, traces: int
) -> tuple[int, int, int]:
    """Put ``traces`` traces in flight, then end them and drain; RSS in flight, after draining, spans held."""
    held_before = _held(processor)
    roots = [start_trace(tracer, first + number) for number in range(traces)]
    gc.collect()
    in_flight = _rss_bytes()
    held = _held(processor) - held_before
    for root in roots:
        root.end()
    del roots
    provider.force_flush()
    gc.collect()
    return in_flight, _rss_bytes(), held


def measure_in_child(wrapped: bool, traces: int) -> dict[str, Any]:
    """Run the workload twice in this process; RSS readings (bytes) and the processor's counts.

    The second cycle shows whether memory freed by the first is reused (steady state) or grows.
    """
    processor = _pipeline(wrapped)
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench.memory")
    for number in range(_WARM_UP_TRACES):
        start_trace(tracer, number).end()
    provider.force_flush()
    gc.collect()
    before = _rss_bytes()
    in_flight, drained, held_in_flight = _cycle(tracer, provider, processor, _WARM_UP_TRACES, traces)
    in_flight_again, drained_again, _ = _cycle(tracer, provider, processor, _WARM_UP_TRACES + traces, traces)
    trimmed = _rss_bytes() if _trim() else drained_again
    counts = processor.counts().__dict__ if hasattr(processor, "counts") else {}
    provider.shutdown()
    return {
        "before": before,
        "in_flight": in_flight,
        "held_in_flight": held_in_flight,
        "drained": drained,
        "in_flight_again": in_flight_again,
        "drained_again": drained_again,
        "drained_trimmed": trimmed,
        "counts": {key: value for key, value in counts.items() if key != "errors"},
    }


def _child(connection: Connection, wrapped: bool, traces: int) -> None:
    connection.send(measure_in_child(wrapped, traces))


def in_child_process(wrapped: bool, traces: int = TRACES) -> dict[str, Any]:
    """:func:`measure_in_child` in a fresh spawned interpreter."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(target=_child, args=(child, wrapped, traces))
    process.start()
    try:
        if not parent.poll(600):
            raise RuntimeError("the memory benchmark's child process gave no result in 10 minutes")
        result: dict[str, Any] = parent.recv()
    finally:
        process.join(30)
        if process.is_alive():
            process.kill()
    return result


def _mb(value: float) -> float:
    return round(value / _MB, 1)


def run() -> list[dict[str, Any]]:
    """Peak in flight against the bare pipeline, after draining against before, and the second cycle."""
    bare = in_child_process(wrapped=False)
    wrapped = in_child_process(wrapped=True)
    counts = wrapped["counts"]
    extra_per_trace = (
        wrapped["in_flight"] - wrapped["before"] - (bare["in_flight"] - bare["before"])
    ) / TRACES
    drained_ratio = wrapped["drained"] / wrapped["before"]
    steady_ratio = wrapped["drained_again"] / wrapped["drained"]
    return [
        {
            "name": f"memory.in_flight_{TRACES}_traces.rss",
            "value": _mb(wrapped["in_flight"]),
            "unit": "MB",
            "baseline": _mb(bare["in_flight"]),
            "ratio": round(wrapped["in_flight"] / bare["in_flight"], 3),
            "target": "every trace held within the caps (baseline: same traces, bare BatchSpanProcessor)",
            "met": wrapped["held_in_flight"] == TRACES and counts.get("released_by_cap", 0) == 0,
            "held_in_flight": wrapped["held_in_flight"],
            "forwarded_unevaluated_on_release": counts.get("forwarded_unevaluated"),
            "facts_dropped": counts.get("facts_dropped"),
            "extra_bytes_per_trace_over_bare": round(extra_per_trace),
            "rss_before_mb": _mb(wrapped["before"]),
            "bare_rss_before_mb": _mb(bare["before"]),
        },
        {
            "name": "memory.after_drain.rss",
            "value": _mb(wrapped["drained"]),
            "unit": "MB",
            "baseline": _mb(wrapped["before"]),
            "ratio": round(drained_ratio, 3),
            "target": "<= 1.10x RSS before the traces",
            "met": drained_ratio <= 1.10,
            "bare_ratio": round(bare["drained"] / bare["before"], 3),
            "evaluated": counts.get("evaluated"),
        },
        {
            "name": "memory.second_cycle_after_drain.rss",
            "value": _mb(wrapped["drained_again"]),
            "unit": "MB",
            "baseline": _mb(wrapped["drained"]),
            "ratio": round(steady_ratio, 3),
            "target": "<= 1.10x after the first cycle (freed memory reused, no growth)",
            "met": steady_ratio <= 1.10,
            "in_flight_again_mb": _mb(wrapped["in_flight_again"]),
            "after_malloc_trim_mb": _mb(wrapped["drained_trimmed"]),
        },
    ]


if __name__ == "__main__":
    for row in run():
        print(row)

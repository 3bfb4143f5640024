"""Hot-path cost: the span processor's hooks against the bare ``BatchSpanProcessor`` it wraps.

Spans are recorded once (ordinary HTTP-server spans, and GenAI chat spans written by
``opentelemetry-util-genai``'s ``TelemetryHandler`` with content on the span), then replayed into a fresh
bare ``BatchSpanProcessor`` (the baseline) and a fresh wrapper around an identical one, alternating
rounds, in the same process. Figures are medians over the rounds, per span: wall-clock time, and CPU
time of the calling thread (which leaves out time the thread waited for the interpreter lock while
other threads ran, but includes garbage collections that land on it).

Two conditions:

- *idle*: the wrapper runs no checks, so its worker only forwards what it held;
- *busy*: an evaluation worker runs the built-in checks (hashing embedder) on a backlog of GenAI spans
  during the whole replay. In the wrapped rounds it is the wrapper's own worker; in the baseline rounds
  it is the worker of a second wrapper that is not in the span path, so both sides compete with the
  same evaluation work for the interpreter lock and the allocator.

The ``span`` rows replay both hooks the application's thread runs per span (``on_start`` and
``on_end``); the ``on_end`` rows replay ``on_end`` alone. ``gc`` rows count, with the collector's
callbacks, the collections that ran on the application's thread during busy rounds, and the cyclic
garbage left per span. The ``key_test_floor`` row times a wrapper that only reads the attribute keys
and forwards, the least any Python wrapper that looks at spans pays. Run alone with
``python -m benchmarks hot_path``.
"""

from __future__ import annotations

import gc
import os
import statistics
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import trace
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import SpanContext, SpanKind
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import (
    FunctionToolDefinition,
    InputMessage,
    OutputMessage,
    TextPart,
    ToolCallRequestPart,
)

from otel_shapecheck.checks._base import Check, Subject, Verdict
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS
from otel_shapecheck.readers._genai import EXECUTE_TOOL_SPAN_PREFIX

_SPANS = 20_000
_BUSY_SPANS = 6_000
"""Spans per busy round: a busy round is slower, and its worker's backlog must outlast it."""
_BACKLOG = 1_500
"""GenAI spans handed to the busy worker (untimed) before a busy round's replay starts."""
_CHATS_PER_TURN = 10
_ROUNDS = 7
_BUSY_ROUNDS = 5
_QUEUE = _SPANS * 4
_TARGETS = {"ordinary": 1.2, "genai": 2.5}


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


def _wrapped(checks: Sequence[Check] = ()) -> ShapecheckSpanProcessor:
    return ShapecheckSpanProcessor(
        _bare(), checks=list(checks), options=ProcessorOptions(max_queue_size=_QUEUE)
    )


@dataclass
class _Switch:
    on: bool = True


@dataclass
class _Switchable:
    """A check that runs ``check`` while its switch is on, and answers nothing at once when it is off
    (so a busy round's leftover backlog drains in no time once the round is measured)."""

    check: Check
    switch: _Switch
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = self.check.name

    def evaluate(self, subjects: Sequence[Subject]) -> Sequence[Verdict | None]:
        if not self.switch.on:
            return [None] * len(subjects)
        return self.check.evaluate(subjects)


class _Load:
    """An evaluation worker kept busy: a wrapper with the built-in checks and a backlog of GenAI spans."""

    def __init__(self, checks: Sequence[Check], backlog: Sequence[ReadableSpan], *, in_path: bool) -> None:
        self.switch = _Switch()
        self.processor = _wrapped([_Switchable(check, self.switch) for check in checks])
        self.in_path = in_path
        for span in backlog:
            self.processor.on_end(span)
        deadline = time.monotonic() + 5.0
        while self.processor.counts().evaluated == 0 and time.monotonic() < deadline:
            time.sleep(0.005)

    def still_busy(self) -> bool:
        return self.processor.counts().ready_spans > 0

    def stop(self) -> None:
        self.switch.on = False
        self.processor.shutdown()


@dataclass
class _Sample:
    wall_ns: float
    cpu_ns: float
    busy_throughout: bool = True
    collections: tuple[int, int, int] = (0, 0, 0)


@contextmanager
def _collections_on_this_thread() -> Iterator[list[int]]:
    """Count the garbage collections, by generation, that run on the calling thread meanwhile."""
    counts = [0, 0, 0]
    me = threading.get_ident()

    def callback(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and threading.get_ident() == me:
            counts[info["generation"]] += 1

    gc.callbacks.append(callback)
    try:
        yield counts
    finally:
        gc.callbacks.remove(callback)


_CHUNK = 256
"""Spans copied fresh, then replayed, at a time: the hooks see spans as warm in the caches as the SDK
hands them over (just built by ``Span.end()``), not 20 000 spans recorded long before."""


def _fresh_context(context: SpanContext | None) -> SpanContext | None:
    if context is None:
        return None
    return SpanContext(
        context.trace_id,
        context.span_id,
        context.is_remote,
        trace_flags=context.trace_flags,
        trace_state=context.trace_state,
    )


def _fresh_value(value: Any) -> Any:
    """A new text object for text (an instrumentation writes its message JSON just before the end)."""
    return value.encode().decode() if isinstance(value, str) else value


def _fresh(span: ReadableSpan) -> ReadableSpan:
    """A new ``ReadableSpan`` like the one ``Span.end()`` builds (bounded attributes, events and links)."""
    return ReadableSpan(
        name=span.name,
        context=_fresh_context(span.context),
        parent=_fresh_context(span.parent),
        resource=span.resource,
        attributes=BoundedAttributes(
            attributes={key: _fresh_value(value) for key, value in (span.attributes or {}).items()},
            immutable=True,
        ),
        events=BoundedList.from_seq(128, span.events),
        links=BoundedList.from_seq(128, span.links),
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )


def _replay(processor: SpanProcessor, spans: Sequence[ReadableSpan], starts: bool) -> tuple[float, float]:
    """Wall-clock and calling-thread CPU ns per span in the hooks, over fresh copies of ``spans``."""
    on_start, on_end = processor.on_start, processor.on_end
    wall = cpu = 0
    for first in range(0, len(spans), _CHUNK):
        chunk = [_fresh(span) for span in spans[first : first + _CHUNK]]
        wall_start, cpu_start = time.perf_counter_ns(), time.thread_time_ns()
        if starts:
            for span in chunk:
                on_start(span)  # type: ignore[arg-type]  # the wrapper only reads a started span's context
                on_end(span)
        else:
            for span in chunk:
                on_end(span)
        cpu += time.thread_time_ns() - cpu_start
        wall += time.perf_counter_ns() - wall_start
    return wall / len(spans), cpu / len(spans)


def _round(
    wrapped: bool,
    spans: Sequence[ReadableSpan],
    *,
    starts: bool = False,
    checks: Sequence[Check] | None = None,
    backlog: Sequence[ReadableSpan] = (),
) -> _Sample:
    """One round: a fresh processor (bare, or the wrapper), with an evaluation worker kept busy if
    ``checks`` are given (the wrapper's own, or a second wrapper's beside the bare processor)."""
    load = _Load(checks, backlog, in_path=wrapped) if checks is not None else None
    if wrapped:
        processor: SpanProcessor = load.processor if load is not None else _wrapped()
    else:
        processor = _bare()
    with _collections_on_this_thread() as collections:
        wall, cpu = _replay(processor, spans, starts)
    busy = load.still_busy() if load is not None else True
    if load is not None:
        load.stop()
    if load is None or not wrapped:
        processor.shutdown()
    return _Sample(wall, cpu, busy, (collections[0], collections[1], collections[2]))


def _rows(
    name: str, population: str, baseline: Sequence[_Sample], wrapped: Sequence[_Sample], clocks: Sequence[str]
) -> list[dict[str, Any]]:
    rows = []
    for clock in clocks:
        pick: Callable[[_Sample], float] = (lambda s: s.wall_ns) if clock == "wall" else (lambda s: s.cpu_ns)
        base = statistics.median(pick(sample) for sample in baseline)
        value = statistics.median(pick(sample) for sample in wrapped)
        row: dict[str, Any] = {
            "name": f"{name}.{clock}",
            "value": round(value, 1),
            "unit": "ns/span",
            "baseline": round(base, 1),
            "ratio": round(value / base, 3),
            "target": f"<= {_TARGETS[population]:.2f}x bare BatchSpanProcessor"
            if clock == "thread_cpu"
            else "report",
            "rounds": len(wrapped),
        }
        if ".busy" in name:
            row["busy_throughout"] = all(sample.busy_throughout for sample in [*baseline, *wrapped])
            row["gc_on_app_thread_per_round"] = {
                "bare": [sum(sample.collections[g] for sample in baseline) / len(baseline) for g in range(3)],
                "wrapped": [
                    sum(sample.collections[g] for sample in wrapped) / len(wrapped) for g in range(3)
                ],
            }
        rows.append(row)
    return rows


def measure_idle(population: str, spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """``on_end`` alone, with no evaluation going on: median ns per call, wall clock and thread CPU."""
    baseline, wrapped = [], []
    for _ in range(_ROUNDS):
        baseline.append(_round(False, spans))
        wrapped.append(_round(True, spans))
    return _rows(f"hot_path.on_end.{population}", population, baseline, wrapped, ("wall", "thread_cpu"))


def measure_busy(
    population: str,
    spans: Sequence[ReadableSpan],
    checks: Sequence[Check],
    backlogs: Sequence[Sequence[ReadableSpan]],
) -> list[dict[str, Any]]:
    """Both hooks, then ``on_end`` alone, while an evaluation worker runs the built-in checks."""
    rows = []
    for starts, hooks in ((True, "span"), (False, "on_end")):
        baseline, wrapped = [], []
        for index in range(_BUSY_ROUNDS):
            backlog = backlogs[index % len(backlogs)]
            baseline.append(_round(False, spans, starts=starts, checks=checks, backlog=backlog))
            wrapped.append(_round(True, spans, starts=starts, checks=checks, backlog=backlog))
        rows += _rows(
            f"hot_path.{hooks}.{population}.busy", population, baseline, wrapped, ("wall", "thread_cpu")
        )
    return rows


def cyclic_garbage(population: str, spans: Sequence[ReadableSpan], checks: Sequence[Check]) -> dict[str, Any]:
    """Objects the collector finds unreachable (reference cycles) per span, after the wrapper with the
    built-in checks handled ``spans`` and forwarded every one; the bare processor's in the same way."""
    found = []
    for make in (_bare, lambda: _wrapped(checks)):
        processor = make()
        processor.force_flush()
        gc.collect()
        gc.disable()
        try:
            for span in spans:
                processor.on_start(span)  # type: ignore[arg-type]
                processor.on_end(span)
            processor.force_flush()
            found.append(gc.collect())
        finally:
            gc.enable()
            processor.shutdown()
    return {
        "name": f"hot_path.gc.{population}.cyclic_garbage",
        "value": round(found[1] / len(spans), 4),
        "unit": "objects/span",
        "baseline": round(found[0] / len(spans), 4),
        "ratio": None,
        "target": "0 per span (none created by the hooks or the worker)",
        "spans": len(spans),
    }


class _KeyTestOnly(SpanProcessor):
    """The least a wrapper that looks at spans can do: the wrapper's key-set and name test, then forward.

    Its cost over the bare processor is the floor any Python wrapper reading a span's attributes pays
    for ordinary spans (one more Python-level call, one read of the attribute dict, one key-set test).
    """

    def __init__(self) -> None:
        self._downstream = _bare()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        stored = span._attributes  # type: ignore[attr-defined]  # as the wrapper reads it
        attributes = stored._dict if type(stored) is BoundedAttributes else (span.attributes or {})
        if CLASSIFYING_KEYS.isdisjoint(attributes) and not span.name.startswith(EXECUTE_TOOL_SPAN_PREFIX):
            pass
        self._downstream.on_end(span)

    def shutdown(self) -> None:
        self._downstream.shutdown()


def measure_floor(spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    """``on_end`` of :class:`_KeyTestOnly` against the bare processor (thread CPU, medians)."""
    baseline, floor = [], []
    for _ in range(_ROUNDS):
        for processor, samples in ((_bare(), baseline), (_KeyTestOnly(), floor)):
            samples.append(_replay(processor, spans, False)[1])
            processor.shutdown()
    base, value = statistics.median(baseline), statistics.median(floor)
    return {
        "name": "hot_path.on_end.ordinary.key_test_floor.thread_cpu",
        "value": round(value, 1),
        "unit": "ns/span",
        "baseline": round(base, 1),
        "ratio": round(value / base, 3),
        "target": "report (the least a Python wrapper that reads the attribute keys pays)",
        "rounds": _ROUNDS,
    }


def run() -> list[dict[str, Any]]:
    """Rows per span population (ordinary spans, GenAI chat spans): idle, busy, and cyclic garbage."""
    ordinary, genai = ordinary_spans(_SPANS), genai_spans(_SPANS)
    checks = build_checks("hashing")
    backlogs = [genai_spans(_BACKLOG) for _ in range(2)]
    _round(True, genai_spans(_BUSY_SPANS), checks=checks, backlog=backlogs[0])  # warm the tool index
    busy_genai = genai_spans(_BUSY_SPANS)
    return [
        *measure_idle("ordinary", ordinary),
        measure_floor(ordinary),
        *measure_idle("genai", genai),
        *measure_busy("ordinary", ordinary[:_BUSY_SPANS], checks, backlogs),
        *measure_busy("genai", busy_genai, checks, backlogs),
        cyclic_garbage("ordinary", ordinary[:2000], checks),
        cyclic_garbage("genai", genai_spans(2000), checks),
    ]


if __name__ == "__main__":
    for row in run():
        print(row)

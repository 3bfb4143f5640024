"""Fleet throughput: evaluations per CPU-second on fleet traffic, in-process and through ``serve``.

The traffic is :mod:`benchmarks._fleet`'s: six agents with fixed menus of 10 to 60 tools, runs with
varied user turns, 40 % of them with tool rows and figures, plain spans around. For each embedder:

- **in-process**: the spans replayed into ``ShapecheckSpanProcessor`` → ``BatchSpanProcessor`` → an
  exporter that only notes when each span left; evaluations (spans given a verdict) per CPU-second of
  the whole process, from the first ``on_end`` until the last enriched copy is exported. The memory
  cache starts empty and the cache file is off, so every menu is embedded once, as in a fresh process.
- **floor**: the same traffic's unavoidable work: the raw embedder run over exactly the texts the
  in-process run sent it (each new text once, in batches of 64) plus reading every span with the
  readers. ``ratio`` is the floor's CPU over the in-process CPU (1 would be no overhead at all).
- **delay**: p50/p99 from a span's ``on_end`` to its enriched copy's export, with the spans replayed at
  half the measured rate (a loaded, not saturated, processor).
- **serve**: the same spans as OTLP requests into an ``otel-shapecheck serve`` child process that
  forwards to a counting receiver; evaluations per CPU-second of the gateway process, with the cache
  file off (cold) and with a file a previous gateway filled (restarted).

Keep it short on a shared machine: ``python -m benchmarks fleet`` (``FLEET_RUNS`` runs per round).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from benchmarks._fleet import fleet_spans, tool_choosing
from benchmarks._gateway_traffic import GatewayProcess, requests_of, send_all
from benchmarks.bench_end_to_end import CountingReceiver
from otel_shapecheck import (
    ConformanceCheck,
    Embedder,
    FiguresCheck,
    HashingEmbedder,
    MiniLMEmbedder,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._vectors import FloatMatrix
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.readers._classify import classify_span
from otel_shapecheck.readers._read import read_llm_call, read_tool_execution

FLEET_RUNS = int(os.environ.get("FLEET_RUNS", "300"))
_EMBED_BATCH = 64
_VERDICT = "shapecheck.flagged"


class _Recording:
    """The raw embedder, noting every text it is asked for (the texts that were new to the cache)."""

    def __init__(self, inner: Embedder) -> None:
        self._inner = inner
        self.texts: list[str] = []

    @property
    def id(self) -> str:
        return self._inner.id

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.texts.extend(texts)
        return self._inner.embed(texts)


class _Timed(SpanExporter):
    """Notes when each span was exported, and whether it carried a verdict."""

    def __init__(self) -> None:
        self.exported: dict[int, float] = {}
        self.enriched: set[int] = set()
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        now = time.perf_counter()
        with self._lock:
            for span in spans:
                assert span.context is not None
                self.exported[span.context.span_id] = now
                if _VERDICT in (span.attributes or {}):
                    self.enriched.add(span.context.span_id)
        return SpanExportResult.SUCCESS

    def wait_for(self, count: int, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while len(self.exported) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(self.exported)} of {count} spans exported")
            time.sleep(0.005)


def _processor(embedder: Embedder, exporter: _Timed, queue: int) -> ShapecheckSpanProcessor:
    cache = EmbeddingCache(embedder, path="none")
    return ShapecheckSpanProcessor(
        BatchSpanProcessor(exporter, max_queue_size=max(queue, 512), schedule_delay_millis=20),
        checks=[ToolChoiceCheck(cache, keep_calls=False), ConformanceCheck(), FiguresCheck()],
        options=ProcessorOptions(max_queue_size=queue, schedule_delay_millis=20),
    )


def _in_process(raw: Embedder, spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    recording = _Recording(raw)
    exporter = _Timed()
    processor = _processor(recording, exporter, len(spans) + 1)
    cpu, wall = time.process_time(), time.perf_counter()
    for span in spans:
        processor.on_end(span)
    exporter.wait_for(len(spans))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    evaluated = processor.counts().evaluated
    processor.shutdown()
    return {"cpu": cpu, "wall": wall, "evaluated": evaluated, "texts": recording.texts}


def _floor(raw: Embedder, texts: Sequence[str], spans: Sequence[ReadableSpan]) -> float:
    """CPU-seconds of the raw embedder over ``texts`` plus reading every span once."""
    cpu = time.process_time()
    for start in range(0, len(texts), _EMBED_BATCH):
        raw.embed(texts[start : start + _EMBED_BATCH])
    for span in spans:
        classified = classify_span(span.name, span.attributes or {})
        read_llm_call(span, classified) or read_tool_execution(span, classified)
    return time.process_time() - cpu


def _delays(raw: Embedder, spans: Sequence[ReadableSpan], rate: float) -> tuple[float, float]:
    """p50/p99 milliseconds from ``on_end`` to the enriched copy's export, at ``rate`` spans per second."""
    exporter = _Timed()
    processor = _processor(raw, exporter, len(spans) + 1)
    ended: dict[int, float] = {}
    start = time.perf_counter()
    for number, span in enumerate(spans):
        pause = start + number / rate - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        assert span.context is not None
        ended[span.context.span_id] = time.perf_counter()
        processor.on_end(span)
    exporter.wait_for(len(spans))
    processor.shutdown()
    delays = sorted(1000 * (exporter.exported[key] - ended[key]) for key in exporter.enriched)
    return statistics.median(delays), delays[min(len(delays) - 1, int(0.99 * len(delays)))]


def _through_serve(name: str, spans: Sequence[ReadableSpan], cache: str) -> dict[str, float]:
    """Evaluations per CPU-second of a ``serve`` process over ``spans`` (after a warm-up of other spans)."""
    warm_up = fleet_spans(6, seed=99)
    with CountingReceiver() as receiver:
        arguments = ["--forward", receiver.traces_url, "--protocol", "http/protobuf", "--embedder", name]
        arguments += ["--no-spool", "--no-events", "--embedding-cache", cache]
        with GatewayProcess(arguments) as gateway:
            send_all(gateway.port, requests_of(warm_up))
            if not receiver.wait_for(len(warm_up)):
                raise RuntimeError("the gateway forwarded too little of the warm-up")
            before, cpu = receiver.count(), gateway.cpu_seconds()
            wall = time.perf_counter()
            send_all(gateway.port, requests_of(spans))
            if not receiver.wait_for(before + len(spans), timeout=600):
                raise RuntimeError("the gateway forwarded too little")
            return {"cpu": gateway.cpu_seconds() - cpu, "wall": time.perf_counter() - wall}


def measure(name: str, raw: Embedder, spans: Sequence[ReadableSpan]) -> list[dict[str, Any]]:
    """The rows of one embedder: in-process, floor, ratio and delays, then ``serve`` cold and restarted."""
    raw.embed(["warm up the model"])
    run = _in_process(raw, spans)
    floor_cpu = _floor(raw, run["texts"], spans)
    evaluated = run["evaluated"]
    per_core = evaluated / run["cpu"]
    p50, p99 = _delays(raw, spans[: len(spans) // 2], 0.5 * len(spans) / run["wall"])
    choosing = tool_choosing(spans)
    rows: list[dict[str, Any]] = [
        {
            "name": f"fleet.in_process.evaluations_per_cpu_s[{name}]",
            "value": round(per_core, 1),
            "unit": "evaluations/CPU-s",
            "baseline": round(evaluated / floor_cpu, 1),
            "ratio": round(floor_cpu / run["cpu"], 3),
            "target": "report (baseline: the floor, raw model on new texts + reading the spans)",
            "spans": len(spans),
            "evaluated": evaluated,
            "tool_choosing_calls": choosing,
            "tool_choosing_per_cpu_s": round(choosing / run["cpu"], 1),
            "texts_embedded": len(run["texts"]),
            "cpu_s": round(run["cpu"], 2),
            "floor_cpu_s": round(floor_cpu, 2),
            "delay_p50_ms": round(p50, 1),
            "delay_p99_ms": round(p99, 1),
        }
    ]
    with tempfile.TemporaryDirectory() as directory:
        file = str(Path(directory) / "embeddings.sqlite")
        for label, cache in (("cold", "none"), ("filling", file), ("restarted", file)):
            served = _through_serve(name, spans, cache)
            if label == "filling":
                continue
            rows.append(
                {
                    "name": f"fleet.serve.{label}.evaluations_per_cpu_s[{name}]",
                    "value": round(evaluated / served["cpu"], 1),
                    "unit": "evaluations/CPU-s",
                    "baseline": round(per_core, 1),
                    "ratio": round(run["cpu"] / served["cpu"], 3),
                    "target": "report (baseline: in-process)",
                    "tool_choosing_per_cpu_s": round(choosing / served["cpu"], 1),
                    "cpu_s": round(served["cpu"], 2),
                    "wall_s": round(served["wall"], 2),
                }
            )
    return rows


def run() -> list[dict[str, Any]]:
    """Rows for the hashing embedder and MiniLM (one intra-op thread), on the same fleet traffic."""
    spans = fleet_spans(FLEET_RUNS)
    return measure("hashing", HashingEmbedder(), spans) + measure("minilm", MiniLMEmbedder(), spans)


if __name__ == "__main__":
    for row in run():
        print(row)

"""Fleet throughput: evaluations per CPU-second on fleet traffic, in-process and through ``serve``.

The traffic is :mod:`benchmarks._fleet`'s: six agents with fixed menus of 10 to 60 tools, runs with
varied user turns, 40 % of them with tool rows and figures, plain spans around. An evaluation is a span
given a verdict (two chat spans a run: the tool-choosing one and the answering one). For each embedder:

- **in-process, cold / steady**: the spans replayed into ``ShapecheckSpanProcessor`` →
  ``BatchSpanProcessor`` → an exporter that only notes when each span left; evaluations per CPU-second
  of the whole process, from the first ``on_end`` until the last span is exported. *Cold* starts with an
  empty memory cache (the cache file off), so every menu is embedded once; *steady* is the next hour's
  traffic (same agents and menus, new user turns) through the same cache: the sizing figure.
- **floor**: the same traffic's unavoidable work: the raw embedder run over exactly the texts the
  run sent it (each new text once, in batches of 64) plus reading every span with the readers.
  ``ratio`` is the floor's CPU over the run's (1 would be no overhead at all).
- **delay**: p50/p99 from a span's ``on_end`` to its enriched copy's export, steady state, with new
  turns replayed at half the steady rate (a loaded, not saturated, processor).
- **serve, cold / restarted**: the spans as OTLP requests into an ``otel-shapecheck serve`` child
  process forwarding to a counting receiver; evaluations per CPU-second of the gateway process. *Cold*:
  the cache file off. *Restarted*: a gateway filled the file with one hour's traffic and stopped; a new
  gateway on the same file takes the next hour's.
- **replicas**: a further hour's traffic (new turns for each count) split by trace id over 1, 2 and 4
  ``serve`` processes sharing the cache file; evaluations per wall-second from the first request to the
  last span forwarded, and per CPU-second of all of them (on this machine's two shared cores).
- **intra-op threads**: the raw MiniLM over 256 new texts with 1 and 2 onnxruntime threads.

What the application feels on the same traffic is :mod:`benchmarks.bench_application`.

Keep it short on a shared machine: ``python -m benchmarks fleet`` (``FLEET_RUNS`` runs per traffic).
"""

from __future__ import annotations

import contextlib
import itertools
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


def _processor(cache: EmbeddingCache, exporter: _Timed, queue: int) -> ShapecheckSpanProcessor:
    return ShapecheckSpanProcessor(
        BatchSpanProcessor(exporter, max_queue_size=max(queue, 512), schedule_delay_millis=20),
        checks=[ToolChoiceCheck(cache, keep_calls=False), ConformanceCheck(), FiguresCheck()],
        options=ProcessorOptions(max_queue_size=queue, schedule_delay_millis=20),
    )


def _in_process(
    cache: EmbeddingCache, recording: _Recording, spans: Sequence[ReadableSpan]
) -> dict[str, Any]:
    exporter = _Timed()
    processor = _processor(cache, exporter, len(spans) + 1)
    sent = len(recording.texts)
    cpu, wall = time.process_time(), time.perf_counter()
    for span in spans:
        processor.on_end(span)
    exporter.wait_for(len(spans))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    evaluated = processor.counts().evaluated
    processor.shutdown()
    return {"cpu": cpu, "wall": wall, "evaluated": evaluated, "texts": recording.texts[sent:]}


def _floor(raw: Embedder, texts: Sequence[str], spans: Sequence[ReadableSpan]) -> float:
    """CPU-seconds of the raw embedder over ``texts`` plus reading every span once."""
    cpu = time.process_time()
    for start in range(0, len(texts), _EMBED_BATCH):
        raw.embed(texts[start : start + _EMBED_BATCH])
    for span in spans:
        classified = classify_span(span.name, span.attributes or {})
        read_llm_call(span, classified) or read_tool_execution(span, classified)
    return time.process_time() - cpu


def _delays(cache: EmbeddingCache, spans: Sequence[ReadableSpan], rate: float) -> tuple[float, float]:
    """p50/p99 milliseconds from ``on_end`` to the enriched copy's export, at ``rate`` spans per second."""
    exporter = _Timed()
    processor = _processor(cache, exporter, len(spans) + 1)
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


_warm_ups = itertools.count(1000)


def _warm_up(runs: int) -> list[ReadableSpan]:
    """Runs of other agents with user turns no gateway has seen, so the model loads before the clock."""
    return fleet_spans(runs, seed=99, turns=next(_warm_ups))


def _settle(gateways: Sequence[GatewayProcess], timeout: float = 60) -> None:
    """Wait until the gateways are idle: the warm-up's spans arrive before its model load is over."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        before = sum(gateway.cpu_seconds() for gateway in gateways)
        time.sleep(0.5)
        if sum(gateway.cpu_seconds() for gateway in gateways) - before < 0.03 * len(gateways):
            return


def _gateway_arguments(receiver: CountingReceiver, name: str, cache: str) -> list[str]:
    arguments = ["--forward", receiver.traces_url, "--protocol", "http/protobuf", "--embedder", name]
    return [*arguments, "--no-spool", "--no-events", "--embedding-cache", cache]


def _through_serve(name: str, spans: Sequence[ReadableSpan], cache: str) -> dict[str, float]:
    """CPU- and wall-seconds of a ``serve`` process over ``spans`` (after a warm-up of other agents)."""
    warm_up = _warm_up(6)
    with CountingReceiver() as receiver, GatewayProcess(_gateway_arguments(receiver, name, cache)) as gateway:
        send_all(gateway.port, requests_of(warm_up))
        if not receiver.wait_for(len(warm_up)):
            raise RuntimeError("the gateway forwarded too little of the warm-up")
        _settle([gateway])
        before, cpu = receiver.count(), gateway.cpu_seconds()
        wall = time.perf_counter()
        send_all(gateway.port, requests_of(spans))
        if not receiver.wait_for(before + len(spans), timeout=600):
            raise RuntimeError("the gateway forwarded too little")
        return {"cpu": gateway.cpu_seconds() - cpu, "wall": time.perf_counter() - wall}


def _replicas(name: str, spans: Sequence[ReadableSpan], count: int, cache: str) -> dict[str, float]:
    """Wall- and CPU-seconds of ``count`` ``serve`` processes, sharing the cache file ``cache``, taking
    ``spans`` split by trace id."""
    shares: list[list[ReadableSpan]] = [[] for _ in range(count)]
    for span in spans:
        assert span.context is not None
        shares[span.context.trace_id % count].append(span)
    warm_up = _warm_up(2)
    with CountingReceiver() as receiver, contextlib.ExitStack() as stack:
        gateways = [
            stack.enter_context(GatewayProcess(_gateway_arguments(receiver, name, cache)))
            for _ in range(count)
        ]
        for gateway in gateways:  # load the model in each before the clock starts
            send_all(gateway.port, requests_of(warm_up))
        if not receiver.wait_for(count * len(warm_up)):
            raise RuntimeError("the gateways forwarded too little of the warm-up")
        _settle(gateways)
        before, cpu = receiver.count(), sum(gateway.cpu_seconds() for gateway in gateways)
        wall = time.perf_counter()
        senders = [
            threading.Thread(target=send_all, args=(gateway.port, requests_of(share)))
            for gateway, share in zip(gateways, shares, strict=True)
        ]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
        if not receiver.wait_for(before + len(spans), timeout=600):
            raise RuntimeError("the gateways forwarded too little")
        wall = time.perf_counter() - wall
        return {"wall": wall, "cpu": sum(gateway.cpu_seconds() for gateway in gateways) - cpu}


def _row(
    name: str, value: float, unit: str, baseline: float, ratio: float, target: str, **more: Any
) -> dict[str, Any]:
    def shown(number: float) -> float:
        return round(number, 3 if abs(number) < 100 else 1)

    return {
        "name": name,
        "value": shown(value),
        "unit": unit,
        "baseline": shown(baseline),
        "ratio": round(ratio, 3),
        "target": target,
        **more,
    }


def measure(name: str, raw: Embedder, runs: int = FLEET_RUNS) -> list[dict[str, Any]]:
    """Every row of one embedder (see the module's docstring)."""
    hour_one, hour_two, hour_three = (fleet_spans(runs, turns=turns) for turns in (1, 2, 3))
    raw.embed(["warm up the model"])
    recording = _Recording(raw)
    cache = EmbeddingCache(recording, path="none", max_entries=100_000)
    rows = []
    steady_rate = 0.0
    for label, spans in (("cold", hour_one), ("steady", hour_two)):
        run = _in_process(cache, recording, spans)
        floor_cpu = _floor(raw, run["texts"], spans)
        choosing = tool_choosing(spans)
        steady_rate = len(spans) / run["wall"]
        rows.append(
            _row(
                f"fleet.in_process.{label}.evaluations_per_cpu_s[{name}]",
                run["evaluated"] / run["cpu"],
                "evaluations/CPU-s",
                run["evaluated"] / floor_cpu,
                floor_cpu / run["cpu"],
                "report (baseline: the floor, raw model on new texts + reading the spans)",
                spans=len(spans),
                evaluated=run["evaluated"],
                tool_choosing_per_cpu_s=round(choosing / run["cpu"], 1),
                texts_embedded=len(run["texts"]),
                cpu_s=round(run["cpu"], 2),
                floor_cpu_s=round(floor_cpu, 2),
            )
        )
    p50, p99 = _delays(cache, hour_three[: len(hour_three) // 2], 0.5 * steady_rate)
    rows.append(
        _row(
            f"fleet.in_process.delay_ms[{name}]",
            p50,
            "ms (p50)",
            0,
            0,
            "report (p99 beside it)",
            p99_ms=round(p99, 1),
        )
    )
    evaluated = rows[0]["evaluated"]
    with tempfile.TemporaryDirectory() as directory:
        file = str(Path(directory) / "embeddings.sqlite")
        cold = _through_serve(name, hour_one, "none")
        _through_serve(name, hour_one, file)  # the gateway that fills the file, then stops
        restarted = _through_serve(name, hour_two, file)
        # Each replica count takes an hour of its own (new turns), so none finds the last one's in the file.
        scaled = {
            count: _replicas(name, fleet_spans(runs, turns=10 + count), count, file) for count in (1, 2, 4)
        }
    for label, served in (("cold", cold), ("restarted", restarted)):
        rows.append(
            _row(
                f"fleet.serve.{label}.evaluations_per_cpu_s[{name}]",
                evaluated / served["cpu"],
                "evaluations/CPU-s",
                rows[0 if label == "cold" else 1]["value"],
                evaluated / served["cpu"] / rows[0 if label == "cold" else 1]["value"],
                "report (baseline: in-process, cold / steady)",
                cpu_s=round(served["cpu"], 2),
                wall_s=round(served["wall"], 2),
            )
        )
    single = evaluated / scaled[1]["wall"]
    for count, taken in scaled.items():
        rate = evaluated / taken["wall"]
        rows.append(
            _row(
                f"fleet.serve.replicas_{count}.evaluations_per_s[{name}]",
                rate,
                "evaluations/s (wall)",
                single,
                rate / single,
                "report (baseline: one replica; one shared cache file; 2 shared cores)",
                evaluations_per_cpu_s=round(evaluated / taken["cpu"], 1),
                cpu_s=round(taken["cpu"], 2),
                wall_s=round(taken["wall"], 2),
            )
        )
    return rows


def _intra_op_threads() -> list[dict[str, Any]]:
    """Raw MiniLM over 256 new texts with 1 and 2 onnxruntime threads: texts per wall- and CPU-second."""
    texts = [f"user: please look at order {i} for customer {i * 31} in region {i % 7}" for i in range(256)]
    rates = {}
    for threads in (1, 2):
        model = MiniLMEmbedder(intra_op_num_threads=threads)
        model.embed(["warm up"])
        cpu, wall = time.process_time(), time.perf_counter()
        for start in range(0, len(texts), _EMBED_BATCH):
            model.embed([f"{text} ({threads})" for text in texts[start : start + _EMBED_BATCH]])
        rates[threads] = (len(texts) / (time.perf_counter() - wall), len(texts) / (time.process_time() - cpu))
    return [
        _row(
            "fleet.minilm.intra_op_threads_2.texts_per_s",
            rates[2][0],
            "texts/s (wall)",
            rates[1][0],
            rates[2][0] / rates[1][0],
            "report (baseline: 1 thread, the default)",
            texts_per_cpu_s=round(rates[2][1], 1),
            baseline_texts_per_cpu_s=round(rates[1][1], 1),
        )
    ]


def run() -> list[dict[str, Any]]:
    """Rows for the hashing embedder and MiniLM (one intra-op thread), on the same fleet traffic."""
    return measure("hashing", HashingEmbedder()) + measure("minilm", MiniLMEmbedder()) + _intra_op_threads()


if __name__ == "__main__":
    for row in run():
        print(row)

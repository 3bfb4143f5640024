"""Gateway throughput: spans/s through one ``otel-shapecheck serve`` process, against a pass-through gateway.

The gateway runs as its own process (as deployed), listening on 127.0.0.1 and forwarding over OTLP/HTTP
to a span-counting receiver in another process. The benchmark process sends pre-encoded OTLP/gRPC
export requests of 512 spans from two threads (the way a Collector's exporter batches), retrying after
the delay a ``RESOURCE_EXHAUSTED`` answer suggests, and times from the first request until the receiver
has counted every span. Two mixes: ordinary spans (HTTP server spans, nothing to evaluate) and GenAI
agent turns (six spans a turn, four of them GenAI, every check applying). The baseline is the same
gateway started with ``--no-checks`` (receive, convert, forward), measured in the same run. Besides
spans/s the rows give spans per CPU-second of the gateway process (its user + system time), the figure to
size replicas by: on a loaded machine wall time is shared, CPU time is what a replica's core buys.
Evaluation events are off (``--no-events``) so the receiver counts spans only; every gateway spools in
a temporary directory. :mod:`benchmarks.gateway_ingest` adds the spool's and TLS's cost to a sender
(acknowledgement latency, throughput) and RSS after a drain of big tool spans. Run alone with
``python -m benchmarks bench_gateway``.
"""

from __future__ import annotations

import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanKind

from benchmarks import gateway_ingest
from benchmarks.bench_end_to_end import CountingReceiver, _Recorder, agent_spans

GENAI_TURNS = 1_500
PLAIN_SPANS = 9_000
SPANS_PER_REQUEST = 512
SENDERS = 2
_ROUNDS = 2
_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def plain_spans(count: int) -> list[ReadableSpan]:
    """``count`` ended HTTP server spans, ten to a trace: nothing for the checks."""
    recorder = _Recorder()
    provider = TracerProvider(resource=Resource({"service.name": "bench-api"}), shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("bench.http")
    for number in range(count // 10):
        with tracer.start_as_current_span("GET /orders", kind=SpanKind.SERVER) as root:
            root.set_attributes(
                {"http.request.method": "GET", "http.route": "/orders", "url.path": "/orders"}
            )
            for child in range(9):
                with tracer.start_as_current_span("SELECT orders", kind=SpanKind.CLIENT) as query:
                    query.set_attributes(
                        {"db.system.name": "postgresql", "db.query.text": f"q{number}.{child}"}
                    )
    provider.shutdown()
    return recorder.spans


def requests_of(spans: Sequence[ReadableSpan]) -> list[bytes]:
    """The spans as serialized OTLP export requests of :data:`SPANS_PER_REQUEST` spans."""
    return [
        encode_spans(spans[start : start + SPANS_PER_REQUEST]).SerializeToString()
        for start in range(0, len(spans), SPANS_PER_REQUEST)
    ]


class GatewayProcess:
    """``otel-shapecheck serve`` in a child process, forwarding to ``forward``; stopped with SIGTERM."""

    def __init__(self, forward: str, *, embedder: str | None) -> None:
        self._spool = tempfile.TemporaryDirectory()
        self._command = [
            sys.executable,
            "-m",
            "otel_shapecheck",
            "serve",
            "--grpc",
            "127.0.0.1:0",
            "--forward",
            forward,
            "--protocol",
            "http/protobuf",
            "--no-events",
            "--max-queue-size",
            "65536",
            "--spool-dir",
            self._spool.name,
        ]
        self._command.extend(["--embedder", embedder] if embedder else ["--no-checks"])
        self.port = 0

    def __enter__(self) -> GatewayProcess:
        env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        self._process = subprocess.Popen(
            self._command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert self._process.stdout is not None
        found = re.search(r"grpc=127\.0\.0\.1:(\d+)", self._process.stdout.readline())
        if found is None:
            self._process.kill()
            raise RuntimeError("the gateway process did not start")
        self.port = int(found.group(1))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(60)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._spool.cleanup()

    def rss_megabytes(self) -> float:
        """Resident memory of the gateway process now."""
        with open(f"/proc/{self._process.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def cpu_seconds(self) -> float:
        """User + system CPU time of the gateway process so far."""
        with open(f"/proc/{self._process.pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS


def _send_all(port: int, requests: Sequence[bytes]) -> int:
    """Send every request from :data:`SENDERS` threads; returns how many answers were backpressure."""
    refused = [0]
    lock = threading.Lock()
    pending = iter(list(requests))

    def sender() -> None:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            export = channel.unary_unary(
                "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
                request_serializer=lambda body: body,
                response_deserializer=lambda body: body,
            )
            while True:
                with lock:
                    body = next(pending, None)
                if body is None:
                    return
                while True:
                    try:
                        export(body, timeout=60)
                        break
                    except grpc.RpcError as error:
                        if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED:
                            raise
                        with lock:
                            refused[0] += 1
                        time.sleep(0.05)

    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return refused[0]


def _round(
    gateway: GatewayProcess, receiver: CountingReceiver, spans: Sequence[ReadableSpan]
) -> dict[str, float]:
    requests = requests_of(spans)
    before = receiver.count()
    cpu_before = gateway.cpu_seconds()
    start = time.perf_counter()
    refused = _send_all(gateway.port, requests)
    if not receiver.wait_for(before + len(spans), timeout=600):
        raise RuntimeError(f"the receiver got {receiver.count() - before} of {len(spans)} spans")
    elapsed = time.perf_counter() - start
    cpu = gateway.cpu_seconds() - cpu_before
    return {
        "spans_per_s": len(spans) / elapsed,
        "spans_per_cpu_s": len(spans) / cpu,
        "refused": refused,
        "rss_mb": gateway.rss_megabytes(),
    }


@contextmanager
def _gateway(receiver: CountingReceiver, *, embedder: str | None) -> Iterator[GatewayProcess]:
    with GatewayProcess(receiver.traces_url, embedder=embedder) as gateway:
        _round(gateway, receiver, plain_spans(1_000))  # warm up: imports, channels, first batches
        _round(gateway, receiver, agent_spans(100))
        yield gateway


_GATEWAYS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "pass_through": (None, ("plain", "genai")),
    "hashing": ("hashing", ("plain", "genai")),
    "minilm": ("minilm", ("genai",)),
}
"""Gateway kinds: the embedder it scores tool choice with (``None``: ``--no-checks``) and the mixes sent."""


def measure(rounds: int = _ROUNDS) -> dict[str, dict[str, list[dict[str, float]]]]:
    """Each mix through each kind of gateway, ``rounds`` times alternating kinds, fresh spans each time."""
    mixes = {"plain": lambda: plain_spans(PLAIN_SPANS), "genai": lambda: agent_spans(GENAI_TURNS)}
    results: dict[str, dict[str, list[dict[str, float]]]] = {
        kind: {mix: [] for mix in sent} for kind, (_, sent) in _GATEWAYS.items()
    }
    with CountingReceiver() as receiver:
        for _ in range(rounds):
            for kind, (embedder, sent) in _GATEWAYS.items():
                with _gateway(receiver, embedder=embedder) as gateway:
                    for mix in sent:
                        results[kind][mix].append(_round(gateway, receiver, mixes[mix]()))
    return results


def _row(
    kind: str, mix: str, metric: str, unit: str, results: dict[str, dict[str, list[dict[str, float]]]]
) -> dict[str, Any]:
    value = statistics.median(entry[metric] for entry in results[kind][mix])
    base = statistics.median(entry[metric] for entry in results["pass_through"][mix])
    described = "ordinary spans" if mix == "plain" else "GenAI agent turns (4 of 6 spans evaluated)"
    return {
        "name": f"gateway.{mix}.{metric}[{kind}]",
        "value": round(value, 1),
        "unit": unit,
        "baseline": round(base, 1),
        "ratio": round(value / base, 3),
        "target": f"report; {described}; baseline: the same gateway with --no-checks",
        "refused_requests": sum(entry["refused"] for entry in results[kind][mix]),
        "gateway_rss_mb": round(max(entry["rss_mb"] for entry in results[kind][mix]), 1),
        "pass_through_rss_mb": round(max(entry["rss_mb"] for entry in results["pass_through"][mix]), 1),
    }


def run() -> list[dict[str, Any]]:
    """spans/s and spans per gateway CPU-second per mix and embedder, against the pass-through gateway;
    acknowledgement latency and throughput with the spool and TLS against none; RSS after a drain."""
    results = measure()
    rows = [
        _row(kind, mix, metric, unit, results)
        for kind, (embedder, sent) in _GATEWAYS.items()
        if embedder is not None
        for mix in sent
        for metric, unit in (("spans_per_s", "spans/s"), ("spans_per_cpu_s", "spans/CPU-s"))
    ]
    return rows + gateway_ingest.rows(gateway_ingest.measure_ingest(), gateway_ingest.measure_memory())


if __name__ == "__main__":
    for row in run():
        print(row)

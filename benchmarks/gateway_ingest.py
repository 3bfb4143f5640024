"""What the spool and TLS cost a sender, and what a gateway keeps in memory after a drain.

Each measurement starts ``otel-shapecheck serve`` in a child process (checks on, hashing embedder, no
evaluation events) forwarding over OTLP/HTTP to the span-counting receiver of ``bench_end_to_end``.

- **Acknowledgement latency and throughput**: two threads POST pre-encoded OTLP/HTTP requests of 512
  ordinary spans over kept-alive connections; each request is timed from sending to its 200 (the
  acknowledgement, which with a spool means "committed to sqlite"), and throughput runs until the
  receiver has counted every span. Three gateways: ``--no-spool`` (memory), the sqlite spool
  (``synchronous=NORMAL``, the default), and the sqlite spool behind TLS with a bearer token.
- **Memory after a drain**: 300 tool spans with a 3 MB result each (the issue's case), one request each,
  then RSS once everything is forwarded, against RSS before they were sent.
"""

from __future__ import annotations

import http.client
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from benchmarks._gateway_traffic import SPANS_PER_REQUEST, GatewayProcess, in_senders
from benchmarks.bench_end_to_end import CountingReceiver

REQUESTS = 60
BIG_SPANS = 300
BIG_RESULT_BYTES = 3_000_000
TOKEN = "bench-token"


def _plain_request(first: int) -> bytes:
    spans = [
        Span(
            name="GET /orders",
            trace_id=(first // 10 + 1).to_bytes(16, "big"),
            span_id=(first + number + 1).to_bytes(8, "big"),  # 0 is no id: rejected at the door
            kind=Span.SPAN_KIND_SERVER,
            start_time_unix_nano=1_700_000_000_000_000_000,
            end_time_unix_nano=1_700_000_000_100_000_000,
            attributes=[KeyValue(key="http.route", value=AnyValue(string_value="/orders"))],
        )
        for number in range(SPANS_PER_REQUEST)
    ]
    return _request(spans)


def _tool_request(number: int) -> bytes:
    text = lambda key, value: KeyValue(key=key, value=AnyValue(string_value=value))  # noqa: E731
    span = Span(
        name="execute_tool lookup",
        trace_id=(10_000 + number).to_bytes(16, "big"),
        span_id=(1 + number).to_bytes(8, "big"),
        parent_span_id=(900_000 + number).to_bytes(8, "big"),
        start_time_unix_nano=1_700_000_000_000_000_000,
        end_time_unix_nano=1_700_000_000_100_000_000,
        attributes=[
            text("gen_ai.operation.name", "execute_tool"),
            text("gen_ai.tool.name", "lookup"),
            text("gen_ai.tool.call.result", f"{number:08d}" + "r" * BIG_RESULT_BYTES),
        ],
    )
    return _request([span])


def _request(spans: list[Span]) -> bytes:
    request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
    return request.SerializeToString()


def _certificate(directory: Path) -> tuple[Path, Path]:
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def _gateway(receiver: CountingReceiver, directory: Path, *extra: str) -> GatewayProcess:
    """The gateway over HTTP, hashing embedder, forwarding to ``receiver``, spooled under ``directory``."""
    arguments = [
        "--forward", receiver.traces_url, "--protocol", "http/protobuf", "--no-events",
        "--embedder", "hashing", "--max-queue-size", "65536", *extra,
    ]  # fmt: skip
    if "--no-spool" not in extra:
        arguments += ["--spool-dir", str(directory / "spool")]
    return GatewayProcess(arguments, listener="http", stop_seconds=120)


def _send(port: int, bodies: Sequence[bytes], tls: ssl.SSLContext | None) -> list[float]:
    """POST every body from SENDERS threads; the acknowledgement latency of each, in seconds."""
    latencies: list[float] = []
    lock = threading.Lock()
    pending = iter(list(bodies))
    headers = {"Content-Type": "application/x-protobuf"}
    if tls is not None:
        headers["Authorization"] = f"Bearer {TOKEN}"

    def sender() -> None:
        connection: http.client.HTTPConnection = (
            http.client.HTTPSConnection("127.0.0.1", port, context=tls, timeout=120)
            if tls is not None
            else http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        )
        while True:
            with lock:
                body = next(pending, None)
            if body is None:
                connection.close()
                return
            while True:
                started = time.perf_counter()
                connection.request("POST", "/v1/traces", body=body, headers=headers)
                response = connection.getresponse()
                response.read()
                if response.status == 200:
                    with lock:
                        latencies.append(time.perf_counter() - started)
                    break
                if response.status not in (429, 503):
                    raise RuntimeError(f"the gateway answered {response.status}")
                connection.close()
                time.sleep(0.05)

    in_senders(sender)
    return latencies


def _ingest_round(
    receiver: CountingReceiver, gateway: GatewayProcess, tls: ssl.SSLContext | None
) -> dict[str, float]:
    _send(
        gateway.port, [_plain_request(10_000_000 + n * SPANS_PER_REQUEST) for n in range(4)], tls
    )  # warm up
    bodies = [_plain_request(n * SPANS_PER_REQUEST) for n in range(REQUESTS)]
    total = REQUESTS * SPANS_PER_REQUEST
    time.sleep(0.5)
    before = receiver.count()
    start = time.perf_counter()
    latencies = sorted(_send(gateway.port, bodies, tls))
    if not receiver.wait_for(before + total, timeout=600):
        raise RuntimeError(f"the receiver got {receiver.count() - before} of {total} spans")
    elapsed = time.perf_counter() - start
    return {
        "spans_per_s": total / elapsed,
        "ack_p50_ms": 1000 * statistics.median(latencies),
        "ack_p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))],
    }


def measure_ingest(rounds: int = 2) -> dict[str, list[dict[str, float]]]:
    """Latency and throughput rounds for the memory, sqlite and sqlite+TLS gateways, alternating."""
    results: dict[str, list[dict[str, float]]] = {"memory": [], "sqlite": [], "sqlite_tls": []}
    with tempfile.TemporaryDirectory() as scratch, CountingReceiver() as receiver:
        directory = Path(scratch)
        cert, key = _certificate(directory)
        (directory / "tokens").write_text(f"{TOKEN}\n")
        context = ssl.create_default_context(cafile=str(cert))
        kinds: dict[str, tuple[tuple[str, ...], ssl.SSLContext | None]] = {
            "memory": (("--no-spool",), None),
            "sqlite": ((), None),
            "sqlite_tls": (
                (
                    "--tls-cert",
                    str(cert),
                    "--tls-key",
                    str(key),
                    "--auth-token-file",
                    str(directory / "tokens"),
                ),
                context,
            ),
        }
        for number in range(rounds):
            for kind, (extra, tls) in kinds.items():
                run_dir = directory / f"{kind}-{number}"
                run_dir.mkdir()
                with _gateway(receiver, run_dir, *extra) as gateway:
                    results[kind].append(_ingest_round(receiver, gateway, tls))
    return results


def measure_memory() -> dict[str, float]:
    """RSS of a gateway before, at the peak of, and after a drain of 300 tool spans of 3 MB."""
    with (
        tempfile.TemporaryDirectory() as scratch,
        CountingReceiver() as receiver,
        _gateway(receiver, Path(scratch)) as gateway,
    ):
        _send(gateway.port, [_plain_request(n * SPANS_PER_REQUEST) for n in range(4)], None)  # warm up
        receiver.wait_for(4 * SPANS_PER_REQUEST)
        time.sleep(1)
        baseline = gateway.rss_megabytes()
        peak = [baseline]
        stop = threading.Event()

        def watch() -> None:
            while not stop.wait(0.05):
                peak[0] = max(peak[0], gateway.rss_megabytes())

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        before = receiver.count()
        _send(gateway.port, [_tool_request(n) for n in range(BIG_SPANS)], None)
        if not receiver.wait_for(before + BIG_SPANS, timeout=600):
            raise RuntimeError("the big spans did not all arrive")
        time.sleep(3)
        stop.set()
        watcher.join()
        return {"baseline_mb": baseline, "peak_mb": peak[0], "after_drain_mb": gateway.rss_megabytes()}


def rows(ingest: dict[str, list[dict[str, float]]], memory: dict[str, float]) -> list[dict[str, Any]]:
    """Benchmark rows: spool and TLS against the memory gateway, and memory after a drain."""

    def median(kind: str, metric: str) -> float:
        return statistics.median(entry[metric] for entry in ingest[kind])

    out: list[dict[str, Any]] = []
    for kind, described in (
        ("sqlite", "the sqlite spool"),
        ("sqlite_tls", "the sqlite spool behind TLS + token"),
    ):
        for metric, unit in (("spans_per_s", "spans/s"), ("ack_p99_ms", "ms"), ("ack_p50_ms", "ms")):
            value, base = median(kind, metric), median("memory", metric)
            out.append(
                {
                    "name": f"gateway.ingest.{metric}[{kind}]",
                    "value": round(value, 2),
                    "unit": unit,
                    "baseline": round(base, 2),
                    "ratio": round(value / base, 3),
                    "target": f"report; OTLP/HTTP requests of 512 spans from 2 senders into {described}; "
                    "baseline: --no-spool",
                }
            )
    out.append(
        {
            "name": "gateway.memory.rss_after_drain_mb[300 x 3 MB tool spans]",
            "value": round(memory["after_drain_mb"], 1),
            "unit": "MB",
            "baseline": round(memory["baseline_mb"], 1),
            "ratio": round(memory["after_drain_mb"] / memory["baseline_mb"], 3),
            "target": "near the baseline (RSS before the spans were sent); was 1081 MB from 84 MB",
            "peak_mb": round(memory["peak_mb"], 1),
        }
    )
    return out

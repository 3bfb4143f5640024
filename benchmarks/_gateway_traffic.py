"""Traffic for the gateway benchmarks: plain spans as OTLP export requests, a gateway child process,
and gRPC senders that wait out backpressure."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence

import grpc
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanKind

from benchmarks.bench_end_to_end import _Recorder

SPANS_PER_REQUEST = 512
SENDERS = 2
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
    """``otel-shapecheck serve --<listener> 127.0.0.1:0 <arguments>`` in a child process, on the port it
    reports; stopped with SIGTERM (killed past ``stop_seconds``)."""

    def __init__(self, arguments: Sequence[str], *, listener: str = "grpc", stop_seconds: float = 60) -> None:
        self._command = [sys.executable, "-m", "otel_shapecheck", "serve", f"--{listener}", "127.0.0.1:0"]
        self._command.extend(arguments)
        self._listener = listener
        self._stop_seconds = stop_seconds
        self.port = 0

    def __enter__(self) -> GatewayProcess:
        env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "100"}
        self._process = subprocess.Popen(
            self._command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
        )
        assert self._process.stdout is not None
        found = re.search(rf"{self._listener}=127\.0\.0\.1:(\d+)", self._process.stdout.readline())
        if found is None:
            self._process.kill()
            raise RuntimeError("the gateway process did not start")
        self.port = int(found.group(1))
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(self._stop_seconds)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

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


def send_all(port: int, requests: Sequence[bytes]) -> int:
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

    in_senders(sender)
    return refused[0]


def in_senders(sender: Callable[[], None]) -> None:
    """Run ``sender`` on :data:`SENDERS` threads at once and wait for all of them."""
    threads = [threading.Thread(target=sender) for _ in range(SENDERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

"""Gateway pass-through against a plain receive-and-forward loop, in one process, over the same transport.

The baseline (:func:`forward_loop`) is what a gateway that does nothing would be: an OTLP/gRPC server
whose handler posts each received request body, as it is, to the destination over OTLP/HTTP and
answers. The gateway rows run :class:`~otel_shapecheck.gateway._gateway.Gateway` behind its own gRPC
listener, forwarding with the SDK's OTLP/HTTP exporter: with ``--no-checks`` (``evaluate=False``), and
with the checks on (hashing embedder) for traffic without GenAI spans, each with the spool ``serve``
uses by default (sqlite, in a temporary directory) and with the in-memory one (``--no-spool``). All of
them receive the same pre-encoded requests of 512 ordinary spans from two sender threads and are timed
from the first request until the span-counting receiver (another process) has counted every span.
Rounds alternate the variants; the rows give medians. Run alone with
``python -m benchmarks.gateway_passthrough``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager
from typing import Any

import grpc
import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter

from benchmarks._gateway_traffic import plain_spans, requests_of, send_all
from benchmarks.bench_end_to_end import CountingReceiver
from otel_shapecheck import ConformanceCheck, FiguresCheck, HashingEmbedder, ToolChoiceCheck
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._options import GatewayOptions
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.gateway._spool import MemorySpool, SqliteSpool

SPANS = 40_960
ROUNDS = 5
_EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_SPOOL_BYTES = 1 << 30


@contextmanager
def forward_loop(traces_url: str) -> Iterator[int]:
    """The baseline: receive an OTLP/gRPC export request, post its bytes to ``traces_url``, answer."""
    session = requests.Session()

    def export(body: bytes, context: grpc.ServicerContext) -> bytes:
        answer = session.post(
            traces_url, data=body, headers={"Content-Type": "application/x-protobuf"}, timeout=10
        )
        if answer.status_code != 200:
            context.abort(grpc.StatusCode.UNAVAILABLE, f"destination answered {answer.status_code}")
        return b""  # an empty ExportTraceServiceResponse

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(export)},
    )
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield port
    finally:
        server.stop(grace=None).wait()
        session.close()


@contextmanager
def gateway_port(traces_url: str, *, evaluate: bool, durable: bool) -> Iterator[int]:
    """The gateway (``evaluate=False`` is ``--no-checks``) behind its gRPC listener, forwarding to
    ``traces_url`` over OTLP/HTTP."""
    with tempfile.TemporaryDirectory() as directory:
        spool = SqliteSpool(directory, _SPOOL_BYTES) if durable else MemorySpool(_SPOOL_BYTES)
        gateway = Gateway(
            HttpSpanExporter(endpoint=traces_url, timeout=10),
            checks=[ToolChoiceCheck(embedder=HashingEmbedder()), ConformanceCheck(), FiguresCheck()]
            if evaluate
            else None,
            evaluate=evaluate,
            spool=spool,
            options=GatewayOptions(max_queue_size=65_536),
            schedule_delay_millis=100,
        )
        with GatewayService(gateway, grpc_address="127.0.0.1:0") as service:
            yield service.grpc_port


_Variant = Callable[[str], Any]
VARIANTS: dict[str, _Variant] = {
    "forward_loop": forward_loop,
    "no_checks": lambda url: gateway_port(url, evaluate=False, durable=True),
    "checks_plain": lambda url: gateway_port(url, evaluate=True, durable=True),
    "no_checks_memory_spool": lambda url: gateway_port(url, evaluate=False, durable=False),
    "checks_plain_memory_spool": lambda url: gateway_port(url, evaluate=True, durable=False),
}
"""The baseline and the gateway variants, each a context manager yielding the port to send to."""


def _spans_per_second(port: int, receiver: CountingReceiver, bodies: Sequence[bytes], spans: int) -> float:
    """Sent from the first request until the receiver counted the last span (its own clock reading,
    so the wait polls rarely and takes no CPU from what is measured)."""
    before = receiver.count()
    start = time.monotonic()
    send_all(port, bodies)
    deadline = start + 600
    while receiver.count() < before + spans:
        if time.monotonic() > deadline:
            raise RuntimeError(f"the receiver got {receiver.count() - before} of {spans} spans")
        time.sleep(0.1)
    return spans / (receiver.last_arrival() - start)


def measure(rounds: int = ROUNDS) -> dict[str, list[float]]:
    """spans/s of every variant, ``rounds`` times, alternating variants; a warm-up request first."""
    bodies = requests_of(plain_spans(SPANS))
    warm = bodies[:2]
    results: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with CountingReceiver() as receiver:
        for _ in range(rounds):
            for name, variant in VARIANTS.items():
                with variant(receiver.traces_url) as port:
                    _spans_per_second(port, receiver, warm, 2 * 512)
                    results[name].append(_spans_per_second(port, receiver, bodies, SPANS))
    return results


def rows(results: dict[str, list[float]]) -> list[dict[str, Any]]:
    """One row per gateway variant: median spans/s against the forward loop's."""
    base = statistics.median(results["forward_loop"])
    described = {
        "no_checks": "--no-checks, sqlite spool (serve's default)",
        "checks_plain": "checks on, non-GenAI traffic, sqlite spool",
        "no_checks_memory_spool": "--no-checks, --no-spool",
        "checks_plain_memory_spool": "checks on, non-GenAI traffic, --no-spool",
    }
    out = []
    for name, what in described.items():
        value = statistics.median(results[name])
        out.append(
            {
                "name": f"gateway.pass_through.spans_per_s[{name}]",
                "value": round(value, 1),
                "unit": "spans/s",
                "baseline": round(base, 1),
                "ratio": round(value / base, 3),
                "target": f">= 0.5; {what}; baseline: a plain receive-and-forward loop, same process",
                "rounds": [round(value, 1) for value in results[name]],
                "baseline_rounds": [round(value, 1) for value in results["forward_loop"]],
            }
        )
    return out


def run() -> list[dict[str, Any]]:
    """The pass-through rows."""
    return rows(measure())


if __name__ == "__main__":
    for row in run():
        print(row)

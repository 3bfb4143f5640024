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
(acknowledgement latency, throughput) and RSS after a drain of big tool spans;
:mod:`benchmarks.gateway_passthrough` compares the pass-through with a plain receive-and-forward loop.
Run alone with
``python -m benchmarks bench_gateway``.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from benchmarks import gateway_ingest, gateway_passthrough
from benchmarks._gateway_traffic import GatewayProcess, plain_spans, requests_of, send_all
from benchmarks.bench_end_to_end import CountingReceiver, agent_spans

GENAI_TURNS = 1_500
PLAIN_SPANS = 9_000
_ROUNDS = 2


def _round(
    gateway: GatewayProcess, receiver: CountingReceiver, spans: Sequence[ReadableSpan]
) -> dict[str, float]:
    requests = requests_of(spans)
    before = receiver.count()
    cpu_before = gateway.cpu_seconds()
    start = time.perf_counter()
    refused = send_all(gateway.port, requests)
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
    arguments = [
        *("--forward", receiver.traces_url, "--protocol", "http/protobuf", "--no-events"),
        *("--max-queue-size", "65536"),
        *(("--embedder", embedder) if embedder else ("--no-checks",)),
    ]
    with (
        tempfile.TemporaryDirectory() as spool,
        GatewayProcess([*arguments, "--spool-dir", spool]) as gateway,
    ):
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
    return (
        rows
        + gateway_ingest.rows(gateway_ingest.measure_ingest(), gateway_ingest.measure_memory())
        + gateway_passthrough.run()
    )


if __name__ == "__main__":
    for row in run():
        print(row)

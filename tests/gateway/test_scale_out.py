"""Scale-out by trace id, proven: the same fleet traffic split by trace id across several ``serve``
replicas (real processes, as behind the Collector's ``loadbalancing`` exporter) gives exactly the
verdicts, run summaries and counts of one gateway, every score to its last bit."""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from otlp_receiver import OTLPReceiver

from benchmarks._fleet import fleet_spans
from gateway.otlp_requests import post
from gateway.serve_process import ServeProcess, Summary, parse_summary

RUNS = 48
SPANS_PER_REQUEST = 40


def _replica(span: ReadableSpan, replicas: int) -> int:
    """Which replica a span goes to: a hash of its trace id, as the loadbalancing exporter routes."""
    assert span.context is not None
    digest = hashlib.blake2b(span.context.trace_id.to_bytes(16, "big"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % replicas


def _serve(receiver: OTLPReceiver, shares: Sequence[Sequence[ReadableSpan]]) -> list[Summary]:
    """One ``serve`` process per share, each sent its share in end order, then stopped; their summaries."""
    gateways = [ServeProcess(f"http://{receiver.grpc_endpoint}", None) for _ in shares]
    for gateway in gateways:
        gateway.__enter__()
    try:
        for gateway, share in zip(gateways, shares, strict=True):
            for start in range(0, len(share), SPANS_PER_REQUEST):
                body = encode_spans(share[start : start + SPANS_PER_REQUEST]).SerializeToString()
                assert post(gateway.ports["http"], "/v1/traces", body).status == 200
        for gateway in gateways:
            assert gateway.stop() == 0, gateway.stderr
    finally:
        for gateway in gateways:
            gateway.__exit__(None, None, None)
    return [parse_summary(gateway.stderr) for gateway in gateways]


def _verdicts(receiver: OTLPReceiver) -> Counter[tuple[str, str, str, tuple[tuple[str, Any], ...]]]:
    """Every forwarded span as (trace, span, name, its shapecheck attributes), counted."""
    return Counter(
        (
            span.trace_id,
            span.span_id,
            span.name,
            tuple(
                sorted((k, _hashable(v)) for k, v in span.attributes.items() if k.startswith("shapecheck."))
            ),
        )
        for span in receiver.spans
    )


def _hashable(value: Any) -> Any:
    """Lists as tuples; floats as they are (a score may not depend on how spans were batched)."""
    if isinstance(value, list):
        return tuple(_hashable(item) for item in value)
    return value


@pytest.mark.parametrize("replicas", [2, 3])
def test_replicas_split_by_trace_id_give_one_gateways_verdicts_runs_and_counts(replicas: int) -> None:
    spans = fleet_spans(RUNS)
    shares: list[list[ReadableSpan]] = [[] for _ in range(replicas)]
    for span in spans:
        shares[_replica(span, replicas)].append(span)
    assert all(shares), "every replica gets some traces"
    with OTLPReceiver() as one, OTLPReceiver() as many:
        (single,) = _serve(one, [spans])
        split = _serve(many, shares)
        alone, together = _verdicts(one), _verdicts(many)
    assert together == alone
    evaluated = [key for key in alone if any(name == "shapecheck.flagged" for name, _ in key[3])]
    runs = [key for key in alone if any(name.startswith("shapecheck.run.") for name, _ in key[3])]
    assert len(evaluated) > RUNS and len(runs) == RUNS  # verdicts and one run summary per agent run
    for field in ("accepted", "rejected", "forwarded", "left", "dropped"):
        assert sum(getattr(summary, field) for summary in split) == getattr(single, field), field
    assert single.accepted == len(spans) and not single.unaccounted

"""Evaluation events over the real OTLP exporters into a loopback receiver: healthy, down, slow, failing."""

from __future__ import annotations

import time

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanContext
from otlp_receiver import OTLPReceiver, unused_endpoint

from otel_shapecheck import EvaluationEventEmitter, EvaluationEventStats
from otel_shapecheck import _attributes as attrs

from .verdicts import figures_verdict, tool_choice_verdict

EXPORT_TIMEOUT_SECONDS = 0.5
FLUSH_TIMEOUT_MILLIS = 300
BOUND_SECONDS = 2.0
"""Generous upper bound for calls that must return within the configured timeouts (not a benchmark)."""


def _log_exporter(transport: str, grpc_endpoint: str, http_base: str) -> LogRecordExporter:
    if transport == "grpc":
        return GrpcLogExporter(endpoint=grpc_endpoint, insecure=True, timeout=EXPORT_TIMEOUT_SECONDS)
    return HttpLogExporter(
        endpoint=f"{http_base}/v1/logs", timeout=EXPORT_TIMEOUT_SECONDS, compression=Compression.Gzip
    )


def _events(transport: str, grpc_endpoint: str, http_base: str, **kwargs: object) -> EvaluationEventEmitter:
    return EvaluationEventEmitter(
        _log_exporter(transport, grpc_endpoint, http_base),
        resource=Resource.create({"service.name": "shapecheck-tests"}),
        schedule_delay_millis=20,
        flush_timeout_millis=FLUSH_TIMEOUT_MILLIS,
        **kwargs,  # type: ignore[arg-type]
    )


def _settled(events: EvaluationEventEmitter, expected: int, timeout: float = 5.0) -> EvaluationEventStats:
    """Wait until every emitted record has an outcome (exported or failed), then return the counts."""
    deadline = time.monotonic() + timeout
    while True:
        stats = events.stats()
        if stats.exported + stats.export_failed >= expected or time.monotonic() > deadline:
            return stats
        time.sleep(0.02)


@pytest.mark.parametrize("transport", ["grpc", "http"])
class TestDelivery:
    def test_records_arrive_with_ids_and_contract_attributes(
        self, transport: str, receiver: OTLPReceiver, span_context: SpanContext
    ) -> None:
        """Each flagged verdict arrives as a log record with the span's ids and the event attributes."""
        events = _events(transport, receiver.grpc_endpoint, receiver.http_endpoint)
        events.emit(span_context, [figures_verdict(), tool_choice_verdict(), figures_verdict(flagged=False)])
        assert events.force_flush()
        assert receiver.wait_for(lambda r: len(r.log_records) == 2, timeout=5)
        events.shutdown()
        records = {record.attributes[attrs.EVALUATION_NAME]: record for record in receiver.log_records}
        assert set(records) == {attrs.EVALUATION_FIGURES, attrs.EVALUATION_TOOL_CHOICE}
        for record in records.values():
            assert record.transport == transport
            assert record.event_name == attrs.EVALUATION_EVENT
            assert record.trace_id == format(span_context.trace_id, "032x")
            assert record.span_id == format(span_context.span_id, "016x")
            assert record.resource["service.name"] == "shapecheck-tests"
            assert record.scope == "otel_shapecheck"
            assert record.attributes[attrs.FLAGGED] is True
        figures = records[attrs.EVALUATION_FIGURES].attributes
        assert figures[attrs.EVALUATION_SCORE_VALUE] == pytest.approx(2 / 3)
        assert figures[attrs.EVALUATION_SCORE_LABEL] == "unsupported"
        assert figures[attrs.RESPONSE_ID] == "chatcmpl-42"
        assert figures[attrs.FLAGS] == (attrs.FLAG_FIGURES_UNSUPPORTED,)
        assert attrs.FIGURES_UNSUPPORTED not in figures
        tool_choice = records[attrs.EVALUATION_TOOL_CHOICE].attributes
        assert tool_choice[attrs.TOOL_CHOICE_CHOSEN] == ("get_weather",)
        assert tool_choice[attrs.TOOL_CHOICE_MARGIN] == pytest.approx(0.01)
        assert events.stats().exported == 2

    def test_receiver_down_blocks_nobody_and_counts_the_loss(
        self, transport: str, span_context: SpanContext
    ) -> None:
        """Nothing listening: emit and force_flush return within their bounds; the records count as failed."""
        grpc_endpoint, http_base = unused_endpoint()
        events = _events(transport, grpc_endpoint, http_base)
        started = time.monotonic()
        events.emit(span_context, [figures_verdict(), tool_choice_verdict()])
        emitted_after = time.monotonic() - started
        flushed = events.force_flush(timeout_millis=FLUSH_TIMEOUT_MILLIS)
        flushed_after = time.monotonic() - started
        assert emitted_after < BOUND_SECONDS
        assert flushed_after < BOUND_SECONDS
        assert flushed is False or events.stats().export_failed == 2
        stats = _settled(events, expected=2)
        assert (stats.exported, stats.export_failed, stats.dropped) == (0, 2, 2)
        events.shutdown()

    def test_slow_receiver_bounds_flush_and_counts_queue_drops(
        self, transport: str, receiver: OTLPReceiver, span_context: SpanContext
    ) -> None:
        """A receiver slower than the export timeout: flush stops at its bound; a full queue counts drops."""
        receiver.behave(delay_seconds=30.0)
        events = _events(
            transport,
            receiver.grpc_endpoint,
            receiver.http_endpoint,
            max_queue_size=4,
            max_export_batch_size=2,
        )
        started = time.monotonic()
        for _ in range(10):
            events.emit(span_context, [figures_verdict(), tool_choice_verdict()])
        emitted_after = time.monotonic() - started
        flushed = events.force_flush(timeout_millis=FLUSH_TIMEOUT_MILLIS)
        assert emitted_after < BOUND_SECONDS
        assert time.monotonic() - started < BOUND_SECONDS
        assert flushed is False
        stats = events.stats()
        assert stats.dropped_queue_full > 0
        assert stats.emitted + stats.dropped_queue_full == 20
        events.shutdown()
        assert time.monotonic() - started < 2 * BOUND_SECONDS

    @pytest.mark.parametrize("status", [400, 503])
    def test_error_answers_are_counted_as_failed(
        self, transport: str, status: int, receiver: OTLPReceiver, span_context: SpanContext
    ) -> None:
        """An error answer (retryable or not): no exception escapes; the records count as failed."""
        receiver.behave(error_status=status)
        events = _events(transport, receiver.grpc_endpoint, receiver.http_endpoint)
        events.emit(span_context, [figures_verdict()])
        events.force_flush(timeout_millis=FLUSH_TIMEOUT_MILLIS)
        stats = _settled(events, expected=1)
        assert (stats.exported, stats.export_failed) == (0, 1)
        assert receiver.requests >= 1
        assert receiver.log_records == []
        events.shutdown()

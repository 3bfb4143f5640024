"""Gateway mode: the checks for agents in any language, as a service that receives OTLP and forwards it.

Received spans become SDK ``ReadableSpan`` values and go through the same :class:`ShapecheckSpanProcessor`
an in-process application registers; received log records go through its log side (GenAI content
events), then on to the forward endpoint with the spans. Enriched spans leave through a
``BatchSpanProcessor`` around the given span exporter, flagged evaluation events through the given
verdict sink. The transports (``_gateway_grpc``, ``_gateway_http``) only parse requests and map the
answers of :meth:`Gateway.export_spans` and :meth:`Gateway.export_log_records` onto their status codes.

Usage::

    gateway = Gateway(OTLPSpanExporter(endpoint="collector:4317", insecure=True),
                      OTLPLogExporter(endpoint="collector:4317", insecure=True))
    answer = gateway.export_spans(decode_spans(request))
    ...
    gateway.shutdown()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_shapecheck._attributes import FLAGGED
from otel_shapecheck._settings import non_negative_float, positive_int
from otel_shapecheck.checks._base import Check
from otel_shapecheck.environment_variables import (
    OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE,
    OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES,
    OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
)
from otel_shapecheck.gateway._admission import Admission, AdmissionBudget
from otel_shapecheck.gateway._decode import Decoded
from otel_shapecheck.otlp._counting import CountingLogExporter, CountingSpanExporter
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._shapecheck import Shapecheck
from otel_shapecheck.pipeline._sinks import VerdictSink

logger = logging.getLogger(__name__)


_DEFAULT_MAX_QUEUE_SIZE = 16384
_DEFAULT_RETRY_AFTER_SECONDS = 1.0
_DEFAULT_MAX_REQUEST_BYTES = 4 * 1024 * 1024
_DEFAULT_EXPORT_BATCH_SIZE = 512
_DRAIN_REQUESTS_SECONDS = 10.0
_NO_ATTRIBUTES: frozenset[str] = frozenset()


def max_request_bytes(explicit: int | None = None) -> int:
    """The largest request body the transports accept, decompressed (argument, variable, 4 MiB)."""
    return positive_int(
        "max_request_bytes", explicit, OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES, _DEFAULT_MAX_REQUEST_BYTES
    )


def resolve_retry_after(explicit: float | None = None) -> float:
    """The retry delay suggested to refused senders (argument, variable, 1 s)."""
    return non_negative_float(
        "retry_after_seconds",
        explicit,
        OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
        _DEFAULT_RETRY_AFTER_SECONDS,
    )


def gateway_queue_size(explicit: int | None = None) -> int:
    """Items accepted and not yet exported; past it senders get backpressure (argument, variable, 16384)."""
    return positive_int(
        "max_queue_size", explicit, OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE, _DEFAULT_MAX_QUEUE_SIZE
    )


def gateway_processor_options(capacity: int, *, max_wait_millis: int | None = None) -> ProcessorOptions:
    """The span processor's bounds fitted to a gateway queue of ``capacity`` items.

    Its worker queue holds the whole capacity (no admitted span is forwarded un-evaluated for want of
    room) and at most half of it waits for facts (waiting spans cannot take the whole queue).
    """
    return ProcessorOptions(
        max_queue_size=capacity, max_pending_spans=max(1, capacity // 2), max_wait_millis=max_wait_millis
    )


@dataclass(frozen=True)
class ExportAnswer:
    """The gateway's answer to one export request, for a transport to encode."""

    admission: Admission
    accepted: int
    """Items taken (0 unless admitted)."""
    rejected: int
    """Items that could not be read (partial success), counted whatever the admission."""
    error_message: str
    """Partial-success message, or why the request was refused."""
    retry_after_seconds: float
    """How long a refused sender should wait before retrying."""


@dataclass(frozen=True)
class GatewayCounts:
    """What the gateway did since it started."""

    spans_accepted: int
    log_records_accepted: int
    rejected: int
    refused_full: int
    in_flight: int
    spans_exported: int
    spans_export_failed: int
    log_records_exported: int
    log_records_export_failed: int


class Gateway:
    """Receives decoded OTLP, admits it against a bounded queue, evaluates spans, forwards everything.

    Args:
        span_exporter: where spans go (enriched where a check applied); wrapped in a ``BatchSpanProcessor``.
        log_exporter: where received log records go; ``None`` keeps them for the checks only.
        events: where verdicts go as evaluation events (e.g. a ``EvaluationEventEmitter``); ``None`` for none.
        checks: the checks to run (default: every built-in check).
        evaluate: ``False`` makes a pass-through gateway: spans go straight to the batch processor.
        max_queue_size: spans and log records accepted and not yet handed to an exporter; a request that
            does not fit is refused with backpressure (``OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE``, 16384).
        retry_after_seconds: the retry delay suggested to refused senders
            (``OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS``, 1).
        schedule_delay_millis: the batch processors' export delay (default: ``OTEL_BSP_SCHEDULE_DELAY`` and
            ``OTEL_BLRP_SCHEDULE_DELAY``, as for any SDK batch processor).
        options: the span processor's bounds (default: :func:`gateway_processor_options` of the capacity).

    Raises:
        ValueError: a setting (argument or variable) out of range.
    """

    def __init__(
        self,
        span_exporter: SpanExporter,
        log_exporter: LogRecordExporter | None = None,
        *,
        events: VerdictSink | None = None,
        checks: Sequence[Check] | None = None,
        evaluate: bool = True,
        max_queue_size: int | None = None,
        retry_after_seconds: float | None = None,
        schedule_delay_millis: int | None = None,
        options: ProcessorOptions | None = None,
    ) -> None:
        capacity = gateway_queue_size(max_queue_size)
        self._retry_after = resolve_retry_after(retry_after_seconds)
        self._budget = AdmissionBudget(capacity)
        self._span_exporter = CountingSpanExporter(span_exporter, after_export=self._budget.release)
        # Sized to hold every admitted item: the batch processor never drops what was acknowledged.
        batch_size = min(_DEFAULT_EXPORT_BATCH_SIZE, capacity)
        self._batch_spans = BatchSpanProcessor(
            self._span_exporter,
            max_queue_size=capacity,
            max_export_batch_size=batch_size,
            schedule_delay_millis=schedule_delay_millis,
        )
        self._log_exporter: CountingLogExporter | None = None
        self._batch_logs: LogRecordProcessor | None = None
        if log_exporter is not None:
            self._log_exporter = CountingLogExporter(log_exporter, after_export=self._budget.release)
            self._batch_logs = BatchLogRecordProcessor(
                self._log_exporter,
                max_queue_size=capacity,
                max_export_batch_size=batch_size,
                schedule_delay_millis=schedule_delay_millis,
            )
        self._shapecheck: Shapecheck | None = None
        self._spans: SpanProcessor = self._batch_spans
        if evaluate:
            if options is None:
                options = gateway_processor_options(capacity)
            try:
                self._shapecheck = Shapecheck(
                    self._batch_spans, events=events, checks=checks, options=options
                )
            except Exception:
                self._release_exporters()
                raise
            self._spans = self._shapecheck.span_processor
        self._lock = threading.Lock()
        self._spans_accepted = 0
        self._log_records_accepted = 0
        self._rejected = 0
        self._is_shutdown = False

    @property
    def budget(self) -> AdmissionBudget:
        """The admission bound the transports consult for in-progress requests."""
        return self._budget

    @property
    def retry_after_seconds(self) -> float:
        """The retry delay suggested to refused senders."""
        return self._retry_after

    @property
    def evaluates(self) -> bool:
        """Whether spans go through the checks (False for a pass-through gateway)."""
        return self._shapecheck is not None

    def export_spans(self, decoded: Decoded) -> ExportAnswer:
        """Admit the readable spans of one request and hand them to the processor; never raises.

        A span that already carries verdicts (evaluated by an in-process processor or an earlier gateway)
        is forwarded as it is: evaluating it again would repeat its evaluation events.
        """
        answer = self._admit(decoded, len(decoded.spans))
        if answer.admission is Admission.ACCEPTED:
            evaluate, forward = self._spans.on_end, self._batch_spans.on_end
            for span in decoded.spans:  # the processor and the batch processor never raise
                (forward if FLAGGED in (span.attributes or _NO_ATTRIBUTES) else evaluate)(span)
            with self._lock:
                self._spans_accepted += len(decoded.spans)
        return answer

    def export_log_records(self, decoded: Decoded) -> ExportAnswer:
        """Admit the readable log records of one request: the checks read them, then they are forwarded."""
        forwarded = len(decoded.log_records) if self._batch_logs is not None else 0
        answer = self._admit(decoded, forwarded)
        if answer.admission is Admission.ACCEPTED:
            for record in decoded.log_records:
                if self._shapecheck is not None:
                    self._shapecheck.log_processor.on_emit(record)
                if self._batch_logs is not None:
                    self._batch_logs.on_emit(record)
            with self._lock:
                self._log_records_accepted += len(decoded.log_records)
        return answer

    def _admit(self, decoded: Decoded, count: int) -> ExportAnswer:
        with self._lock:
            self._rejected += decoded.rejected
        admission = self._budget.admit(count) if count else Admission.ACCEPTED
        if admission is Admission.ACCEPTED:
            return ExportAnswer(admission, count, decoded.rejected, decoded.error_message, 0.0)
        reason = {
            Admission.FULL: (
                f"the gateway queue is full ({self._budget.capacity} items in flight); retry later"
            ),
            Admission.TOO_LARGE: (
                f"the request holds {count} items, more than the gateway queue "
                f"({self._budget.capacity}); send smaller batches"
            ),
            Admission.CLOSING: "the gateway is shutting down; send to another replica or retry later",
        }[admission]
        return ExportAnswer(admission, 0, decoded.rejected, reason, self._retry_after)

    def counts(self) -> GatewayCounts:
        """A snapshot of what was accepted, refused, exported and is still in flight."""
        logs = self._log_exporter
        with self._lock:
            return GatewayCounts(
                spans_accepted=self._spans_accepted,
                log_records_accepted=self._log_records_accepted,
                rejected=self._rejected,
                refused_full=self._budget.refused_full,
                in_flight=self._budget.in_flight,
                spans_exported=self._span_exporter.exported,
                spans_export_failed=self._span_exporter.failed,
                log_records_exported=logs.exported if logs else 0,
                log_records_export_failed=logs.failed if logs else 0,
            )

    def shutdown(self) -> None:
        """Refuse new requests, finish those in progress, evaluate and forward everything accepted, stop.

        Held spans are evaluated (``incomplete`` where facts are missing) and every accepted span and log
        record is handed to its exporter before the exporters shut down. Idempotent.
        """
        with self._lock:
            if self._is_shutdown:
                return
            self._is_shutdown = True
        if not self._budget.close(_DRAIN_REQUESTS_SECONDS):
            logger.warning("Export requests still running after %.0f s at shutdown", _DRAIN_REQUESTS_SECONDS)
        if self._shapecheck is not None:
            self._shapecheck.shutdown()  # evaluates and forwards what it holds, then shuts the batch down
        else:
            self._batch_spans.shutdown()  # type: ignore[no-untyped-call]
        self._release_logs()
        counts = self.counts()
        logger.info(
            "Gateway stopped: %d spans and %d log records accepted, %d exported spans, %d failed",
            counts.spans_accepted,
            counts.log_records_accepted,
            counts.spans_exported,
            counts.spans_export_failed,
        )

    def _release_logs(self) -> None:
        if self._batch_logs is not None:
            self._batch_logs.shutdown()

    def _release_exporters(self) -> None:
        self._batch_spans.shutdown()  # type: ignore[no-untyped-call]
        self._release_logs()

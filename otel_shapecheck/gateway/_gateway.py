"""Gateway mode: the checks for agents in any language, as a service that receives OTLP and forwards it.

A request passes the door (:meth:`Gateway.open_request`: room in the receiving and spool budgets, checked
before its body is read), is validated (:func:`~otel_shapecheck.gateway._decode.read_request`), stored
in the spool and only then acknowledged (:meth:`Gateway.accept`). The :class:`SpoolQueue` loads stored
requests into the pipeline as its item and byte budgets allow: received spans become SDK
``ReadableSpan`` values and go through the same :class:`ShapecheckSpanProcessor` an in-process
application registers, received log records through its log side, and both on to the forward endpoint
through batch processors whose exporters retry until the destination takes each batch. Spans that need
no evaluation (all of them with ``evaluate=False``) skip that conversion: their scope groups are forwarded
as the received protobuf (:mod:`~otel_shapecheck.gateway._passthrough`) over the span exporter's own
connection, under the same retries and spool accounting. An entry leaves the spool once every item in it
was forwarded; what a stop could not forward in time stays there.

Usage::

    gateway = Gateway(OTLPSpanExporter(endpoint="collector:4317", insecure=True),
                      OTLPLogExporter(endpoint="collector:4317", insecure=True),
                      spool=SqliteSpool("/var/lib/shapecheck", 1 << 30))
    ticket = gateway.open_request(len(body))            # a refusal is an ExportAnswer
    answer = gateway.accept(read_request("traces", body), ticket)
    gateway.close_request(ticket)
    ...
    counts = gateway.shutdown()
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_shapecheck._attributes import FLAGGED
from otel_shapecheck._settings import non_negative_float
from otel_shapecheck.checks._base import Check
from otel_shapecheck.gateway._admission import Admission, Budget, RequestGate
from otel_shapecheck.gateway._body import quiet, refusals
from otel_shapecheck.gateway._counts import ExportAnswer, GatewayCounts, Ticket
from otel_shapecheck.gateway._decode import Validated
from otel_shapecheck.gateway._drain import GatewayDrain, shut_down_batches
from otel_shapecheck.gateway._forward import ForwardingPolicy, RetryingLogExporter, RetryingSpanExporter
from otel_shapecheck.gateway._options import GatewayOptions
from otel_shapecheck.gateway._passthrough import RawForwarder, Split, raw_sender, split_request
from otel_shapecheck.gateway._queue import RawRef, SpoolQueue
from otel_shapecheck.gateway._spool import MemorySpool, Spool, SpoolFull
from otel_shapecheck.otlp._counting import CountingLogExporter, CountingSpanExporter
from otel_shapecheck.outputs._sinks import VerdictSink
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import internals
from otel_shapecheck.pipeline._shapecheck import Shapecheck

logger = logging.getLogger(__name__)

_DEFAULT_EXPORT_BATCH_SIZE = 512
_NO_ATTRIBUTES: frozenset[str] = frozenset()
_PER_SPAN_LOGGERS = ("opentelemetry.trace.span", "opentelemetry.attributes", "opentelemetry.sdk.trace")
"""The SDK loggers that warn once per span or value converted (tracestates, attributes, limits): the
door removes what makes them warn where it can, and what still does is throttled."""
for _name in _PER_SPAN_LOGGERS:
    quiet(_name)


class Gateway:
    """Receives OTLP requests, spools them, evaluates their spans and forwards every item.

    Args:
        span_exporter: where spans go (enriched where a check applied).
        log_exporter: where received log records go; ``None`` keeps them for the checks only.
        events: where verdicts go as evaluation events (e.g. an ``EvaluationEventEmitter``).
        checks: the checks to run (default: every built-in check).
        evaluate: ``False`` makes a pass-through gateway: spans go straight to the batch processor.
        spool: where accepted requests are kept until forwarded (default: a :class:`MemorySpool`).
        options: the gateway's bounds, retry delay and shutdown timeout (default: ``GatewayOptions()``,
            every setting from its variable or default).
        processor_options: the span processor's bounds (default: fitted to ``options`` by
            :meth:`GatewayOptions.processor_options`).
        give_up_after_seconds: drop a batch the destination keeps refusing after this long (default:
            retry until it is forwarded or the gateway stops).
        schedule_delay_millis: the batch processors' export delay (default: the SDK variables').
        pass_through: forward spans that need no evaluation as received, without converting them
            (when ``span_exporter`` is the SDK's OTLP/gRPC or OTLP/HTTP exporter; else every span is
            converted).

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
        spool: Spool | None = None,
        options: GatewayOptions | None = None,
        processor_options: ProcessorOptions | None = None,
        give_up_after_seconds: float | None = None,
        schedule_delay_millis: int | None = None,
        pass_through: bool = True,
    ) -> None:
        self.options = options = options if options is not None else GatewayOptions()
        capacity = options.max_queue_size
        self.capacity = capacity
        self.max_request_bytes = options.max_request_bytes
        self._retry_after = options.retry_after_seconds
        self.receiving = Budget(options.max_receiving_bytes)
        self.gate = RequestGate()
        self._spool: Spool = spool if spool is not None else MemorySpool(options.spool_bytes(durable=False))
        self.policy = ForwardingPolicy(give_up_after_seconds)
        send_raw = raw_sender(span_exporter) if pass_through else None
        self._raw: RawForwarder[RawRef] | None = None
        self._queue = SpoolQueue(
            self._spool,
            self._ingest,
            max_items=capacity,
            max_bytes=options.max_queue_bytes,
            abandoning=lambda: self.policy.stopped,
            split=self._split if send_raw is not None else None,
            forward_raw=self._forward_raw if send_raw is not None else None,
        )
        queue = self._queue
        self._span_exporter = CountingSpanExporter(
            RetryingSpanExporter(span_exporter, self.policy),
            before_batch=queue.before_spans,
            after_batch=queue.after_spans,
        )
        # Sized to hold every item in the pipeline: the batch processor never drops what was accepted.
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
            self._log_exporter = CountingLogExporter(
                RetryingLogExporter(log_exporter, self.policy),
                before_batch=queue.before_logs,
                after_batch=queue.after_logs,
            )
            self._batch_logs = BatchLogRecordProcessor(
                self._log_exporter,
                max_queue_size=capacity,
                max_export_batch_size=batch_size,
                schedule_delay_millis=schedule_delay_millis,
            )
        self._shapecheck: Shapecheck | None = None
        self._spans: SpanProcessor = self._batch_spans
        if evaluate:
            try:
                self._shapecheck = Shapecheck(
                    self._batch_spans,
                    events=events,
                    checks=checks,
                    options=processor_options
                    if processor_options is not None
                    else options.processor_options(),
                )
            except Exception:
                shut_down_batches(self._batch_spans, self._batch_logs)
                raise
            self._spans = self._shapecheck.span_processor
        if send_raw is not None:
            self._raw = RawForwarder(send_raw, self.policy, queue.raw_sent, queue.raw_after)
        self._lock = threading.Lock()
        self._spans_accepted = 0
        self._log_records_accepted = 0
        self._rejected = 0
        self._tracestates_dropped = 0
        self._refused_full = 0
        self._left: int | None = None
        self._is_shutdown = False
        self._drain = GatewayDrain(
            gate=self.gate,
            policy=self.policy,
            queue=queue,
            spool=self._spool,
            spans=self._spans,
            batch_spans=self._batch_spans,
            batch_logs=self._batch_logs,
            shapecheck=self._shapecheck,
            raw=self._raw,
        )
        queue.start()

    @property
    def retry_after_seconds(self) -> float:
        """The retry delay suggested to refused senders."""
        return self._retry_after

    @property
    def evaluates(self) -> bool:
        """Whether spans go through the checks (False for a pass-through gateway)."""
        return self._shapecheck is not None

    @property
    def spool(self) -> Spool:
        """Where accepted requests wait until forwarded."""
        return self._spool

    # The door.

    def open_request(self, declared_bytes: int | None, *, inflating: bool = False) -> Ticket | ExportAnswer:
        """Check the budgets for a request of ``declared_bytes`` (``None``: not declared, a chunked body)
        before its body is read.

        ``inflating`` (a compressed body) and an undeclared size reserve spool room for the largest
        request, since the size to store is not known yet. Call :meth:`close_request` with the ticket in
        any case.
        """
        if not self.gate.begin_request():
            return self._refusal(Admission.CLOSING, "the gateway is shutting down; retry later")
        ticket = Ticket()
        if not self.receiving.fits(declared_bytes or 0):
            self.close_request(ticket)
            return self._refusal(Admission.FULL, "the gateway is receiving too much at once; retry later")
        unknown = inflating or declared_bytes is None
        wanted = max(declared_bytes or 0, self.max_request_bytes if unknown else 0)
        if not self._spool.space.reserve(wanted):
            self.close_request(ticket)
            return self._refusal(Admission.FULL, f"the spool is full ({self._spool.space.max_bytes} bytes)")
        ticket.spool = wanted
        return ticket

    def receive(self, ticket: Ticket, size: int) -> bool:
        """Count ``size`` more bytes of the request held in memory; False when the budget has no room."""
        if not self.receiving.take(size):
            return False
        ticket.receiving += size
        return True

    def close_request(self, ticket: Ticket) -> None:
        """The request was answered: release what its ticket still holds."""
        self.receiving.release(ticket.receiving)
        self._spool.space.unreserve(ticket.spool)
        ticket.receiving = ticket.spool = 0
        self.gate.end_request()

    def accept(self, validated: Validated, ticket: Ticket) -> ExportAnswer:
        """Store a validated request in the spool and queue it for the pipeline; never raises.

        Answered ``ACCEPTED`` only once the request is stored.
        """
        with self._lock:
            self._rejected += validated.rejected
            self._tracestates_dropped += validated.tracestates_dropped
        if validated.items > self.capacity:
            return self._refusal(
                Admission.TOO_LARGE,
                f"the request holds {validated.items} items, more than the gateway pipeline "
                f"({self.capacity}); send smaller batches",
                validated,
            )
        if validated.items:
            size = len(validated.body)
            if size > ticket.spool:
                if not self._spool.space.reserve(size - ticket.spool):
                    return self._refusal(Admission.FULL, "the spool is full; retry later", validated)
                ticket.spool = size
            try:
                entry = self._spool.put(validated.kind, validated.body, validated.items, ticket.spool)
            except SpoolFull:  # logged by the spool, once per episode
                return self._refusal(Admission.FULL, "the spool's disk is full; retry later", validated)
            except Exception:
                refusals.failure("spool", "Storing a request in the spool failed; it is refused (retried)")
                return self._refusal(
                    Admission.FULL, "the spool could not store the request; retry", validated
                )
            ticket.spool = 0
            self._queue.add(entry, validated.message, validated.body)
            with self._lock:
                if validated.kind == "traces":
                    self._spans_accepted += validated.items
                else:
                    self._log_records_accepted += validated.items
        return ExportAnswer(
            Admission.ACCEPTED, validated.items, validated.rejected, validated.error_message, 0.0
        )

    def _refusal(self, admission: Admission, reason: str, validated: Validated | None = None) -> ExportAnswer:
        if admission is Admission.FULL:
            with self._lock:
                self._refused_full += 1
        rejected = validated.rejected if validated is not None else 0
        return ExportAnswer(admission, 0, rejected, reason, self._retry_after)

    # The pipeline.

    def _split(self, message: ExportTraceServiceRequest, body: bytes, done: bytearray) -> Split:
        state = internals(self._shapecheck.span_processor).state if self._shapecheck is not None else None
        return split_request(message, body, done, state)

    def _forward_raw(self, body: bytes, ref: RawRef, spans: int) -> None:
        if self._raw is not None:
            self._raw.forward(body, ref, spans)

    def _ingest(self, spans: Sequence[ReadableSpan], records: Sequence[ReadWriteLogRecord]) -> bool:
        if spans:
            evaluate, forward = self._spans.on_end, self._batch_spans.on_end
            for span in spans:  # the processor and the batch processor never raise
                (forward if FLAGGED in (span.attributes or _NO_ATTRIBUTES) else evaluate)(span)
        if records:
            for record in records:
                if self._shapecheck is not None:
                    self._shapecheck.log_processor.on_emit(record)
                if self._batch_logs is not None:
                    self._batch_logs.on_emit(record)
            return self._batch_logs is not None
        return True

    def counts(self) -> GatewayCounts:
        """A snapshot of what was accepted, refused, forwarded, and is in the pipeline or the spool."""
        logs = self._log_exporter
        queued = self._queue.counts
        with self._lock:
            return GatewayCounts(
                spans_accepted=self._spans_accepted,
                log_records_accepted=self._log_records_accepted,
                rejected=self._rejected,
                refused_full=self._refused_full,
                in_flight=self._queue.items.in_use,
                waiting=self._queue.pending,
                carried_over=queued.carried_over,
                in_doubt=queued.in_doubt,
                forwarded=queued.forwarded,
                dropped=queued.dropped,
                left_in_spool=self._left,
                durable=self._spool.durable,
                spans_exported=self._span_exporter.exported + (self._raw.exported if self._raw else 0),
                spans_export_failed=self._span_exporter.failed + (self._raw.failed if self._raw else 0),
                log_records_exported=logs.exported if logs else 0,
                log_records_export_failed=logs.failed if logs else 0,
                export_retries=self.policy.retries,
                spans_passed_through=self._raw.exported if self._raw else 0,
                spool_damage=self._spool.damage,
                tracestates_dropped=self._tracestates_dropped,
            )

    def shutdown(self, timeout_seconds: float | None = None) -> GatewayCounts:
        """Stop: refuse new requests, then evaluate and forward what is held, within the timeout.

        Requests waiting in the spool keep being loaded and forwarded while that makes progress, then
        held spans are evaluated (``incomplete`` where facts are missing) and forwarded with everything
        else in the pipeline, all within the timeout (default: the options' ``shutdown_timeout_millis``,
        25 s); what is not forwarded by then stays in the spool for the next start. Returns the final
        counts. Idempotent.
        """
        with self._lock:
            if self._is_shutdown:
                return self.counts()
            self._is_shutdown = True
        wait = non_negative_float(
            "timeout_seconds", timeout_seconds, None, self.options.shutdown_timeout_seconds
        )
        left = self._drain.run(time.monotonic() + wait)
        with self._lock:
            self._left = left
        counts = self.counts()
        logger.info(
            "Gateway stopped: %d items accepted, %d forwarded, %d left in the spool",
            counts.accepted,
            counts.forwarded,
            left,
        )
        return counts

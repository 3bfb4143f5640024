"""One handle for both processors: the span processor and its log-record processor, sharing one ledger.

Usage::

    shapecheck = Shapecheck(BatchSpanProcessor(OTLPSpanExporter()), events=EvaluationEventEmitter(...))
    tracer_provider.add_span_processor(shapecheck.span_processor)
    logger_provider.add_log_record_processor(shapecheck.log_processor)
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import SpanProcessor

from otel_shapecheck.checks._base import Check
from otel_shapecheck.outputs._sinks import VerdictSink
from otel_shapecheck.pipeline._log_processor import ShapecheckLogRecordProcessor
from otel_shapecheck.pipeline._metrics import ProcessorCounts
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor


class Shapecheck:
    """The span processor for the ``TracerProvider`` and the log processor for the ``LoggerProvider``.

    Takes the same arguments as :class:`ShapecheckSpanProcessor`.
    """

    def __init__(
        self,
        downstream: SpanProcessor,
        *,
        events: VerdictSink | None = None,
        checks: Sequence[Check] | None = None,
        options: ProcessorOptions | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        self.span_processor = ShapecheckSpanProcessor(
            downstream,
            events=events,
            checks=checks,
            options=options,
            meter_provider=meter_provider,
        )
        """Register on the ``TracerProvider`` (instead of ``downstream``)."""
        self.log_processor = ShapecheckLogRecordProcessor(self.span_processor)
        """Register on the ``LoggerProvider`` when instrumentations write content as log events."""

    def counts(self) -> ProcessorCounts:
        """What the span processor did so far."""
        return self.span_processor.counts()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the span processor (the log processor buffers nothing)."""
        return self.span_processor.force_flush(timeout_millis)

    def shutdown(self) -> None:
        """Shut the span processor down (idempotent)."""
        self.span_processor.shutdown()

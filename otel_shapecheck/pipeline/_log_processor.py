"""The companion log-record processor: GenAI content events, merged into the span processor's ledger.

Instrumentations that put message content into log events (``gen_ai.client.inference.operation.details``,
the deprecated per-message events) emit them before the span they belong to ends. This processor keeps
a reference to each such record under its trace and span id, so the worker can read the content when
the span is evaluated. It forwards nothing: register it beside the application's own log processors.
"""

from __future__ import annotations

from opentelemetry.sdk._logs import LogRecordProcessor, ReadWriteLogRecord

from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor, internals
from otel_shapecheck.readers._classify import is_genai_content_record, names_own_tool_calls


class ShapecheckLogRecordProcessor(LogRecordProcessor):
    """Records GenAI content log records into a ledger; anything else is ignored at the cost of one lookup.

    It records into the ledger of ``span_processor``, which must be the processor registered on the
    application's ``TracerProvider``; :class:`~otel_shapecheck.Shapecheck` builds both.
    """

    def __init__(self, span_processor: ShapecheckSpanProcessor) -> None:
        if not isinstance(span_processor, ShapecheckSpanProcessor):
            raise ValueError(
                f"span_processor={span_processor!r} is not a valid value: "
                "it must be a ShapecheckSpanProcessor"
            )
        shared = internals(span_processor)
        self._ledger = shared.ledger
        self._counters = shared.state.counters

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Keep the record if it carries GenAI content of a span; never raises."""
        try:
            record = log_record.log_record
            if not is_genai_content_record(record):
                return
            trace_id, span_id = record.trace_id, record.span_id
            if not trace_id or not span_id:
                return
            attributes = record.attributes
            self._ledger.content_recorded(
                trace_id,
                span_id,
                record,
                names_own_tool_calls=attributes is not None and names_own_tool_calls(attributes),
            )
        except Exception:
            self._counters.error("on_emit", "Recording a GenAI content log record failed")

    def shutdown(self) -> None:
        """Nothing to release: the ledger belongs to the span processor."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here; always True."""
        return True

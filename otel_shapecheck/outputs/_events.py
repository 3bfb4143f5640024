"""The evaluation-event side of the processor: ``gen_ai.evaluation.result`` log records over any log exporter.

Each verdict becomes one log record with ``event_name`` set, parented to the evaluated span (its trace id
and span id), so a logs backend can join it to the trace. Records go through the SDK's own
``BatchLogRecordProcessor`` (bounded queue, batching, the exporter's retry), with an admission bound in
front of it so that every record the queue could not hold is counted instead of silently replacing an
older one.

Usage::

    from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

    events = EvaluationEventEmitter(OTLPLogExporter(endpoint="collector:4317", insecure=True))
    processor = ShapecheckSpanProcessor(BatchSpanProcessor(span_exporter), events=events)
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry._logs import Logger, SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import SpanContext

from otel_shapecheck import _attributes as attrs
from otel_shapecheck._settings_table import EVENTS, by_name
from otel_shapecheck._version import __version__
from otel_shapecheck.checks._base import AttributeValue, Verdict
from otel_shapecheck.otlp._counting import CountingLogExporter
from otel_shapecheck.outputs._bounded_call import BoundedCall

logger = logging.getLogger(__name__)


# The emitter's settings: variables, defaults and kinds are rows of the one settings table.
_FORWARD = by_name(EVENTS, "forward")
_INCLUDE_CONTENT = by_name(EVENTS, "include_content")
_MAX_QUEUE_SIZE = by_name(EVENTS, "max_queue_size")
_MAX_EXPORT_BATCH_SIZE = by_name(EVENTS, "max_export_batch_size")
_SCHEDULE_DELAY_MILLIS = by_name(EVENTS, "schedule_delay_millis")
_FLUSH_TIMEOUT_MILLIS = by_name(EVENTS, "flush_timeout_millis")


EVENT_LOGGER_NAME = "otel_shapecheck"


@dataclass(frozen=True)
class EvaluationEventStats:
    """Counts since construction; ``dropped`` is every record that was due to leave and did not."""

    received: int
    """Verdicts handed to :meth:`EvaluationEventEmitter.emit`."""
    skipped: int
    """Verdicts not forwarded because they raised no flag and ``forward="flagged"``."""
    emitted: int
    """Log records handed to the log pipeline."""
    exported: int
    """Records the exporter reported delivered (only known when the exporter owns its pipeline)."""
    export_failed: int
    """Records in batches the exporter reported failed, after its own retries."""
    dropped_queue_full: int
    """Records refused because the export queue was full."""
    dropped_after_shutdown: int
    """Records refused because the exporter was shut down."""
    errors: int
    """Unexpected errors caught inside ``emit`` (each also logged once)."""

    @property
    def dropped(self) -> int:
        """Every record that was due to leave the process and did not."""
        return self.export_failed + self.dropped_queue_full + self.dropped_after_shutdown


def evaluation_record_attributes(verdict: Verdict, *, include_content: bool) -> dict[str, AttributeValue]:
    """The attributes of one verdict's log record: its own ``shapecheck.*`` values and the event's.

    The verdict's content attributes (``Verdict.content_keys``: the figures of the answer and of tool
    results, tool names the model invented) are kept only when ``include_content`` is true.
    """
    if not include_content:
        verdict = verdict.without_content()
    attributes: dict[str, AttributeValue] = dict(verdict.attributes)
    attributes[attrs.FLAGGED] = verdict.flagged
    attributes[attrs.FLAGS] = tuple(verdict.flags)
    attributes.update(verdict.event_attributes())
    return attributes


class EvaluationEventEmitter:
    """A verdict sink that emits ``gen_ai.evaluation.result`` log records for the evaluated spans.

    Give either a ``LogRecordExporter`` (OTLP gRPC or HTTP, or any other; the exporter then owns a
    ``LoggerProvider`` with a ``BatchLogRecordProcessor`` around it and counts what is delivered,
    failed or dropped) or an existing ``LoggerProvider`` (records go through whatever processors it
    has; delivery is then that provider's business, and only what this class refuses is counted).

    ``emit`` never blocks: a full queue refuses the record and counts it. ``force_flush`` and
    ``shutdown`` wait at most ``flush_timeout_millis`` even when the endpoint hangs.

    Settings (argument, else environment variable, else default):
    ``forward`` (``OTEL_SHAPECHECK_EVENTS_FORWARD``: ``flagged``, the default, or ``all``),
    ``include_content`` (``OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT``: ``false`` or ``true``),
    ``max_queue_size`` (``OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE``, 2048),
    ``max_export_batch_size`` (``OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE``, 512),
    ``schedule_delay_millis`` (``OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS``, 1000),
    ``flush_timeout_millis`` (``OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS``, 10000).
    """

    def __init__(
        self,
        log_exporter: LogRecordExporter | None = None,
        *,
        logger_provider: LoggerProvider | None = None,
        resource: Resource | None = None,
        forward: str | None = None,
        include_content: bool | None = None,
        max_queue_size: int | None = None,
        max_export_batch_size: int | None = None,
        schedule_delay_millis: int | None = None,
        flush_timeout_millis: int | None = None,
    ) -> None:
        if (log_exporter is None) == (logger_provider is None):
            raise ValueError("EvaluationEventEmitter needs exactly one of log_exporter or logger_provider")
        self._forward_all = _FORWARD.resolve(forward) == "all"
        self._include_content: bool = _INCLUDE_CONTENT.resolve(include_content)
        self._flush_timeout_millis: int = _FLUSH_TIMEOUT_MILLIS.resolve(flush_timeout_millis)
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(
            ("received", "skipped", "emitted", "dropped_queue_full", "dropped_after_shutdown", "errors"), 0
        )
        self._in_queue = 0
        self._is_shutdown = False
        self._warned: set[str] = set()
        self._counting: CountingLogExporter | None = None
        self._owns_provider = log_exporter is not None
        if log_exporter is not None:
            logger_provider = self._build_provider(
                log_exporter, resource, max_queue_size, max_export_batch_size, schedule_delay_millis
            )
        else:
            self._max_queue_size = self._max_export_batch_size = self._schedule_delay_millis = 0
        assert logger_provider is not None
        self._provider = logger_provider
        self._logger: Logger = logger_provider.get_logger(EVENT_LOGGER_NAME, __version__)
        self._flush_call = BoundedCall("ShapecheckEventsFlush", self._flush_provider)
        self._shutdown_call = BoundedCall("ShapecheckEventsShutdown", self._shutdown_provider)
        if hasattr(os, "register_at_fork"):
            reinit = weakref.WeakMethod(self._at_fork_reinit)
            os.register_at_fork(after_in_child=lambda: _call_if_alive(reinit))

    def _at_fork_reinit(self) -> None:
        """A forked child's batch processor starts with an empty queue; so does the admission count."""
        self._lock = threading.Lock()
        if self._counting is not None:
            self._counting.reset_after_fork()
        self._in_queue = 0
        self._flush_call.reset_after_fork()
        self._shutdown_call.reset_after_fork()

    def _build_provider(
        self,
        log_exporter: LogRecordExporter,
        resource: Resource | None,
        max_queue_size: int | None,
        max_export_batch_size: int | None,
        schedule_delay_millis: int | None,
    ) -> LoggerProvider:
        queue_size: int = _MAX_QUEUE_SIZE.resolve(max_queue_size)
        self._max_queue_size = queue_size
        batch_size: int = _MAX_EXPORT_BATCH_SIZE.resolve(max_export_batch_size)
        if batch_size > self._max_queue_size:
            if max_export_batch_size is not None:
                raise ValueError(
                    f"max_export_batch_size={batch_size} is not a valid value: "
                    f"it must not exceed max_queue_size={self._max_queue_size}"
                )
            logger.warning(
                "%s=%d exceeds the queue size %d; exporting batches of %d",
                _MAX_EXPORT_BATCH_SIZE.variable,
                batch_size,
                self._max_queue_size,
                self._max_queue_size,
            )
            batch_size = self._max_queue_size
        self._max_export_batch_size = batch_size
        delay: int = _SCHEDULE_DELAY_MILLIS.resolve(schedule_delay_millis)
        self._schedule_delay_millis = delay
        self._counting = CountingLogExporter(
            log_exporter, before_export=self._taken_from_queue, what="Evaluation event export"
        )
        provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        provider.add_log_record_processor(
            BatchLogRecordProcessor(
                self._counting,
                schedule_delay_millis=delay,
                max_export_batch_size=batch_size,
                max_queue_size=self._max_queue_size,
            )
        )
        return provider

    @property
    def forward(self) -> str:
        """``"flagged"`` or ``"all"``: which verdicts become log records."""
        return "all" if self._forward_all else "flagged"

    @property
    def include_content(self) -> bool:
        """Whether the verdicts' content attributes (``Verdict.content_keys``) leave the process."""
        return self._include_content

    @property
    def max_queue_size(self) -> int:
        """Records that may wait for export (0 when records go through a given provider)."""
        return self._max_queue_size

    @property
    def max_export_batch_size(self) -> int:
        """Records per export call (0 when records go through a given provider)."""
        return self._max_export_batch_size

    @property
    def schedule_delay_millis(self) -> int:
        """Longest wait before a partial batch is exported (0 when records go through a given provider)."""
        return self._schedule_delay_millis

    @property
    def flush_timeout_millis(self) -> int:
        """The most ``force_flush`` and ``shutdown`` wait."""
        return self._flush_timeout_millis

    @property
    def logger_provider(self) -> LoggerProvider:
        """The provider the records go through (built here when a log exporter was given)."""
        return self._provider

    def emit(self, span_context: SpanContext, verdicts: Sequence[Verdict]) -> None:
        """Emit one log record per verdict due to leave, parented to the evaluated span; never raises."""
        try:
            self._emit(span_context, verdicts)
        except Exception:
            self._count("errors")
            self._warn_once("emit", "Failed to emit evaluation events; counted and skipped", exc_info=True)

    def _emit(self, span_context: SpanContext, verdicts: Sequence[Verdict]) -> None:
        self._count("received", len(verdicts))
        due = [verdict for verdict in verdicts if self._forward_all or verdict.flagged]
        self._count("skipped", len(verdicts) - len(due))
        if not due:
            return
        context = trace.set_span_in_context(trace.NonRecordingSpan(span_context))
        for verdict in due:
            if not self._admit():
                continue
            self._logger.emit(
                timestamp=time.time_ns(),
                context=context,
                severity_number=SeverityNumber.WARN if verdict.flagged else SeverityNumber.INFO,
                severity_text="WARN" if verdict.flagged else "INFO",
                event_name=attrs.EVALUATION_EVENT,
                attributes=_as_log_attributes(
                    evaluation_record_attributes(verdict, include_content=self._include_content)
                ),
            )
            self._count("emitted")

    def _admit(self) -> bool:
        with self._lock:
            if self._is_shutdown:
                self._counts["dropped_after_shutdown"] += 1
                return False
            if self._counting is not None:
                if self._in_queue >= self._max_queue_size:
                    self._counts["dropped_queue_full"] += 1
                    full = True
                else:
                    self._in_queue += 1
                    full = False
            else:
                full = False
        if full:
            self._warn_once("queue", "Evaluation event queue is full; dropping events (counted in stats())")
        return not full

    def _taken_from_queue(self, count: int) -> None:
        with self._lock:
            self._in_queue = max(0, self._in_queue - count)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export what was emitted so far; waits at most ``min(timeout_millis, flush_timeout_millis)``."""
        if self._is_shutdown:
            return False
        return self._flush_call(min(timeout_millis, self._flush_timeout_millis))

    def shutdown(self) -> None:
        """Flush and stop; later verdicts are counted as dropped. Waits at most ``flush_timeout_millis``.

        A provider that was given is flushed but not shut down: it belongs to the application.
        """
        with self._lock:
            if self._is_shutdown:
                return
            self._is_shutdown = True
        if not self._shutdown_call(self._flush_timeout_millis):
            logger.warning(
                "Evaluation event exporter did not shut down within %d ms", self._flush_timeout_millis
            )

    def stats(self) -> EvaluationEventStats:
        """A snapshot of the counters."""
        with self._lock:
            counts = dict(self._counts)
        counting = self._counting
        return EvaluationEventStats(
            exported=counting.exported if counting else 0,
            export_failed=counting.failed if counting else 0,
            **counts,
        )

    def _flush_provider(self, timeout_millis: int) -> bool:
        return self._provider.force_flush(timeout_millis)

    def _shutdown_provider(self, timeout_millis: int) -> bool:
        if self._owns_provider:
            self._provider.shutdown()
            return True
        return self._provider.force_flush(timeout_millis)

    def _count(self, name: str, amount: int = 1) -> None:
        with self._lock:
            self._counts[name] += amount

    def _warn_once(self, key: str, message: str, *, exc_info: bool = False) -> None:
        with self._lock:
            if key in self._warned:
                return
            self._warned.add(key)
        logger.warning(message, exc_info=exc_info)


def _call_if_alive(method: weakref.WeakMethod[Callable[[], None]]) -> None:
    bound = method()
    if bound is not None:
        bound()


def _as_log_attributes(attributes: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """Sequences as tuples, which every log record processor and encoder accepts."""
    return {key: tuple(value) if isinstance(value, list) else value for key, value in attributes.items()}

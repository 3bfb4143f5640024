"""One counting wrapper around any SDK exporter: what each export delivered, failed, or raised.

The event emitter learns from it when records leave its queue, the gateway releases admission slots as
batches reach the destination, the demo reports what an endpoint refused. All of them wrap the user's
exporter in :class:`CountingSpanExporter` or :class:`CountingLogExporter` (the same counting code, typed
for each SDK interface) instead of writing their own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger(__name__)

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")
_Hooks = tuple[Callable[[int], None] | None, Callable[[int], None] | None]
_BatchHooks = tuple[Callable[[Sequence[_Item]], None] | None, Callable[[Sequence[_Item], bool], None] | None]


class _ExportCounts(Generic[_Item, _Result]):
    """The counting shared by both wrappers: called around each ``export`` of the wrapped exporter."""

    def __init__(
        self, export: Callable[[Sequence[_Item]], _Result], success: _Result, failure: _Result, what: str
    ) -> None:
        self._export = export
        self._what = what
        self._success = success
        self._failure = failure
        self._lock = threading.Lock()
        self._raised = False
        self.exported = 0
        self.failed = 0

    def export(
        self,
        batch: Sequence[_Item],
        hooks: _Hooks,
        batch_hooks: _BatchHooks[_Item] = (None, None),
    ) -> _Result:
        before, after = hooks
        before_batch, after_batch = batch_hooks
        if before is not None:
            before(len(batch))
        if before_batch is not None:
            before_batch(batch)
        result: _Result
        try:
            result = self._export(batch)
        except Exception:  # the batch processor would swallow it too; we count it and log the first one
            if not self._raised:
                self._raised = True
                logger.exception(
                    "%s raised; %d items counted as failed (logged once)", self._what, len(batch)
                )
            result = self._failure
        finally:
            if after is not None:
                after(len(batch))
        if after_batch is not None:
            after_batch(batch, result is self._success)
        with self._lock:
            if result is self._success:
                self.exported += len(batch)
            else:
                self.failed += len(batch)
        return result

    def reset_lock(self) -> None:
        self._lock = threading.Lock()


class CountingSpanExporter(SpanExporter):
    """Wraps a span exporter; counts spans delivered and failed (an exception counts as a failure).

    ``before_export`` and ``after_export`` are called with the batch size around each export, whatever
    its outcome (the event emitter's queue accounting); ``before_batch`` and ``after_batch`` with the
    batch itself, the latter also with whether it was delivered (the gateway's spool accounting);
    ``what`` names the export in the one log line an exception gets.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        before_export: Callable[[int], None] | None = None,
        after_export: Callable[[int], None] | None = None,
        before_batch: Callable[[Sequence[ReadableSpan]], None] | None = None,
        after_batch: Callable[[Sequence[ReadableSpan], bool], None] | None = None,
        what: str = "Span export",
    ) -> None:
        self._exporter = exporter
        self._hooks: _Hooks = (before_export, after_export)
        self._batch_hooks: _BatchHooks[ReadableSpan] = (before_batch, after_batch)
        self._counts = _ExportCounts[ReadableSpan, SpanExportResult](
            exporter.export, SpanExportResult.SUCCESS, SpanExportResult.FAILURE, what
        )

    @property
    def exported(self) -> int:
        """Spans the wrapped exporter reported delivered."""
        return self._counts.exported

    @property
    def failed(self) -> int:
        """Spans in batches the wrapped exporter reported failed (after its own retries) or raised on."""
        return self._counts.failed

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export the batch through the wrapped exporter, counting the outcome; never raises."""
        return self._counts.export(spans, self._hooks, self._batch_hooks)

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)


class CountingLogExporter(LogRecordExporter):
    """Wraps a log record exporter; counts records delivered and failed (an exception counts as a failure).

    ``before_export`` and ``after_export`` are called with the batch size around each export, whatever
    its outcome; ``before_batch`` and ``after_batch`` with the batch (and whether it was delivered).
    """

    def __init__(
        self,
        exporter: LogRecordExporter,
        *,
        before_export: Callable[[int], None] | None = None,
        after_export: Callable[[int], None] | None = None,
        before_batch: Callable[[Sequence[ReadableLogRecord]], None] | None = None,
        after_batch: Callable[[Sequence[ReadableLogRecord], bool], None] | None = None,
        what: str = "Log record export",
    ) -> None:
        self._exporter = exporter
        self._hooks: _Hooks = (before_export, after_export)
        self._batch_hooks: _BatchHooks[ReadableLogRecord] = (before_batch, after_batch)
        self._counts = _ExportCounts[ReadableLogRecord, LogRecordExportResult](
            exporter.export, LogRecordExportResult.SUCCESS, LogRecordExportResult.FAILURE, what
        )

    @property
    def exported(self) -> int:
        """Records the wrapped exporter reported delivered."""
        return self._counts.exported

    @property
    def failed(self) -> int:
        """Records in batches the wrapped exporter reported failed (after its own retries) or raised on."""
        return self._counts.failed

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Export the batch through the wrapped exporter, counting the outcome; never raises."""
        return self._counts.export(batch, self._hooks, self._batch_hooks)

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK's signature lacks the hint

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)

    def reset_after_fork(self) -> None:
        """A forked child must not inherit a lock held by another thread of the parent."""
        self._counts.reset_lock()

"""Forwarding that keeps trying: a failed export batch is retried until the destination takes it.

The SDK's OTLP exporters retry within one export call (up to their timeout) and then report a failure,
after which a batch processor forgets the batch. Behind the gateway that would lose acknowledged items,
so the gateway's exporters are wrapped: a failed batch is tried again after a growing delay (0.5 s
doubling to 30 s), for as long as the gateway runs, or until ``give_up_after_seconds`` when the operator
set one. A destination that stays down keeps the pipeline full, the spool grows, and senders get
backpressure; nothing acknowledged is dropped.

At shutdown :meth:`ForwardingPolicy.stop_at` sets a deadline: attempts go on until then, after which a
batch is abandoned at once (the wrapped exporter is not called again). Abandoned items stay in the spool
for the next start.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_shapecheck.otlp._suppressed import instrumentation_suppressed

logger = logging.getLogger(__name__)

_FIRST_DELAY_SECONDS = 0.5
_MAX_DELAY_SECONDS = 30.0
_LOG_EVERY_SECONDS = 60.0

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


class ForwardingPolicy:
    """When to try a failed batch again, shared by the span and the log forwarding.

    Args:
        give_up_after_seconds: how long a batch is retried before it is dropped and counted
            (``None``: until it is forwarded or the gateway stops).
    """

    def __init__(self, give_up_after_seconds: float | None = None) -> None:
        self.give_up_after_seconds = give_up_after_seconds
        self._stop = threading.Event()
        self._deadline: float | None = None
        self._lock = threading.Lock()
        self._last_logged = 0.0
        self.retries = 0
        """Failed attempts that were tried again."""
        self.gave_up = 0
        """Items dropped after ``give_up_after_seconds``."""
        self.abandoned = 0
        """Items left unforwarded at the shutdown deadline (they stay in the spool)."""

    def stop_at(self, deadline: float) -> None:
        """From ``deadline`` (``time.monotonic()``) on, abandon batches instead of trying them again."""
        self._deadline = deadline

    def stop_now(self) -> None:
        """Abandon every batch at once."""
        self._deadline = time.monotonic()
        self._stop.set()

    @property
    def stopped(self) -> bool:
        """Whether the shutdown deadline has passed."""
        return self._deadline is not None and time.monotonic() >= self._deadline

    def run(self, export: Callable[[], bool], size: int, what: str) -> bool:
        """Call ``export`` until it succeeds; False if the batch was abandoned or given up."""
        started = time.monotonic()
        delay = _FIRST_DELAY_SECONDS
        while True:
            if self.stopped:
                self._count("abandoned", size)
                return False
            if export():
                return True
            now = time.monotonic()
            give_up = self.give_up_after_seconds
            if give_up is not None and now - started >= give_up:
                self._count("gave_up", size)
                logger.error("Gave up forwarding %d %s after %.0f s of failures", size, what, now - started)
                return False
            self._note_retry(size, what, now - started)
            pause = min(delay, _MAX_DELAY_SECONDS) * random.uniform(0.8, 1.2)
            if self._deadline is not None:
                pause = min(pause, max(0.0, self._deadline - now))
            self._stop.wait(pause)
            delay *= 2

    def _count(self, name: str, size: int) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + size)

    def _note_retry(self, size: int, what: str, failing_for: float) -> None:
        with self._lock:
            self.retries += 1
            now = time.monotonic()
            quiet = now - self._last_logged < _LOG_EVERY_SECONDS
            if not quiet:
                self._last_logged = now
        if not quiet:
            logger.warning(
                "Forwarding %d %s failed (for %.0f s now); retrying until the destination takes them "
                "(further retries are logged once a minute)",
                size,
                what,
                failing_for,
            )


class _Retrying(Generic[_Item, _Result]):
    def __init__(
        self,
        export: Callable[[Sequence[_Item]], _Result],
        success: _Result,
        failure: _Result,
        policy: ForwardingPolicy,
        what: str,
    ) -> None:
        self._export = export
        self._success = success
        self._failure = failure
        self._policy = policy
        self._what = what

    def export(self, batch: Sequence[_Item]) -> _Result:
        def attempt() -> bool:
            try:
                with instrumentation_suppressed():
                    return self._export(batch) == self._success
            except Exception:  # an exporter bug is one more failed attempt
                logger.debug("%s export raised", self._what, exc_info=True)
                return False

        return self._success if self._policy.run(attempt, len(batch), self._what) else self._failure


class RetryingSpanExporter(SpanExporter):
    """A span exporter whose failed batches are tried again under ``policy``."""

    def __init__(self, exporter: SpanExporter, policy: ForwardingPolicy) -> None:
        self._exporter = exporter
        self._retrying = _Retrying[ReadableSpan, SpanExportResult](
            exporter.export, SpanExportResult.SUCCESS, SpanExportResult.FAILURE, policy, "spans"
        )

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export, trying again until forwarded, abandoned at the deadline, or given up."""
        return self._retrying.export(spans)

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self._exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)


class RetryingLogExporter(LogRecordExporter):
    """A log record exporter whose failed batches are tried again under ``policy``."""

    def __init__(self, exporter: LogRecordExporter, policy: ForwardingPolicy) -> None:
        self._exporter = exporter
        self._retrying = _Retrying[ReadableLogRecord, LogRecordExportResult](
            exporter.export,
            LogRecordExportResult.SUCCESS,
            LogRecordExportResult.FAILURE,
            policy,
            "log records",
        )

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Export, trying again until forwarded, abandoned at the deadline, or given up."""
        return self._retrying.export(batch)

    def shutdown(self) -> None:
        """Shut the wrapped exporter down."""
        self._exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK's signature lacks the hint

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the wrapped exporter."""
        return self._exporter.force_flush(timeout_millis)

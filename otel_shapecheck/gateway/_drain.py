"""The gateway's stop, in order, within one deadline: the door closes (running requests finish), requests
waiting in the spool are fed through while that makes progress, then the pipeline is shut down (held
spans evaluated, everything forwarded) and what could not be forwarded in time stays in the spool.

:class:`~otel_shapecheck.gateway._gateway.Gateway` builds the parts and keeps the door and the counts;
this is how they are emptied, apart so the order of a stop reads in one place.
"""

from __future__ import annotations

import logging
import time

from opentelemetry.sdk._logs import LogRecordProcessor
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from otel_shapecheck.gateway._admission import RequestGate
from otel_shapecheck.gateway._forward import ForwardingPolicy
from otel_shapecheck.gateway._passthrough import RawForwarder
from otel_shapecheck.gateway._queue import RawRef, SpoolQueue
from otel_shapecheck.gateway._spool import Spool
from otel_shapecheck.outputs._bounded_call import BoundedCall
from otel_shapecheck.pipeline._shapecheck import Shapecheck

logger = logging.getLogger(__name__)

_DRAIN_REQUESTS_SECONDS = 10.0
"""Longest a stop waits for running requests to be answered."""
_DRAIN_STEP_SECONDS = 2.0
_DRAIN_POLL_SECONDS = 0.02


class GatewayDrain:
    """Empties a stopping gateway's parts by a deadline (:meth:`run`); the gateway calls it once.

    Args:
        gate: the door's request gate (closed first).
        policy: the forwarding policy whose retries end at the deadline.
        queue: the queue from the spool to the pipeline.
        spool: where accepted requests wait (closed last).
        spans: where received spans go (the span processor, or the batch processor when not evaluating).
        batch_spans: the span batch processor (shut down by the span processor when it evaluates).
        batch_logs: the log batch processor, if log records are forwarded.
        shapecheck: the checks' processors, if the gateway evaluates.
        raw: the pass-through forwarder, if spans pass through as received.
    """

    def __init__(
        self,
        *,
        gate: RequestGate,
        policy: ForwardingPolicy,
        queue: SpoolQueue,
        spool: Spool,
        spans: SpanProcessor,
        batch_spans: BatchSpanProcessor,
        batch_logs: LogRecordProcessor | None,
        shapecheck: Shapecheck | None,
        raw: RawForwarder[RawRef] | None,
    ) -> None:
        self._gate = gate
        self._policy = policy
        self._queue = queue
        self._spool = spool
        self._spans = spans
        self._batch_spans = batch_spans
        self._batch_logs = batch_logs
        self._shapecheck = shapecheck
        self._raw = raw

    def run(self, deadline: float) -> int:
        """Stop by ``deadline`` (a :func:`time.monotonic` time); the items left in the spool."""
        if not self._gate.close(min(_DRAIN_REQUESTS_SECONDS, remaining(deadline))):
            logger.warning("Export requests were still running at shutdown")
        self._policy.stop_at(deadline)
        self._drain_spool(deadline)
        self._queue.stop_loading()
        drain = BoundedCall("ShapecheckGatewayDrain", lambda _: self._shut_down())
        if not drain(int(remaining(deadline) * 1000)):
            self._policy.stop_now()
            logger.warning(
                "Forwarding did not finish within the shutdown timeout; the rest stays in the spool"
            )
        left = self._queue.close()
        try:
            self._spool.close()
        except Exception:
            logger.exception("Closing the spool failed")
        return left

    def _drain_spool(self, deadline: float) -> None:
        """Flush the pipeline while requests wait in the spool, so the loader keeps finding room for them;
        stop when none waits, time is up, or a step made no progress (spans held for facts that may
        never come: the final drain releases them)."""
        while self._queue.pending and remaining(deadline) > 0:
            before = self._progress()
            step = time.monotonic() + min(remaining(deadline), _DRAIN_STEP_SECONDS)
            millis = max(1, int(remaining(step) * 1000))
            self._spans.force_flush(millis)
            if self._batch_logs is not None:
                self._batch_logs.force_flush(millis)
            while self._progress() == before and remaining(step) > 0:
                time.sleep(_DRAIN_POLL_SECONDS)  # the pass-through and the exporters forward meanwhile
            if self._progress() == before:
                return

    def _progress(self) -> tuple[int, int]:
        """What a drain step moves: the requests waiting in the spool, the items forwarded."""
        return self._queue.pending, self._queue.counts.forwarded

    def _shut_down(self) -> None:
        """Shut the pipeline down, the pass-through first (each part forwards what it holds)."""
        if self._raw is not None:
            self._raw.shutdown()  # sends what passes through, until the policy's deadline
        if self._shapecheck is not None:
            self._shapecheck.shutdown()  # evaluates and forwards what it holds, then shuts the batch down
            if self._batch_logs is not None:
                self._batch_logs.shutdown()
        else:
            shut_down_batches(self._batch_spans, self._batch_logs)


def shut_down_batches(spans: BatchSpanProcessor, logs: LogRecordProcessor | None) -> None:
    """Shut the batch processors down (each exports what it holds first)."""
    spans.shutdown()  # type: ignore[no-untyped-call]
    if logs is not None:
        logs.shutdown()


def remaining(deadline: float) -> float:
    """Seconds left until ``deadline`` (a :func:`time.monotonic` time), never negative."""
    return max(0.0, deadline - time.monotonic())

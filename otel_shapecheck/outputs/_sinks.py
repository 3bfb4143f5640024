"""Where the span processor hands verdicts besides the enriched span: the evaluation-event side."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from opentelemetry.trace import SpanContext

from otel_shapecheck.checks._base import Verdict


@runtime_checkable
class VerdictSink(Protocol):
    """Receives the verdicts of each evaluated span, with that span's context, on the evaluation worker.

    ``emit`` must not block for long and must not raise; the processor calls ``force_flush`` and
    ``shutdown`` from its own ``force_flush`` and ``shutdown``, after forwarding every pending span.
    """

    def emit(self, span_context: SpanContext, verdicts: Sequence[Verdict]) -> None:
        """Take the verdicts of one evaluated span."""
        ...

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything taken so far, within the timeout."""
        ...

    def shutdown(self) -> None:
        """Flush and release resources; later ``emit`` calls are dropped."""
        ...

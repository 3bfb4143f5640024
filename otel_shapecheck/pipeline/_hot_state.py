"""The hot path's shared state: what ``on_start``/``on_end``, the recording thread and the ledger all read.

The processor creates one :class:`HotPathState` and hands it to its recorder, its recording queue and
its ledger. Each of them reads and writes these maps through this one object (never a copy or an alias
of its own), so a forked child forgets the parent's spans with one :meth:`HotPathState.clear`, and a
reader on the hot path pays one slot load per map. Forwarding to the downstream is here too: the
recording thread, the worker and the processor's shutdown hand spans on through
:meth:`HotPathState.forward`, which counts a failure; only ``on_end`` calls the downstream itself for
the span it forwards at once, with the same count (a call fewer for every span the application ends).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import SpanContext

from otel_shapecheck.pipeline._metrics import ProcessorCounters

if TYPE_CHECKING:
    from otel_shapecheck.pipeline._facts import HeldSpan

TRACE_ID: Final = 0
SPAN_ID: Final = 1
IS_REMOTE: Final = 2
"""Items of a ``SpanContext`` (a tuple): reading them skips the property calls on the hot path."""


class LocalRootEnd:
    """The end of a local root span already forwarded (no parent here): its trace may be finished."""

    __slots__ = ("context",)

    def __init__(self, context: SpanContext) -> None:
        self.context = context


Item = ReadableSpan | SpanContext | LocalRootEnd | threading.Event
"""What the recording queue holds: a span to record (forwarded after if the ledger does not hold it),
the context of a span already forwarded whose end the ledger may wait for (as a :class:`LocalRootEnd`
when it is a local root), or a flush request."""


class HotPathState:
    """The maps the application's threads read without a lock, and the recording side keeps current.

    Args:
        counters: the processor's counters (reset with the rest in a forked child).
        downstream_on_end: the downstream's ``on_end``, which :meth:`forward` calls.
        max_live: started spans kept at most (``max_pending_spans``); past it a start is counted as
            ``started_untracked`` and not kept.
    """

    __slots__ = (
        "analyst_parents",
        "attempt_parents",
        "awaited_ends",
        "counters",
        "fact_traces",
        "live",
        "max_live",
        "queued",
        "recording_idle",
        "sees_starts",
        "_downstream_on_end",
    )

    def __init__(
        self,
        counters: ProcessorCounters,
        downstream_on_end: Callable[[ReadableSpan], None],
        *,
        max_live: int,
    ) -> None:
        self.counters = counters
        self._downstream_on_end = downstream_on_end
        self.max_live = max_live
        self.live: dict[int, ReadableSpan | Span] = {}
        """Started spans whose end is not yet recorded, by span id (``on_start`` keeps them, up to
        ``max_live``): an LLM call takes its menu and its run from them. A span queued for recording
        stays here until it is recorded, so every span is recorded against its ancestors as they were
        at its end."""
        self.sees_starts = False
        """Whether spans are handed over at their start (live, and ``check``), not only at their end."""
        self.attempt_parents: dict[int, None] = {}
        """Parents of queued analyst attempts (by span id) until their own end is recorded: ``on_end``
        must hold such a span for evaluation although its attempts are not yet in the ledger."""
        self.queued: deque[Item] = deque()
        """The recording queue itself; ``on_end`` tests its length."""
        self.recording_idle = True
        """The recording thread waits with nothing taken: with ``queued`` empty, nothing is being
        recorded, so an ordinary span's end need not be queued behind anything."""
        self.awaited_ends: dict[int, list[HeldSpan]] = {}
        """Held spans waiting for a parent's end, by the parent's span id (the ledger writes it under
        its lock; ``on_end`` tests membership, and queues such a span's end for recording)."""
        self.fact_traces: Mapping[int, object] = {}
        """The trace ids the ledger keeps facts of (its trace store's own map, read without its lock):
        ``on_end`` queues the end of a local root only when its trace has facts to finish."""
        self.analyst_parents: dict[int, int] = {}
        """Spans with recorded analyst-attempt children (span id to trace id), written by the ledger
        under its lock: such a span is held as an analyst span when it ends."""

    def clear(self) -> None:
        """Forget every span and count (a forked child: the parent's spans are the parent's to forward).

        In place: the recorder, the queue and the ledger keep this object for the processor's life.
        """
        self.live.clear()
        self.attempt_parents.clear()
        self.queued.clear()
        self.recording_idle = True
        self.awaited_ends.clear()
        self.analyst_parents.clear()
        self.counters.reset()

    def is_local_root(self, parent: SpanContext | None) -> bool:
        """Whether a span with ``parent`` is a local root: no parent here (none, or a remote one that
        is not a live span of this process). Only a processor that sees spans start can tell; its
        trace is then finished (see :class:`~otel_shapecheck.pipeline._trace_store.TraceStore`)."""
        return self.sees_starts and (
            parent is None or (parent[IS_REMOTE] and parent[SPAN_ID] not in self.live)
        )

    def concerns(self, span_id: int) -> bool:
        """Whether a span with no classifying key must still go through ``on_end`` (lock-free): ended
        spans are still being recorded, held spans wait for its end, or it has analyst-attempt children."""
        return (
            bool(self.queued)
            or not self.recording_idle
            or span_id in self.attempt_parents
            or span_id in self.awaited_ends
            or span_id in self.analyst_parents
        )

    def concerns_any(self) -> bool:
        """Whether :meth:`concerns` could hold for any span id at all (lock-free)."""
        return (
            bool(self.queued)
            or not self.recording_idle
            or bool(self.attempt_parents)
            or bool(self.awaited_ends)
            or bool(self.analyst_parents)
        )

    def count_unrecorded(self, spans: int) -> None:
        """Count spans forwarded as they came without being recorded (no room in the queue, or its
        thread did not finish at shutdown): seen, and passed on untouched."""
        counters = self.counters
        counters.passed_at_once += spans
        counters.forwarded_unrecorded += spans

    def forward(self, span: ReadableSpan) -> None:
        """Hand ``span`` to the downstream; a failure is counted, never raised."""
        try:
            self._downstream_on_end(span)
        except Exception:
            self.counters.error("downstream", "The downstream span processor failed in on_end")

    def forward_all(self, spans: Iterable[ReadableSpan]) -> None:
        """:meth:`forward` each span, in order."""
        for span in spans:
            self.forward(span)

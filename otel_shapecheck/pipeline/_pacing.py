"""How the evaluation worker shares the interpreter with a busy application.

In-process, the worker's checks are mostly pure Python and hold the interpreter lock while they run;
an application thread ending spans at the same time waits for it. While the application is busy (it
ended spans since the worker last looked, and one of the worker's last ``CALM_RESTS`` rests ended late
because another thread held the lock) the worker evaluates in slices of about ``SLICE_CPU_SECONDS`` of
its own CPU and rests between them, so that it takes about ``WORKER_SHARE`` of the interpreter. An
application that ends spans but leaves the lock free (waiting on I/O) gets whole batches and rests of
``PROBE_SECONDS``: the rest is how the worker learns whether the lock is wanted. The worker takes whole
batches without rests as soon as the application is idle, a flush or a shutdown waits, its ready
backlog reaches half of ``max_queue_size``, or it has been pacing for ``MAX_PACED_SECONDS`` with spans
ready all along (it then drains whole batches until none is ready): pacing defers work by about a
second at most, and never lets a queue overflow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

WORKER_SHARE: Final = 0.15
"""Share of the interpreter the worker takes while the application is active and the backlog small."""
SLICE_CPU_SECONDS: Final = 0.002
"""Worker CPU between two rests: the longest the application waits for the lock because of a slice."""
MAX_REST_SECONDS: Final = 0.02
"""Longest single rest, whatever the slice cost (a slice slowed by a busy machine)."""
PROBE_SECONDS: Final = 0.0002
"""Rest after a whole batch while the application ends spans: if it ends late, the lock was wanted."""
CONTENDED_SECONDS: Final = 0.001
"""A rest that ends this much late means another thread held the interpreter lock (its switch interval
is 5 ms; timer slack is tens of microseconds)."""
CALM_RESTS: Final = 4
"""Rests in a row that must end on time before the lock counts as free: a busy thread that releases the
lock now and then (a lock, a write) lets one rest end on time."""
MAX_PACED_SECONDS: Final = 1.0
"""Longest the worker paces while spans stay ready: the most pacing adds to a span's evaluation delay."""


class Pacing:
    """Decides the size of the worker's next slice and the rest after it.

    Args:
        activity: a number that grows while the application ends spans (read without a lock).
        backlog: spans ready for the worker now.
        max_backlog: ready spans at most (``max_queue_size``); pacing stops at half of it.
        batch_size: spans per check call when not pacing (``max_evaluation_batch_size``).
    """

    def __init__(
        self, activity: Callable[[], int], backlog: Callable[[], int], *, max_backlog: int, batch_size: int
    ) -> None:
        self._activity = activity
        self._backlog = backlog
        self._backlog_limit = max(1, max_backlog // 2)
        self._batch_size = batch_size
        self._seen = activity()
        self._span_cpu = 0.0
        """Worker CPU per span, recent costly spans weighing most (0 before the first slice)."""
        self._paced_since: float | None = None
        """When the current stretch of paced slices began (``None``: the last drain emptied the queue)."""
        self._calm = 0
        """Rests in a row that ended on time."""
        self._probing = False
        self.pacing = False
        """Whether the slice being evaluated is paced (the application was busy when it began)."""

    def next_slice(self, urgent: bool, now: float) -> int:
        """Spans to take for the next slice (``now``: ``time.monotonic()``): a whole batch unless the
        application is active, the backlog small and pacing not yet overdue; ``urgent`` (a flush or a
        shutdown waits) always takes a whole batch."""
        seen = self._activity()
        active, self._seen = seen != self._seen, seen
        if self._paced_since is None:
            self._paced_since = now
        overdue = now - self._paced_since > MAX_PACED_SECONDS
        may_pace = active and not urgent and not overdue and self._backlog() < self._backlog_limit
        contended = self._calm < CALM_RESTS
        self.pacing = may_pace and contended
        self._probing = may_pace and not contended
        if not self.pacing or self._span_cpu <= 0:  # no cost known yet: the first batch measures it
            return self._batch_size
        return max(1, min(self._batch_size, int(SLICE_CPU_SECONDS / self._span_cpu)))

    def rested(self, late_seconds: float) -> None:
        """The last rest ended ``late_seconds`` after it was due (waiting for the interpreter lock)."""
        self._calm = 0 if late_seconds > CONTENDED_SECONDS else self._calm + 1

    def drained(self) -> None:
        """Nothing is ready any more: the next paced stretch starts its own clock."""
        self._paced_since = None

    def rest_after(self, cpu_seconds: float, spans: int) -> float:
        """Seconds to rest after a slice of ``spans`` spans that took ``cpu_seconds`` of worker CPU."""
        if spans:
            # A costly span (a menu seen for the first time) counts at once, a cheap one only slowly:
            # the next slice is sized for the costly kind, which holds the lock longest.
            self._span_cpu = max(cpu_seconds / spans, 0.75 * self._span_cpu)
        if not self.pacing:
            return PROBE_SECONDS if self._probing else 0.0
        return min(MAX_REST_SECONDS, cpu_seconds * (1 - WORKER_SHARE) / WORKER_SHARE)

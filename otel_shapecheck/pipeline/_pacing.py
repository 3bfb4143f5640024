"""How the evaluation worker shares the interpreter with a busy application.

In-process, the worker's checks are mostly pure Python and hold the interpreter lock while they run;
an application thread ending spans at the same time waits for it. While the application is busy (it
ended spans since the worker last looked, and one of the worker's last ``CALM_RESTS`` rests ended late
because another thread held the lock) the worker evaluates in slices of about ``SLICE_CPU_SECONDS`` of
its own CPU and rests between them. Its share of the interpreter rises with its backlog: ``WORKER_SHARE``
with nothing waiting, up to all of it (whole batches, no rests) once the backlog reaches
``PACED_UP_TO`` of any bound past which a span would lose its evaluation or its facts (see
:class:`~otel_shapecheck.pipeline._completion.Backlog`) or the oldest ready span has been ready for
the deferral limit (``MAX_DEFER_SECONDS``, or a quarter of ``max_wait`` if that is less). Between the
two the share grows with the square of that pressure: far from every bound a deferred evaluation costs
nothing but memory the bounds already cap, so a short burst of the application's work is left alone,
and the share climbs steeply only as a bound nears. So pacing defers evaluations and never drops one:
a backlog that keeps growing takes the worker to whole batches, as an unpaced worker takes, long
before a bound is reached.

An application that ends spans but leaves the lock free (waiting on I/O) gets whole batches and rests
of ``PROBE_SECONDS``: the rest is how the worker learns whether the lock is wanted. A flush or a
shutdown always gets whole batches without rests.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from otel_shapecheck.pipeline._completion import Backlog

WORKER_SHARE: Final = 0.05
"""Share of the interpreter the worker takes while the application is busy and nothing is waiting."""
PACED_UP_TO: Final = 0.5
"""Share of a bound (queue, waiting spans, traces, fact bytes) past which the worker takes it all."""
MAX_DEFER_SECONDS: Final = 1.0
"""Age of the oldest ready span past which the worker takes the whole interpreter: the most pacing
adds to a span's evaluation delay."""
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


def worker_share(backlog: Backlog, defer_seconds: float) -> float:
    """The worker's share of the interpreter for ``backlog``: ``WORKER_SHARE`` with nothing waiting,
    1 from ``PACED_UP_TO`` of a bound or a ready span ``defer_seconds`` old, with the square of that
    pressure between (slow while far from the bounds, steep near them)."""
    pressure = min(1.0, max(backlog.fraction / PACED_UP_TO, backlog.age_seconds / defer_seconds))
    return WORKER_SHARE + (1 - WORKER_SHARE) * pressure * pressure


class Pacing:
    """Decides the size of the worker's next slice and the rest after it.

    Args:
        activity: a number that grows while the application ends spans (read without a lock).
        backlog: how near the spans awaiting the worker are to the bounds, given ``time.monotonic()``.
        batch_size: spans per check call when not pacing (``max_evaluation_batch_size``).
        max_wait_seconds: longest a span waits for its facts (``max_wait_millis``): a quarter of it
            bounds the deferral when it is less than ``MAX_DEFER_SECONDS``.
    """

    def __init__(
        self,
        activity: Callable[[], int],
        backlog: Callable[[float], Backlog],
        *,
        batch_size: int,
        max_wait_seconds: float,
    ) -> None:
        self._activity = activity
        self._backlog = backlog
        self._batch_size = batch_size
        self._defer_seconds = min(MAX_DEFER_SECONDS, max_wait_seconds / 4)
        self._seen = activity()
        self._span_cpu = 0.0
        """Worker CPU per span, recent costly spans weighing most (0 before the first slice)."""
        self._calm = 0
        """Rests in a row that ended on time."""
        self._probing = False
        self.share = 1.0
        """The worker's share of the interpreter for the slice being evaluated (1: not paced)."""

    @property
    def pacing(self) -> bool:
        """Whether the slice being evaluated is paced (a rest follows it)."""
        return self.share < 1.0

    def next_slice(self, urgent: bool, now: float) -> int:
        """Spans to take for the next slice (``now``: ``time.monotonic()``): a whole batch unless the
        application is busy and the backlog leaves room to pace; ``urgent`` (a flush or a shutdown
        waits) always takes a whole batch."""
        seen = self._activity()
        active, self._seen = seen != self._seen, seen
        may_pace = active and not urgent
        contended = self._calm < CALM_RESTS
        share = worker_share(self._backlog(now), self._defer_seconds) if may_pace and contended else 1.0
        self.share = share
        self._probing = may_pace and not contended
        if share >= 1.0 or self._span_cpu <= 0:  # no cost known yet: the first batch measures it
            return self._batch_size
        return max(1, min(self._batch_size, int(SLICE_CPU_SECONDS / self._span_cpu)))

    def rested(self, late_seconds: float) -> None:
        """The last rest ended ``late_seconds`` after it was due (waiting for the interpreter lock)."""
        self._calm = 0 if late_seconds > CONTENDED_SECONDS else self._calm + 1

    def rest_after(self, cpu_seconds: float, spans: int) -> float:
        """Seconds to rest after a slice of ``spans`` spans that took ``cpu_seconds`` of worker CPU."""
        if spans:
            # A costly span (a menu seen for the first time) counts at once, a cheap one only slowly:
            # the next slice is sized for the costly kind, which holds the lock longest.
            self._span_cpu = max(cpu_seconds / spans, 0.75 * self._span_cpu)
        if not self.pacing:
            return PROBE_SECONDS if self._probing else 0.0
        return min(MAX_REST_SECONDS, cpu_seconds * (1 - self.share) / self.share)

"""Calls into code we do not own (a downstream's flush, an exporter's shutdown) with a bound in time.

The SDK's own ``BatchSpanProcessor.force_flush`` ignores its timeout (open-telemetry/opentelemetry-python
#4568), and an exporter into a dead endpoint can block for its whole retry budget, so a flush or shutdown
that must return in time runs the callee on a daemon helper thread and waits at most the bound. A callee
that hangs keeps its one helper thread; later calls neither start another thread nor wait for it, they
return ``False`` at once and are counted, so a hung downstream costs one thread, not one per call.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

logger = logging.getLogger(__name__)


class BoundedCall:
    """One bounded call site: ``call(timeout_millis)`` runs on a helper thread, waited on for that long.

    Args:
        name: the helper thread's name (and the callee's, in the log line of a failure).
        call: the callee; it receives the time left in milliseconds, and ``False`` means it failed.
        on_error: called (on the helper thread) when the callee raises; default: log it once per call site.
    """

    def __init__(
        self, name: str, call: Callable[[int], object], *, on_error: Callable[[], None] | None = None
    ) -> None:
        self._name = name
        self._call = call
        self._on_error = on_error
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._succeeded = False
        self._logged = False
        self.still_running = 0
        """Calls that found the previous one still running (a hung callee) and returned at once."""

    def __call__(self, timeout_millis: int) -> bool:
        """Run the callee and wait at most ``timeout_millis``; whether it finished in time and succeeded."""
        timeout_millis = max(int(timeout_millis), 0)
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self.still_running += 1
                return False
            self._succeeded = False
            thread = threading.Thread(target=self._run, args=(timeout_millis,), name=self._name, daemon=True)
            self._thread = thread
            thread.start()
        thread.join(timeout_millis / 1000)
        return not thread.is_alive() and self._succeeded

    @property
    def hung(self) -> bool:
        """Whether the last call is still running."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def reset_after_fork(self) -> None:
        """A forked child has no helper thread: forget the parent's."""
        self._lock = threading.Lock()
        self._thread = None

    def _run(self, timeout_millis: int) -> None:
        try:
            self._succeeded = self._call(timeout_millis) is not False
        except Exception:
            if self._on_error is not None:
                self._on_error()
            elif not self._logged:
                self._logged = True
                logger.exception("%s failed (further failures are not logged)", self._name)

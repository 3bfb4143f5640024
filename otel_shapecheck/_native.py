"""Native calls that must not be running when the interpreter finalises, and the exit hook that stops them.

The evaluation worker is a daemon thread, so the interpreter may exit while it is inside onnxruntime,
tokenizers or FAISS with the interpreter lock released (``shutdown()`` timed out during an embedding
batch, or the application simply returned). When such a thread later tries to take the lock back from a
finalising interpreter, CPython ends it with ``pthread_exit``, whose forced unwinding through the C++
frames of the runtime calls ``std::terminate``: "terminate called without an active exception", exit
code 134, whatever the application meant to return.

Every such call runs inside :func:`native_section`. At exit (an ``atexit`` hook, which runs after
non-daemon threads are joined and before finalisation) no new section may start, running inferences are
asked to stop (onnxruntime's ``RunOptions.terminate``), and the hook waits a bounded time for the
sections in progress to return to Python, where finalisation can end their thread safely.

``atexit`` runs its hooks last registered first, and the SDK's ``TracerProvider`` registers one that
shuts its processors down (and so lets our worker evaluate what is pending). This module is imported by
``import otel_shapecheck`` so that its hook is registered before a provider created afterwards, and runs
after that provider's shutdown. A provider created before the import shuts down after the hook: what
its shutdown still had to evaluate is forwarded un-evaluated, never lost.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Callable, Iterator
from typing import Final

EXIT_WAIT_SECONDS: Final = 5.0
"""Longest the exit hook waits for native calls in progress to return."""


class InterpreterExitingError(RuntimeError):
    """Raised instead of starting a native call once the interpreter has begun to exit."""


class _Sections:
    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._closed = False
        self._active = 0
        self._stoppers: dict[int, Callable[[], None]] = {}
        self._next = 0

    @contextlib.contextmanager
    def section(self, stop: Callable[[], None] | None) -> Iterator[None]:
        with self._condition:
            if self._closed:
                raise InterpreterExitingError("the interpreter is exiting; no new native call starts")
            self._active += 1
            token = self._next
            self._next += 1
            if stop is not None:
                self._stoppers[token] = stop
        try:
            yield
        finally:
            with self._condition:
                self._active -= 1
                self._stoppers.pop(token, None)
                self._condition.notify_all()

    def close(self, timeout_seconds: float) -> bool:
        with self._condition:
            self._closed = True
            for stop in list(self._stoppers.values()):
                with contextlib.suppress(Exception):
                    stop()
            return self._condition.wait_for(lambda: self._active == 0, timeout_seconds)

    @property
    def closed(self) -> bool:
        return self._closed

    def reset_after_fork(self) -> None:
        # A forked child has only the forking thread: sections other threads had open do not exist there.
        self._condition = threading.Condition()
        self._active = 0
        self._stoppers = {}


_sections = _Sections()


def native_section(stop: Callable[[], None] | None = None) -> contextlib.AbstractContextManager[None]:
    """A context for one native call; ``stop`` (if given) asks it to return early at exit.

    Raises:
        InterpreterExitingError: on entry, once the interpreter has begun to exit.
    """
    return _sections.section(stop)


def exiting() -> bool:
    """Whether the exit hook has run (native calls are refused from then on)."""
    return _sections.closed


def stop_native_calls(timeout_seconds: float = EXIT_WAIT_SECONDS) -> bool:
    """Refuse new native calls, stop running ones, wait for them; whether all returned in time.

    Registered with ``atexit`` when this module is imported; tests call it in a child process.
    """
    return _sections.close(timeout_seconds)


atexit.register(stop_native_calls)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_sections.reset_after_fork)

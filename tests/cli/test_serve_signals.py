"""serve's signal handlers note flags and take no lock: a handler runs between two bytecodes of the main
thread, possibly inside the serving loop's own wait, where taking a lock that thread holds would hang
the process for good."""

from __future__ import annotations

import signal
import threading

from otel_shapecheck.cli._serve import Signals


def test_a_stop_is_noted_and_stays_noted() -> None:
    signals = Signals()
    assert not signals.stop
    signals.note_stop(signal.SIGTERM, None)
    assert signals.stop
    signals.note_stop(signal.SIGINT, None)
    assert signals.stop


def test_reloads_are_taken_once_and_coalesce() -> None:
    signals = Signals()
    assert not signals.take_reload()
    signals.note_reload(signal.SIGHUP, None)
    signals.note_reload(signal.SIGHUP, None)
    assert signals.take_reload()
    assert not signals.take_reload()
    assert not signals.stop


def test_event_set_inside_its_own_wait_would_hang() -> None:
    """Why the flags: the old handler, ``Event.set()``, needs the condition lock that ``Event.wait()``
    holds while it returns, so a handler run there by the same thread cannot proceed."""
    event = threading.Event()
    with event._cond:  # what the main thread holds at the end of its wait
        assert not event._cond._lock.acquire(timeout=0.2)  # type: ignore[attr-defined]

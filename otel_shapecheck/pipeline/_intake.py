"""The hand-off of ended spans from the application's threads to the thread that records them.

Recording a GenAI span in the ledger (classifying it, walking its live ancestors, sizing its facts,
the ledger's bookkeeping under its lock) costs some 10–20 µs of Python; ``on_end`` only appends the
span to this queue, as ``BatchSpanProcessor`` does, and one daemon thread records what it takes out,
in end order. The order matters: a span's live ancestors, its parent's end and its analyst attempts
must be seen as they were when it ended, so every end the ledger could care about goes through the
same queue (an ended span that is forwarded at once is queued as its context alone).

The queue holds at most ``max_size`` spans. When it is full the application is ending spans faster
than one thread records them, and the calling thread records the oldest queued span itself
(:meth:`LedgerIntake.make_room`), as it did before the queue existed: the application slows down to
the recording rate instead of losing facts. Recording is the ledger's own bookkeeping and never calls
user code (spans are forwarded after the recording lock is released), so that wait is for the
interpreter to schedule the thread recording now; it is bounded all the same, by
``MAKE_ROOM_WAIT_SECONDS``, past which the caller forwards its span as it came, counted.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Final, Protocol

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from otel_shapecheck.otlp._sdk_fields import span_context, span_parent
from otel_shapecheck.pipeline._hot_state import SPAN_ID, HotPathState, Item, LocalRootEnd

THREAD_NAME: Final = "ShapecheckRecorder"
RUN_ITEMS: Final = 32
"""Items the recording thread records under one holding of the recording lock, at most."""
MAKE_ROOM_WAIT_SECONDS: Final = 0.5
"""Longest a full queue's caller waits for another thread to finish recording one span (tens of
microseconds of work, plus however long the interpreter takes to schedule that thread)."""


class Recording(Protocol):
    """What queued items are recorded with: the :class:`~otel_shapecheck.pipeline._recorder.SpanRecorder`."""

    def record_ended(self, span: ReadableSpan) -> Sequence[ReadableSpan]:
        """Record one ended span; the spans to forward (itself, when the ledger does not keep it, and
        earlier spans it released into a full worker queue)."""

    def record_forwarded_end(
        self,
        context: SpanContext,
        *,
        out_of_order: bool = False,
        unrecorded: ReadableSpan | None = None,
        local_root: bool = False,
    ) -> Sequence[ReadableSpan]:
        """Record the end of a span the caller already forwarded (``out_of_order``: on the caller's
        thread, with spans ended before it perhaps still queued; ``unrecorded``: the span, one to
        record, that could not be queued; ``local_root``: the span has no parent here); spans to
        forward as above."""


class LedgerIntake:
    """An ordered queue of ended spans and the one thread that records them.

    Args:
        state: the hot path's state: the queue itself (``queued``), the thread's idle flag, and the
            forwarding of what a recording gives back.
        recorder: records each item, in order.
        max_size: spans and contexts queued at most (flush requests do not count).
    """

    def __init__(self, state: HotPathState, recorder: Recording, *, max_size: int) -> None:
        self._state = state
        self._recorder = recorder
        self.max_size = max_size
        """Read on the hot path as a plain attribute; zero once the intake is closed."""
        self._init_thread_state()

    def _init_thread_state(self) -> None:
        self._state.recording_idle = True
        self._wake = threading.Event()
        self._recording = threading.Lock()
        """Held while one item is taken out and recorded, by whichever thread records it: in order."""
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def restart_after_fork(self) -> None:
        """A forked child has no recording thread (the state was cleared): start afresh."""
        self._init_thread_state()
        if self.max_size:
            self._thread.start()

    def put_span(self, span: ReadableSpan, attempt: bool) -> bool:
        """Queue an ended span (``attempt``: an analyst attempt); False when it cannot be queued.

        The caller then forwards it as it came, counted as unrecorded; spans held for its end learn of
        it here, out of order.
        """
        parent = span_parent(span)
        if attempt and parent is not None:  # before the append: its parent may end right after
            self._state.attempt_parents[parent[SPAN_ID]] = None
        if self.put(span):
            return True
        context = span_context(span)
        if context is not None:
            ended = self._recorder.record_forwarded_end(context, out_of_order=True, unrecorded=span)
            self._state.forward_all(ended)
        self._state.count_unrecorded(1)
        return False

    def put_end(self, context: SpanContext, local_root: bool = False) -> None:
        """Queue the end of a span the caller forwards at once (``local_root``: it has no parent here);
        recorded here, out of order, when it cannot be queued."""
        if not self.put(LocalRootEnd(context) if local_root else context):
            ended = self._recorder.record_forwarded_end(context, out_of_order=True, local_root=local_root)
            self._state.forward_all(ended)

    def put(self, item: Item) -> bool:
        """Queue ``item`` for the recording thread, making room on the calling thread when the queue is
        full (:meth:`make_room`); False when it is not queued: no room in time, or the queue closed."""
        state = self._state
        items = state.queued
        if len(items) >= self.max_size and not self.make_room():
            return False
        items.append(item)
        if state.recording_idle and not self._wake.is_set():  # set and not yet taken: one wake does
            self._wake.set()
        # Closed (shut down) between the room test and the append: what close() took is forwarded,
        # but an item appended after that would be left in the queue for good.
        return bool(self.max_size) or not self._take_back(item)

    def make_room(self) -> bool:
        """Record the oldest queued items on the calling thread until one more fits; whether it does.

        Refuses (False) once the queue is closed, on the recording thread itself (a downstream that ends
        spans), and when no other thread finished its recording within ``MAKE_ROOM_WAIT_SECONDS``.
        """
        if self._stopping or threading.current_thread() is self._thread:
            return False
        items = self._state.queued
        while len(items) >= self.max_size and self._record_oldest(MAKE_ROOM_WAIT_SECONDS):
            pass
        return len(items) < self.max_size

    def _take_back(self, item: Item) -> bool:
        """Take ``item`` out of a queue that was closed while it was being appended; whether it was
        still there (the caller then forwards the span itself: nothing else will)."""
        try:
            self._state.queued.remove(item)
        except ValueError:  # taken meanwhile, by close() or the thread's last round
            return False
        return True

    def flush(self, timeout_seconds: float) -> bool:
        """Wait until everything queued before this call is recorded; False on timeout or no thread."""
        if not self._thread.is_alive():
            return not self._state.queued
        reached = threading.Event()
        self._state.queued.append(reached)
        self._wake.set()
        return reached.wait(timeout_seconds)

    def close(self, timeout_seconds: float) -> list[ReadableSpan]:
        """Refuse new spans, record what is queued, end the thread; return spans left unrecorded.

        Spans are left over only when the thread did not finish within the timeout (a recording call
        into a downstream that hangs, say): the caller forwards them as they are.
        """
        self.max_size = 0
        self._stopping = True
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_seconds)
        if not self._thread.is_alive():
            self._state.recording_idle = True
        return self._take_spans()

    def _take_spans(self) -> list[ReadableSpan]:
        spans: list[ReadableSpan] = []
        items = self._state.queued
        while items:
            try:
                item = items.popleft()
            except IndexError:  # the thread took the last one meanwhile
                break
            if isinstance(item, threading.Event):
                item.set()
            elif not isinstance(item, SpanContext | LocalRootEnd):
                spans.append(item)
        return spans

    def _run(self) -> None:
        state = self._state
        items = state.queued
        while True:
            state.recording_idle = True
            if not items:
                if self._stopping:
                    return
                self._wake.wait()
                self._wake.clear()
            # Not idle from here until the queue is empty again: the hot path reads the flag after its
            # own append, so a span it queued is either seen below or makes it wake the thread.
            state.recording_idle = False
            while self._record_run():
                pass

    def _record_run(self) -> bool:
        """Take up to ``RUN_ITEMS`` of the oldest items out and record them, in order, under one holding
        of the recording lock, then forward what they released; False when the queue was empty.

        One holding for several items is as ordered as one for each: whoever holds the lock takes the
        oldest item next, and a caller making room waits at most one run (a few hundred microseconds)
        for it. A flush request ends a run, and is answered once the spans recorded before it are
        forwarded, as :meth:`flush` promises.
        """
        released: list[ReadableSpan] = []
        flushed: threading.Event | None = None
        taken = 0
        with self._recording:
            items = self._state.queued
            recorder = self._recorder
            while taken < RUN_ITEMS:
                try:
                    item = items.popleft()
                except IndexError:  # empty, or a caller making room took the last one
                    break
                taken += 1
                try:  # _process() in line: this loop runs for every queued item
                    if isinstance(item, SpanContext):
                        ended = recorder.record_forwarded_end(item)
                    elif isinstance(item, LocalRootEnd):
                        ended = recorder.record_forwarded_end(item.context, local_root=True)
                    elif isinstance(item, threading.Event):
                        flushed = item
                        break
                    else:
                        ended = recorder.record_ended(item)
                except Exception:  # a bug here must not end the thread that forwards queued spans
                    self._state.counters.error("record", "Recording an ended span failed")
                    ended = (item,) if isinstance(item, ReadableSpan) else ()
                if ended:
                    released.extend(ended)
        self._state.forward_all(released)
        if flushed is not None:
            flushed.set()
        return taken > 0

    def _record_oldest(self, timeout: float) -> bool:
        """Take the oldest item out and record it under the recording lock, then forward what it
        released; False when the queue is empty or the lock did not come within ``timeout``."""
        if not self._recording.acquire(timeout=timeout):
            return False
        try:
            try:
                item = self._state.queued.popleft()
            except IndexError:  # empty, or the recording thread took the last one
                return False
            if isinstance(item, threading.Event):
                item.set()
                return True
            released = self._process(item)
        finally:
            self._recording.release()
        self._state.forward_all(released)
        return True

    def _process(self, item: ReadableSpan | SpanContext | LocalRootEnd) -> Sequence[ReadableSpan]:
        """Record one span or end (the recording lock held); the spans to forward once it is released."""
        try:
            if isinstance(item, SpanContext):
                return self._recorder.record_forwarded_end(item)
            if isinstance(item, LocalRootEnd):
                return self._recorder.record_forwarded_end(item.context, local_root=True)
            return self._recorder.record_ended(item)
        except Exception:  # a bug here must not end the thread that forwards queued spans
            self._state.counters.error("record", "Recording an ended span failed")
            return (item,) if isinstance(item, ReadableSpan) else ()

"""Between the spool and the pipeline: which acknowledged requests are loaded, and which items arrived.

Accepted requests are stored in the spool and queued here, oldest first. One loader thread moves them
into the pipeline (the span processor, the batch processors) while its item and byte budgets have room:
a request just accepted hands over the message the door already parsed; one that waited (the pipeline
was full, or a previous run left it) is read back from the spool. Each item handed to the pipeline is
tagged with its entry and index; the forwarding exporters report every batch before and after export
(:meth:`SpoolQueue.before_spans`, :meth:`SpoolQueue.after_spans` and the log twins), which marks items
sent and done in the spool, frees the budgets, and deletes an entry once all of its items are done.

Spans are recognised by their ``SpanContext`` object, which the span processor's enriched copies keep;
log records by a tag on the API record, which the batch processor's shallow copy keeps. With a
pass-through (:mod:`~otel_shapecheck.gateway._passthrough`) the scope groups of a trace request that need
no evaluation are not converted at all: they go to the raw forwarder as protobuf, with their span
references, and its reports (:meth:`SpoolQueue.raw_sent`, :meth:`SpoolQueue.raw_after`) account for them
as the exporters' do.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from google.protobuf.message import Message
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext

from otel_shapecheck.gateway._admission import Budget
from otel_shapecheck.gateway._decode import UnreadableRequest, log_records_of, parse_stored, spans_of
from otel_shapecheck.gateway._passthrough import Split
from otel_shapecheck.gateway._spool import Spool
from otel_shapecheck.gateway._spool_entry import SpoolEntry, bit, set_bit, set_bits

logger = logging.getLogger(__name__)

_TAG = "shapecheck_spool_ref"
_IDLE_WAIT_SECONDS = 0.5
_TRIM_AFTER_SECONDS = 1.0

Ingest = Callable[[Sequence[ReadableSpan], Sequence[ReadWriteLogRecord]], bool]
"""Hands converted items to the pipeline; False means they are consumed there and never exported."""
Splitter = Callable[[ExportTraceServiceRequest, bytes, bytearray], Split]
RawRef = tuple["_Loaded", list[int]]
"""A passed-through request as its forwarder reports it back: the entry loaded, and its span indices."""
"""Divides a stored trace request into what passes through and what is converted."""


@dataclass(eq=False)
class _Loaded:
    """An entry whose items are in the pipeline."""

    entry: SpoolEntry
    count: int
    """Items handed to the pipeline in this run."""
    charged: int
    """Pipeline bytes charged for it."""
    confirmed: int = 0
    released: int = 0


@dataclass
class QueueCounts:
    """What the queue saw: carried over from a previous run, forwarded, dropped, still waiting."""

    carried_over: int = 0
    """Items a previous run left in the spool (found at start)."""
    in_doubt: int = 0
    """Of those, items sent before the crash and not confirmed: possible duplicates at the destination."""
    forwarded: int = 0
    """Items the destination confirmed in this run."""
    dropped: int = 0
    """Items given up (``give_up_after_seconds``) or that could not be rebuilt from the spool."""


class SpoolQueue:
    """Loads spooled entries into the pipeline within its budgets and tracks every item to the end.

    Args:
        spool: where accepted requests are stored.
        ingest: hands one entry's converted items to the pipeline.
        max_items: items in the pipeline at once (the batch processors are sized to hold them).
        max_bytes: bytes of stored requests whose items are in the pipeline at once.
        abandoning: whether a failed batch is being abandoned at shutdown (else it was given up).
        split: divides a trace request for the pass-through (None: every span is converted).
        forward_raw: sends a passed-through request with its span references (with ``split``).
    """

    def __init__(
        self,
        spool: Spool,
        ingest: Ingest,
        *,
        max_items: int,
        max_bytes: int,
        abandoning: Callable[[], bool],
        split: Splitter | None = None,
        forward_raw: Callable[[bytes, RawRef, int], None] | None = None,
    ) -> None:
        self.spool = spool
        self._ingest = ingest
        self._abandoning = abandoning
        self._split = split if forward_raw is not None else None
        self._forward_raw = forward_raw
        self.items = Budget(max_items)
        self.bytes = Budget(max_bytes)
        self.counts = QueueCounts()
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: deque[tuple[SpoolEntry, Message | None, bytes | None]] = deque()
        self._spans: dict[int, tuple[SpanContext, _Loaded, int]] = {}
        self._loading = True
        self._closed = False
        self._logged_failure = False
        self._loaded_since_trim = False
        self._empty_since: float | None = None
        self._thread = threading.Thread(target=self._run, name="shapecheck-gateway-loader", daemon=True)

    def start(self) -> None:
        """Queue what a previous run left, then start loading."""
        for entry in self.spool.recover():
            self.counts.carried_over += entry.remaining
            self.counts.in_doubt += entry.in_doubt
            self._pending.append((entry, None, None))
        if self._pending:
            logger.warning(
                "Forwarding %d items a previous run left in the spool (%s); up to %d of them may arrive "
                "twice (sent before it stopped, not confirmed)",
                self.counts.carried_over,
                self.spool.description,
                self.counts.in_doubt,
            )
        self._thread.start()

    @property
    def pending(self) -> int:
        """Entries waiting to be loaded."""
        with self._lock:
            return len(self._pending)

    def add(self, entry: SpoolEntry, message: Message | None, body: bytes | None = None) -> None:
        """Queue an entry just stored; ``message`` is its parsed request and ``body`` the bytes stored
        (both kept until it is loaded, so neither is read back from the spool)."""
        with self._lock:
            self._pending.append((entry, message, body))
        self._wake.set()

    def stop_loading(self) -> None:
        """Load nothing more: what is still queued stays in the spool."""
        self._loading = False
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)

    def close(self) -> int:
        """Ignore export results from now on; return the items left in the spool (not confirmed)."""
        self.stop_loading()
        with self._lock:
            self._closed = True
        try:
            return self.spool.remaining_items()
        except Exception:  # a closed or broken database: nothing more can be learned
            logger.exception("Counting what is left in the spool failed")
            return 0

    # The loader thread.

    def _run(self) -> None:
        while self._loading:
            with self._lock:
                head = self._pending[0] if self._pending else None
            if head is None or not self._room_for(head[0]):
                if head is None and self._drained_for_a_while():
                    self._loaded_since_trim = False
                    release_free_memory()
                self._wake.wait(_IDLE_WAIT_SECONDS)
                self._wake.clear()
                continue
            with self._lock:
                self._pending.popleft()
            self._loaded_since_trim = True
            try:
                self._load(*head)
            except Exception:  # a bug must not stop the loading of everything after it
                logger.exception("Loading a spooled request into the pipeline failed")

    def _drained_for_a_while(self) -> bool:
        """Whether something was loaded since the last trim, and the pipeline has been empty a moment."""
        if not self._loaded_since_trim or self.items.in_use:
            self._empty_since = None
            return False
        now = time.monotonic()
        if self._empty_since is None:
            self._empty_since = now
        return now - self._empty_since >= _TRIM_AFTER_SECONDS

    def _room_for(self, entry: SpoolEntry) -> bool:
        return self.items.fits(entry.remaining) and self.bytes.fits(entry.size)

    def _load(self, entry: SpoolEntry, message: Message | None, body: bytes | None) -> None:
        if message is None or (body is None and self._split is not None):
            try:
                body = self.spool.body(entry)
                message = parse_stored(entry.kind, body)
            except UnreadableRequest:  # damaged where the spool's checks cannot see: lost, once
                self._note_failure(entry.remaining)
                self._finish([_Loaded(entry, 0, 0)], [])
                return
        loaded = _Loaded(entry, 0, entry.size)
        spans: list[ReadableSpan] = []
        records: list[ReadWriteLogRecord] = []
        raw: tuple[bytes, RawRef, int] | None = None
        converted = 0
        try:
            if entry.kind == "traces":
                indices: Sequence[int] | None = None
                if self._split is not None and body is not None:
                    assert isinstance(message, ExportTraceServiceRequest)
                    split = self._split(message, body, entry.done)
                    if split.raw is not None and split.raw_indices:
                        raw = (split.raw, (loaded, split.raw_indices), len(split.raw_indices))
                    converted += len(split.raw_indices)
                    message, indices = split.evaluated, split.evaluated_indices
                for number, span in spans_of(message) if message is not None else ():
                    index = indices[number] if indices is not None else number
                    converted += 1
                    if not bit(entry.done, index) and span.context is not None:
                        spans.append(span)
                        self._spans[id(span.context)] = (span.context, loaded, index)
            else:
                for index, record in log_records_of(message):
                    converted += 1
                    if not bit(entry.done, index):
                        setattr(record.log_record, _TAG, (loaded, index))  # noqa: B010 - our own tag
                        records.append(record)
        except Exception:  # validated at the door: a conversion bug; the rest of the entry is dropped
            self._note_failure(entry.items - converted)
        loaded.count = len(spans) + len(records) + (raw[2] if raw is not None else 0)
        self.items.take(loaded.count)
        self.bytes.take(loaded.charged)
        if not loaded.count:
            self._finish([loaded], [])
            return
        if raw is not None and self._forward_raw is not None:
            self._forward_raw(*raw)
        if (spans or records) and not self._ingest(spans, records):
            self._confirm([(loaded, index) for index in range(entry.items) if not bit(entry.done, index)])

    def _note_failure(self, lost: int) -> None:
        with self._lock:
            self.counts.dropped += max(0, lost)
        if not self._logged_failure:
            self._logged_failure = True
            logger.exception("Rebuilding a spooled request failed; %d items dropped (logged once)", lost)

    # Export results (the forwarding exporters' threads).

    def before_spans(self, batch: Sequence[ReadableSpan]) -> None:
        """Mark the batch's spans as sent (possible duplicates should the gateway die now)."""
        self._sent(self._span_refs(batch, pop=False))

    def after_spans(self, batch: Sequence[ReadableSpan], delivered: bool) -> None:
        """Confirm the batch's spans (or drop them, when given up)."""
        self._after(self._span_refs(batch, pop=delivered or not self._abandoning()), delivered)

    def raw_sent(self, ref: RawRef) -> None:
        """Mark a passed-through request's spans as sent (in one go: they travel together)."""
        loaded, indices = ref
        with self._lock:
            if self._closed:
                return
            touched = set_bits(loaded.entry.sent, indices, loaded.entry.items)
        if touched:
            self._write(lambda: self.spool.mark_sent([loaded.entry]))

    def raw_after(self, ref: RawRef, delivered: bool) -> None:
        """Confirm a passed-through request's spans (or drop them, when given up), as :meth:`_after`."""
        loaded, indices = ref
        if not delivered:
            if self._abandoning():
                return
            with self._lock:
                self.counts.dropped += len(indices)
        with self._lock:
            if self._closed:
                return
            released = set_bits(loaded.entry.done, indices, loaded.entry.items)
            loaded.confirmed += released
            if delivered:
                self.counts.forwarded += released
        self.items.release(released)
        finished = loaded.entry.remaining == 0
        self._finish([loaded] if finished else [], [] if finished else [loaded])

    def before_logs(self, batch: Sequence[ReadableLogRecord]) -> None:
        """Mark the batch's log records as sent."""
        self._sent(_log_refs(batch))

    def after_logs(self, batch: Sequence[ReadableLogRecord], delivered: bool) -> None:
        """Confirm the batch's log records (or drop them, when given up)."""
        self._after(_log_refs(batch), delivered)

    def _span_refs(self, batch: Sequence[ReadableSpan], *, pop: bool) -> list[tuple[_Loaded, int]]:
        refs = []
        with self._lock:
            for span in batch:
                key = id(span.context)
                found = self._spans.pop(key, None) if pop else self._spans.get(key)
                if found is not None:
                    refs.append((found[1], found[2]))
        return refs

    def _sent(self, refs: list[tuple[_Loaded, int]]) -> None:
        touched: dict[int, SpoolEntry] = {}
        with self._lock:
            if self._closed:
                return
            for loaded, index in refs:
                if set_bit(loaded.entry.sent, index):
                    touched[id(loaded.entry)] = loaded.entry
        self._write(lambda: self.spool.mark_sent(touched.values()))

    def _after(self, refs: list[tuple[_Loaded, int]], delivered: bool) -> None:
        if delivered:
            self._confirm(refs)
        elif not self._abandoning():
            with self._lock:
                self.counts.dropped += len(refs)
            self._confirm(refs, forwarded=False)

    def _confirm(self, refs: list[tuple[_Loaded, int]], *, forwarded: bool = True) -> None:
        touched: dict[int, _Loaded] = {}
        released_items = 0
        with self._lock:
            if self._closed:
                return
            for loaded, index in refs:
                if set_bit(loaded.entry.done, index):
                    loaded.confirmed += 1
                    released_items += 1
                    touched[id(loaded)] = loaded
            if forwarded:
                self.counts.forwarded += released_items
        finished = [loaded for loaded in touched.values() if loaded.entry.remaining == 0]
        ongoing = [loaded for loaded in touched.values() if loaded.entry.remaining]
        self.items.release(released_items)
        self._finish(finished, ongoing)

    def _finish(self, finished: list[_Loaded], ongoing: list[_Loaded]) -> None:
        released = 0
        for loaded in finished:
            released += loaded.charged - loaded.released
            loaded.released = loaded.charged
        for loaded in ongoing:
            share = loaded.charged * loaded.confirmed // max(loaded.count, 1)
            released += share - loaded.released
            loaded.released = share
        self.bytes.release(released)
        self._write(lambda: self.spool.mark(loaded.entry for loaded in ongoing))
        self._write(lambda: self.spool.delete([loaded.entry for loaded in finished]))
        self._wake.set()

    def _write(self, write: Callable[[], None]) -> None:
        try:
            write()
        except Exception:  # the entry stays as it was: at worst forwarded again after a restart
            if not self._logged_failure:
                self._logged_failure = True
                logger.exception("Writing to the spool failed (logged once)")


def _trimmer() -> Callable[[], object] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], object] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to hand back
        return None
    return lambda: trim(0)


_TRIM = _trimmer()


def release_free_memory() -> None:
    """After a drain: collect the cycles that still hold spans, and hand freed memory back to the system
    (glibc keeps it otherwise)."""
    gc.collect()
    if _TRIM is not None:
        _TRIM()


def _log_refs(batch: Sequence[ReadableLogRecord]) -> list[tuple[_Loaded, int]]:
    refs = []
    for record in batch:
        tag = getattr(record.log_record, _TAG, None)
        if tag is not None:
            refs.append(tag)
    return refs

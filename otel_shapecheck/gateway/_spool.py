"""The gateway's spool: every acknowledged request, kept until each of its items has been forwarded.

A request is written here (validated, as an OTLP protobuf export request) before the sender gets its
answer, and deleted once every span or log record in it has reached the destination. What a crashed or
killed gateway left is found at the next start and forwarded then, so delivery is at-least-once.

Each entry keeps two bitmaps over its items: ``sent`` (handed to the forwarding exporter at least once)
and ``done`` (the destination confirmed it). On replay, done items are skipped and items sent but not
done are *in doubt*: they may have reached the destination before the crash, so they are counted as
possible duplicates.

:class:`SqliteSpool` is the durable store: one sqlite3 database in WAL mode in the spool directory,
locked (an exclusive ``flock`` on the database file itself) so that two gateways never replay the same
entries, and checked at every start (:mod:`._spool_files`: a damaged one is moved aside, what still
reads is recovered and what could not be is reported in :attr:`SqliteSpool.damage`). With
``synchronous=NORMAL`` (the default) a commit survives the process being killed (``kill -9``, the OOM
killer); ``fsync=True`` makes every commit survive a power loss too, at the cost of one fsync per
request. Only two writes are committed at once: the store of a request, before its answer, and its
``sent`` mark, before its items go out. What follows (``done`` progress, the delete of a finished entry)
waits in memory and is written in one transaction with the others deferred, as soon as eight are
waiting (by the forwarding thread that deferred the last) or by a flusher thread within
``flush_seconds`` (0.25 s). Small batches keep the pages of deleted entries in reuse by the next ones
stored; freed pages are not zeroed (``secure_delete=FAST``), which would write each request's size a
second time. A crash loses at most those deferred writes: the entries they concern are
found again with their ``sent`` bits, so they are forwarded once more and counted as possibly sent twice,
never lost. Its volume is watched (:mod:`._spool_volume`): requests are refused while the disk would be
too full to checkpoint the write-ahead log, which is checkpointed and truncated once drained.
:class:`MemorySpool` has the same interface and keeps entries in memory only (``--no-spool``).
Both are bounded in bytes: space is reserved before a request's body is read, and a request that does
not fit is refused with backpressure, never dropped after it was acknowledged.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

from otel_shapecheck._settings import non_negative_float
from otel_shapecheck._settings_table import GATEWAY, by_name
from otel_shapecheck.gateway._spool_entry import Kind, SpoolEntry, SpoolSpace, bitmap
from otel_shapecheck.gateway._spool_files import DATABASE_NAME, SpoolDamage, SpoolError, SpoolFiles
from otel_shapecheck.gateway._spool_volume import (
    CHECKPOINT_EVERY_SECONDS,
    WAL_LIMIT_BYTES,
    SpoolVolume,
    is_full,
)

logger = logging.getLogger(__name__)

_KINDS: dict[str, int] = {"traces": 0, "logs": 1}
_KIND_NAMES: dict[int, Kind] = {0: "traces", 1: "logs"}
_FLUSH = by_name(GATEWAY, "spool_flush_millis")
_DEFERRED_WRITES_PER_FLUSH = 8
"""Deferred writes that are flushed at once, before the interval ends: in small batches the pages of
deleted entries are reused by the next ones stored (large batches grow the file and the WAL)."""
_DELETES_PER_STATEMENT = 500
"""Ids in one ``DELETE … WHERE id IN (…)``: well under sqlite's limit on a statement's parameters."""


def spool_flush_seconds(explicit: float | None = None) -> float:
    """Longest the durable spool defers its deletes and ``done`` marks, in seconds (argument, else
    ``OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS``, else 250 ms)."""
    if explicit is not None:
        return non_negative_float("flush_seconds", explicit, None, 0.0)
    millis: int = _FLUSH.resolve(None)
    return millis / 1000


class SpoolFull(Exception):
    """The spool's volume has no room to store a request (it is refused with backpressure)."""


class MemorySpool:
    """Entries in memory only: acknowledged items are lost if the process dies (``--no-spool``)."""

    durable = False
    description = "memory (no spool directory)"
    damage: SpoolDamage | None = None

    def __init__(self, max_bytes: int) -> None:
        self._lock = threading.Lock()
        self._bodies: dict[int, tuple[SpoolEntry, bytes]] = {}
        self._next_id = 1
        self.space = SpoolSpace(max_bytes, 0)

    def recover(self) -> list[SpoolEntry]:
        """Nothing survives a restart in memory."""
        return []

    def put(self, kind: Kind, body: bytes, items: int, reserved: int) -> SpoolEntry:
        """Store one request; ``reserved`` bytes were reserved for it beforehand."""
        with self._lock:
            entry = SpoolEntry(self._next_id, kind, items, len(body), bitmap(items), bitmap(items))
            self._next_id += 1
            self._bodies[entry.id] = (entry, body)
        self.space.store(reserved, len(body))
        return entry

    def body(self, entry: SpoolEntry) -> bytes:
        """The stored request of ``entry``."""
        with self._lock:
            return self._bodies[entry.id][1]

    def mark_sent(self, entries: Iterable[SpoolEntry]) -> None:
        """Entries' items are about to be sent (kept in the entry objects themselves here)."""

    def mark(self, entries: Iterable[SpoolEntry]) -> None:
        """Entries' items were confirmed (kept in the entry objects themselves here)."""

    def flush(self) -> None:
        """Nothing is deferred in memory."""

    def delete(self, entries: Sequence[SpoolEntry]) -> None:
        """Forget entries whose items were all forwarded."""
        freed = 0
        with self._lock:
            for entry in entries:
                if self._bodies.pop(entry.id, None) is not None:
                    freed += entry.size
        self.space.free(freed)

    def remaining_items(self) -> int:
        """Items stored and not yet confirmed."""
        with self._lock:
            return sum(entry.remaining for entry, _ in self._bodies.values())

    def close(self) -> None:
        """Nothing to release."""


class SqliteSpool:
    """Entries in an sqlite3 database (WAL) in ``directory``, surviving a crash of the process.

    ``flush_seconds`` (argument, ``OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS``, 0.25 s) is the longest
    the deletes and ``done`` marks of forwarded requests wait in memory: what a crash can make the next
    start forward again, at most.

    Raises:
        SpoolError: the directory cannot be created or written, the database is unreadable, or another
            gateway holds the directory's lock.
    """

    durable = True

    def __init__(
        self,
        directory: str | os.PathLike[str],
        max_bytes: int,
        *,
        fsync: bool = False,
        flush_seconds: float | None = None,
    ) -> None:
        self.flush_seconds = spool_flush_seconds(flush_seconds)
        self.directory = Path(directory).expanduser()
        self.description = str(self.directory)
        self._files = SpoolFiles.open(self.directory, fsync=fsync)
        self.damage = self._files.damage
        """What a check at start found damaged and could not recover (``None``: nothing)."""
        self._db = self._files.db
        self._record = self._files.record
        self._lock = threading.Lock()
        self.volume = SpoolVolume(self.directory / f"{DATABASE_NAME}-wal", self.description)
        try:
            self._db.execute(f"PRAGMA journal_size_limit={WAL_LIMIT_BYTES}")
            used = int(self._db.execute("SELECT COALESCE(SUM(size), 0) FROM entries").fetchone()[0])
        except sqlite3.Error as error:
            self._files.close()
            raise SpoolError(f"--spool-dir {self.description!r}: unreadable spool ({error})") from None
        self.space = SpoolSpace(max_bytes, used, self._volume_has_room)
        self._closed = False
        self._deferred_lock = threading.Lock()
        self._deferred: dict[int, SpoolEntry | None] = {}
        """Writes waiting for the next commit: an entry's bitmaps to write, or ``None`` to delete it."""
        self._deleted_items: dict[int, int] = {}
        """Items of each entry whose delete is deferred (for the record)."""
        self._deferred_waiting = threading.Event()
        self._closing = threading.Event()
        self._flusher = threading.Thread(
            target=self._flush_deferred, name="shapecheck-spool-flush", daemon=True
        )
        self._flusher.start()

    def recover(self) -> list[SpoolEntry]:
        """Every entry a previous run left (or this one, deferred writes applied), oldest first (without
        bodies)."""
        self.flush()
        with self._lock:
            rows = self._db.execute("SELECT id, kind, items, size, sent, done FROM entries ORDER BY id")
            return [
                SpoolEntry(
                    row[0],
                    _KIND_NAMES.get(row[1], "traces"),
                    row[2],
                    row[3],
                    bytearray(row[4] or b""),
                    bytearray(row[5] or b""),
                )
                for row in rows.fetchall()
            ]

    def put(self, kind: Kind, body: bytes, items: int, reserved: int) -> SpoolEntry:
        """Store one request durably (committed when this returns).

        Raises:
            SpoolFull: the volume has no room (the first of an episode is logged, the others not).
        """
        sent, done = bitmap(items), bitmap(items)
        with self._lock:
            self._check_open()
            try:
                cursor = self._db.execute(
                    "INSERT INTO entries (kind, items, size, sent, done, body) VALUES (?, ?, ?, ?, ?, ?)",
                    (_KINDS[kind], items, len(body), bytes(sent), bytes(done), body),
                )
            except sqlite3.OperationalError as error:
                if not is_full(error):
                    raise
                self.volume.found_full(str(error))
                self.volume.checkpoint(self._db)
                raise SpoolFull(str(error)) from None
            entry_id = cursor.lastrowid
            assert entry_id is not None
            self._record.stored(entry_id, items)
        self.space.store(reserved, len(body))
        return SpoolEntry(entry_id, kind, items, len(body), sent, done)

    def body(self, entry: SpoolEntry) -> bytes:
        """The stored request of ``entry``."""
        with self._lock:
            self._check_open()
            row = self._db.execute("SELECT body FROM entries WHERE id = ?", (entry.id,)).fetchone()
        if row is None:
            raise KeyError(entry.id)
        return bytes(row[0])

    def mark_sent(self, entries: Iterable[SpoolEntry]) -> None:
        """Write the entries' bitmaps now (committed when this returns): their items are about to be sent,
        and after a crash they must be counted as possibly sent twice."""
        rows = [(bytes(entry.sent), bytes(entry.done), entry.id) for entry in entries]
        if not rows:
            return
        with self._lock:
            if self._closed:
                return
            if len(rows) == 1:  # one statement commits on its own: the common case, one request
                self._db.execute("UPDATE entries SET sent = ?, done = ? WHERE id = ?", rows[0])
                return
            self._db.execute("BEGIN")
            self._db.executemany("UPDATE entries SET sent = ?, done = ? WHERE id = ?", rows)
            self._db.execute("COMMIT")

    def mark(self, entries: Iterable[SpoolEntry]) -> None:
        """Write the entries' bitmaps within ``flush_seconds`` (``done`` progress: lost to
        a crash, its items are forwarded again)."""
        self._defer({entry.id: entry for entry in entries})

    def delete(self, entries: Sequence[SpoolEntry]) -> None:
        """Delete entries whose items were all forwarded within ``flush_seconds`` (lost to a
        crash, they are forwarded again); their space is free at once."""
        if not entries:
            return
        with self._deferred_lock:
            self._deleted_items.update((entry.id, entry.items) for entry in entries)
        self._defer(dict.fromkeys((entry.id for entry in entries), None))
        self.space.free(sum(entry.size for entry in entries))

    def flush(self) -> None:
        """Commit the deferred marks and deletes now, in one transaction (and a checkpoint put off)."""
        with self._lock:
            if not self._closed:
                self._write_deferred()
                if self.volume.checkpoint_wanted and self.volume.due():
                    self.volume.checkpoint(self._db)

    def _defer(self, writes: dict[int, SpoolEntry | None]) -> None:
        if not writes or self._closed:
            return
        with self._deferred_lock:
            for entry_id, write in writes.items():
                if self._deferred.get(entry_id, 0) is not None:  # a delete is final
                    self._deferred[entry_id] = write
            full = len(self._deferred) >= _DEFERRED_WRITES_PER_FLUSH
        if full:  # in this (forwarding) thread: a small batch keeps the freed pages in reuse
            self.flush()
        else:
            self._deferred_waiting.set()

    def _write_deferred(self) -> None:
        """One transaction of every deferred write (the caller holds ``_lock``); put back if it fails."""
        with self._deferred_lock:
            deferred, self._deferred = self._deferred, {}
            deleted = [entry_id for entry_id, write in deferred.items() if write is None]
            deleted_items = {entry_id: self._deleted_items.pop(entry_id, 0) for entry_id in deleted}
            items = sum(deleted_items.values())
        if not deferred:
            return
        marked = [
            (bytes(write.sent), bytes(write.done), entry_id)
            for entry_id, write in deferred.items()
            if write is not None
        ]
        self._record.deleting(len(deleted), items)  # before the commit: the record never claims more
        try:
            self._db.execute("BEGIN")
            for start in range(0, len(deleted), _DELETES_PER_STATEMENT):
                # One statement for many rows: each statement run releases the GIL and waits to take it back.
                chunk = deleted[start : start + _DELETES_PER_STATEMENT]
                self._db.execute(f"DELETE FROM entries WHERE id IN ({','.join('?' * len(chunk))})", chunk)
            self._db.executemany("UPDATE entries SET sent = ?, done = ? WHERE id = ?", marked)
            self._db.execute("COMMIT")
            if self.volume.full or (deleted and self.space.used == 0):
                # Drained (or out of space): hand the log's pages back to the volume, at most once a
                # second (else the flusher does it within a second).
                self.volume.checkpoint_wanted = True
                if self.volume.due():
                    self.volume.checkpoint(self._db)
        except BaseException as error:
            if is_full(error):
                self.volume.found_full(str(error))
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            self._record.undo(len(deleted), items)
            with self._deferred_lock:  # what was deferred since is newer
                self._deferred = {**deferred, **self._deferred}
                self._deleted_items.update(deleted_items)
            raise

    def _flush_deferred(self) -> None:
        """The flusher thread: a deferred write waits at most ``flush_seconds``, and the
        writes of that interval share one commit."""
        while not self._closed:
            self._deferred_waiting.wait(CHECKPOINT_EVERY_SECONDS if self.volume.checkpoint_wanted else None)
            self._closing.wait(self.flush_seconds)
            self._deferred_waiting.clear()
            try:
                self.flush()
            except sqlite3.OperationalError as error:  # kept for the next flush
                if not is_full(error):  # a full volume was logged once, as its episode began
                    logger.exception("Writing deferred spool marks failed")
            except Exception:  # kept for the next flush: at worst forwarded again after a restart
                logger.exception("Writing deferred spool marks failed")

    def remaining_items(self) -> int:
        """Items stored and not yet confirmed (deferred writes committed first)."""
        self.flush()
        with self._lock:
            rows = self._db.execute("SELECT items, done FROM entries").fetchall()
        return sum(
            SpoolEntry(0, "traces", row[0], 0, done=bytearray(row[1] or b"")).remaining for row in rows
        )

    def close(self) -> None:
        """Commit the deferred writes, close the database (checkpointing the WAL) and release the
        directory's lock."""
        with self._lock:
            if self._closed:
                return
            try:
                self._write_deferred()
            except sqlite3.Error:  # kept in the database as they were: at worst forwarded again
                logger.exception("Writing deferred spool marks at close failed")
            self._closed = True
            self._closing.set()
            self._deferred_waiting.set()
            self._files.close()

    def _volume_has_room(self, size: int) -> bool:
        """Whether the volume keeps room for ``size`` more (see :class:`SpoolVolume`); a refusal also
        checkpoints, when one is due and the database is free."""
        if self.volume.has_room(size):
            return True
        if self.volume.due() and self._lock.acquire(blocking=False):
            try:
                if not self._closed:
                    self.volume.checkpoint(self._db)
            finally:
                self._lock.release()
        return False

    def _check_open(self) -> None:
        if self._closed:
            raise SpoolError(f"the spool in {self.description!r} is closed")


Spool = MemorySpool | SqliteSpool


def default_spool_directory() -> Path:
    """A per-user directory: ``$XDG_STATE_HOME/otel-shapecheck/spool``, else under ``~/.local/state``."""
    state = os.environ.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state else Path.home() / ".local" / "state"
    return base / "otel-shapecheck" / "spool"

"""The durable spool's files: its database opened, locked and checked, and the record of what it holds.

The database is locked by an exclusive ``flock`` on the database file itself, so no side file can let
a second gateway in. It is checked at every start with ``PRAGMA quick_check`` and against the record.

A damaged database cannot say what it lost, so :class:`SpoolRecord` keeps a tally in a file of its own
(``spool.record``): the last request id stored, and the requests and items stored and not yet deleted.
It is written after a store is committed and before a delete is, so it never claims more than the
database holds: at start, a database that holds fewer requests or items than the record, or whose ids
stop short of the record's last one (a lost write-ahead log), or that fails ``PRAGMA quick_check``, is
damaged. :func:`recover_damaged` then moves its files aside (``damaged-<time>/``, for forensics), copies
every row that still reads into a new database, and says what could not be recovered: at least the
record's items less those copied.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otel_shapecheck.gateway._decode import UnreadableRequest, parse_stored

logger = logging.getLogger(__name__)

RECORD_NAME = "spool.record"
DATABASE_NAME = "spool.sqlite3"
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,
    items INTEGER NOT NULL,
    size INTEGER NOT NULL,
    sent BLOB,
    done BLOB,
    body BLOB NOT NULL
)
"""
_DAMAGE_CODES = (11, 26)
"""``SQLITE_CORRUPT`` and ``SQLITE_NOTADB``: errors that mean the file is damaged, not unreachable."""
_FORMAT = "{:020d} {:020d} {:020d}\n"
_COLUMNS = "id, kind, items, size, sent, done, body"


@dataclass(frozen=True)
class Tally:
    """Requests and items held, and the last request id stored."""

    last_id: int = 0
    entries: int = 0
    items: int = 0

    def short_of(self, record: Tally) -> bool:
        """Whether this (the database's) tally holds less than ``record`` says it must."""
        return self.last_id < record.last_id or self.entries < record.entries or self.items < record.items


@dataclass(frozen=True)
class SpoolDamage:
    """A damaged spool found at start: why, what was recovered, what was lost, where its files went."""

    reason: str
    lost_items: int
    """Acknowledged items that could not be recovered (at least this many)."""
    recovered_items: int
    moved_to: Path

    def describe(self) -> str:
        """One line for the log and the exit summary."""
        return (
            f"spool damaged ({self.reason}): {self.lost_items} acknowledged items lost, "
            f"{self.recovered_items} recovered; its files were moved to {self.moved_to}"
        )


class SpoolRecord:
    """The tally file of one spool directory (see the module docstring).

    With ``fsync`` a delete's tally is on disk before the delete is committed, so a power loss cannot
    make the record claim a request the database no longer holds.
    """

    def __init__(self, path: Path, *, fsync: bool = False) -> None:
        self._fsync = fsync
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self.known = _parse(os.pread(self._fd, 128, 0))
        """The tally a previous run left (``None``: no record yet, a new or older spool)."""
        self._tally = Tally()

    def reset(self, tally: Tally) -> None:
        """Record ``tally`` as what the database holds now."""
        self._write(tally)

    def stored(self, entry_id: int, items: int) -> None:
        """A request was committed (called after the commit)."""
        tally = self._tally
        self._write(Tally(max(tally.last_id, entry_id), tally.entries + 1, tally.items + items))

    def deleting(self, entries: int, items: int) -> None:
        """Requests are about to be deleted (called before the commit); :meth:`undo` if it fails."""
        tally = self._tally
        self._write(Tally(tally.last_id, tally.entries - entries, tally.items - items))
        if self._fsync:
            os.fsync(self._fd)

    def undo(self, entries: int, items: int) -> None:
        """A delete announced by :meth:`deleting` was rolled back."""
        tally = self._tally
        self._write(Tally(tally.last_id, tally.entries + entries, tally.items + items))

    def close(self) -> None:
        """Release the file."""
        os.close(self._fd)

    def _write(self, tally: Tally) -> None:
        self._tally = tally
        os.pwrite(self._fd, _FORMAT.format(tally.last_id, tally.entries, tally.items).encode(), 0)


def _parse(data: bytes) -> Tally | None:
    fields = data.split()
    if len(fields) != 3 or not all(field.isdigit() for field in fields):
        return None
    return Tally(*(int(field) for field in fields))


def database_tally(db: sqlite3.Connection) -> Tally:
    """What the database holds: its last id (sqlite's own sequence), requests and items."""
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'entries'").fetchone()
    entries, items = db.execute("SELECT COUNT(*), COALESCE(SUM(items), 0) FROM entries").fetchone()
    return Tally(int(row[0]) if row else 0, int(entries), int(items))


def integrity_problem(db: sqlite3.Connection) -> str | None:
    """What ``PRAGMA quick_check`` found wrong (its first line), or ``None`` when it is sound."""
    rows = db.execute("PRAGMA quick_check").fetchall()
    first = str(rows[0][0]) if rows else "no answer"
    return None if first == "ok" else " ".join(first.split())[:200]


class SpoolError(ValueError):
    """The spool cannot be opened (a usage error: the message names the directory and the problem)."""


@dataclass
class SpoolFiles:
    """An open, locked and checked spool database, its record, and the damage found at start."""

    db: sqlite3.Connection
    record: SpoolRecord
    lock: int
    damage: SpoolDamage | None

    @classmethod
    def open(cls, directory: Path, *, fsync: bool) -> SpoolFiles:
        """Lock, open and check the spool in ``directory``; a damaged one is moved aside and what still
        reads is recovered into a new database.

        Raises:
            SpoolError: the directory cannot be used, another gateway holds it, or the database cannot
                be opened (for a reason other than damage).
        """
        where = f"--spool-dir {str(directory)!r}"
        path = directory / DATABASE_NAME
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            lock = lock_database(path)
        except OSError as error:
            raise SpoolError(f"{where}: cannot use it ({error.strerror})") from None
        if lock is None:
            raise SpoolError(f"{where} is in use by another gateway; give each its own")
        record: SpoolRecord | None = None
        try:
            record = SpoolRecord(directory / RECORD_NAME, fsync=fsync)
            db, damage = _checked(directory, record.known, fsync)
            if damage is not None:  # the new database is another file: lock it instead
                new_lock = lock_database(path)
                os.close(lock)
                if new_lock is None:
                    raise SpoolError(f"{where} is in use by another gateway; give each its own")
                lock = new_lock
            record.reset(database_tally(db))
        except (OSError, sqlite3.Error) as error:
            if record is not None:
                record.close()
            os.close(lock)
            raise SpoolError(f"{where}: unreadable spool ({error})") from None
        return cls(db, record, lock, damage)

    def close(self) -> None:
        """Close the database (checkpointing its write-ahead log), then release the record and the lock
        (in that order: closing a descriptor of the file drops the process's sqlite locks on it)."""
        try:
            self.db.close()
        finally:
            self.record.close()
            os.close(self.lock)


def open_database(path: Path, *, fsync: bool) -> sqlite3.Connection:
    """The spool database at ``path`` in WAL mode with its schema (created when new)."""
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=1.0)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # Freed pages are not zeroed (as a build with SQLITE_SECURE_DELETE does): that would write every
        # deleted request's size again; what was forwarded stays only until its pages are reused.
        db.execute("PRAGMA secure_delete=FAST")
        db.execute(f"PRAGMA synchronous={'FULL' if fsync else 'NORMAL'}")
        db.execute(_SCHEMA)
    except BaseException:
        db.close()
        raise
    return db


def _checked(
    directory: Path, known: Tally | None, fsync: bool
) -> tuple[sqlite3.Connection, SpoolDamage | None]:
    """The database, opened and checked; a damaged one recovered (with what was found)."""
    problem: str | None = None
    db: sqlite3.Connection | None = None
    try:
        db = open_database(directory / DATABASE_NAME, fsync=fsync)
        problem = integrity_problem(db)
        if problem is None and known is not None and database_tally(db).short_of(known):
            problem = (
                "it holds fewer requests than were acknowledged: its write-ahead log was lost, "
                "or it was copied without it"
            )
    except sqlite3.DatabaseError as error:
        if getattr(error, "sqlite_errorcode", 0) & 0xFF not in _DAMAGE_CODES:
            if db is not None:
                db.close()
            raise
        problem = str(error)
    if problem is None and db is not None:
        return db, None
    if db is not None:
        db.close()
    damage = recover_damaged(directory, problem or "unreadable", known, fsync=fsync)
    return open_database(directory / DATABASE_NAME, fsync=fsync), damage


def recover_damaged(directory: Path, reason: str, known: Tally | None, *, fsync: bool) -> SpoolDamage:
    """Move a damaged database (with its write-ahead log) aside, copy what still reads into a new one
    at the same path, and say what was lost."""
    aside = directory / time.strftime("damaged-%Y%m%dT%H%M%SZ", time.gmtime())
    aside.mkdir(mode=0o700, exist_ok=True)
    for suffix in ("", "-wal", "-shm", "-journal"):
        source = directory / f"{DATABASE_NAME}{suffix}"
        if source.exists():
            os.replace(source, aside / source.name)
    rows = _readable_rows(aside)
    db = open_database(directory / DATABASE_NAME, fsync=fsync)
    try:
        db.execute("BEGIN")
        db.executemany(f"INSERT INTO entries ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        db.execute("COMMIT")
    finally:
        db.close()
    recovered = sum(row[2] for row in rows if isinstance(row[2], int))
    expected = known.items if known is not None else recovered
    damage = SpoolDamage(reason, max(0, expected - recovered), recovered, aside)
    logger.error("The %s", damage.describe())
    return damage


def _readable_rows(aside: Path) -> list[tuple[object, ...]]:
    """Every row of the moved-aside database that still reads, read from a copy (the files aside stay
    as they were found), scanning from both ends so one bad page costs only the rows behind it."""
    scratch = aside / "scratch"
    scratch.mkdir(exist_ok=True)
    rows: dict[int, tuple[object, ...]] = {}
    try:
        for suffix in ("", "-wal"):
            source = aside / f"{DATABASE_NAME}{suffix}"
            if source.exists():
                shutil.copyfile(source, scratch / source.name)
        copy = scratch / DATABASE_NAME
        if not copy.exists():
            return []
        _pad_to_header(copy)
        try:
            db = sqlite3.connect(copy, isolation_level=None)
        except sqlite3.Error:
            return []
        try:
            for order in ("ASC", "DESC"):
                try:
                    cursor = db.execute(f"SELECT {_COLUMNS} FROM entries ORDER BY id {order}")
                    for row in iter(cursor.fetchone, None):
                        if row[0] not in rows and _whole(row):
                            rows[row[0]] = tuple(row)
                except sqlite3.Error:
                    continue
        finally:
            db.close()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return [rows[key] for key in sorted(rows)]


def _pad_to_header(copy: Path) -> None:
    """Give a truncated database back the length its header states (zeros): sqlite refuses every read
    of a file shorter than that, while the pages still there can be read once it is whole again."""
    with open(copy, "r+b") as file:
        header = file.read(100)
        if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
            return
        page_size = int.from_bytes(header[16:18], "big")
        page_size = 65536 if page_size == 1 else page_size
        stated = page_size * int.from_bytes(header[28:32], "big")
        if file.seek(0, os.SEEK_END) < stated:
            file.truncate(stated)


def _whole(row: tuple[object, ...]) -> bool:
    """Whether a row read from a damaged database is a request that parses with the items it claims (a
    damaged page can sit inside a body)."""
    entry_id, kind, items, _, _, _, body = row
    if not isinstance(entry_id, int) or not isinstance(items, int) or not isinstance(body, bytes):
        return False
    try:
        message = parse_stored("logs" if kind == 1 else "traces", body)
    except UnreadableRequest:
        return False
    if isinstance(message, ExportTraceServiceRequest):
        found = sum(len(scope.spans) for group in message.resource_spans for scope in group.scope_spans)
    else:
        assert isinstance(message, ExportLogsServiceRequest)
        found = sum(len(scope.log_records) for group in message.resource_logs for scope in group.scope_logs)
    return found == items


def lock_database(path: Path) -> int | None:
    """An exclusive lock on the database file itself (a file descriptor to keep open), or ``None`` when
    another process holds it. No other file can break it: removing the database removes the spool."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd

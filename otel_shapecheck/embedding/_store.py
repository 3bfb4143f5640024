"""Vectors that outlive the process: a sqlite file under the in-memory embedding cache.

Every ``check`` run and every restarted gateway would otherwise embed the same tool texts again; with
MiniLM that is most of their CPU. Entries are keyed by the embedder's identity (model, version, text cut:
see :class:`PersistentEmbedder`) and a digest of the text, and the file is bounded in bytes, least
recently used first out.

Several processes may share one file: it runs in WAL mode (readers never wait for the writer), every
write is one short ``BEGIN IMMEDIATE`` transaction, and a writer waits at most
:data:`BUSY_TIMEOUT_SECONDS` for another. The store is never a reason to fail: a file that is corrupt, not
a database, unwritable or full, or one that stays locked, is logged once and bypassed (a locked one is
tried again after :data:`LOCKED_BACKOFF_SECONDS`), and the texts are embedded as if there were no file.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol, TypeVar, runtime_checkable

import numpy as np
import numpy.typing as npt

from otel_shapecheck.embedding._vectors import Embedder

logger = logging.getLogger(__name__)

_T = TypeVar("_T")

SCHEMA_VERSION: Final = 1
"""``PRAGMA user_version`` of a file this module wrote; a file of another version is bypassed."""
BUSY_TIMEOUT_SECONDS: Final = 0.2
"""Longest a write waits for another process's write before it is skipped."""
LOCKED_BACKOFF_SECONDS: Final = 30.0
"""How long a file found locked is bypassed before it is tried again."""
ROW_OVERHEAD_BYTES: Final = 48
"""What a row costs beyond its vector and its keys (cell headers, the ``used`` column), roughly."""
_MAX_VARIABLES = 500  # below sqlite's smallest compiled-in limit of host parameters (999)
_EVICTION_CHUNK = 256

_BUSY_CODES = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED
_READONLY, _FULL = 8, 13  # SQLITE_READONLY, SQLITE_FULL

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    identity TEXT NOT NULL,
    digest TEXT NOT NULL,
    vector BLOB NOT NULL,
    cost INTEGER NOT NULL,
    used INTEGER NOT NULL,
    PRIMARY KEY (identity, digest)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS vectors_by_use ON vectors (used);
CREATE TABLE IF NOT EXISTS size (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
INSERT OR IGNORE INTO size VALUES (0, 0);
CREATE TRIGGER IF NOT EXISTS vectors_added AFTER INSERT ON vectors
BEGIN UPDATE size SET bytes = bytes + NEW.cost WHERE id = 0; END;
CREATE TRIGGER IF NOT EXISTS vectors_removed AFTER DELETE ON vectors
BEGIN UPDATE size SET bytes = bytes - OLD.cost WHERE id = 0; END;
"""
"""The running total in ``size`` is kept by triggers, so every process's inserts and evictions count."""


@runtime_checkable
class PersistentEmbedder(Embedder, Protocol):
    """An embedder whose vectors may be kept on disk: it names everything they depend on.

    ``cache_identity`` must change whenever a vector of the same text could change (the model file, its
    runtime's version, the tokenizer, the text cut); an embedder without it is cached in memory only.
    """

    @property
    def cache_identity(self) -> str:
        """Model, versions and text cut, in one string."""
        ...

    @property
    def dims(self) -> int:
        """Length of every vector."""
        ...


def default_store_path() -> Path:
    """``$XDG_CACHE_HOME/otel-shapecheck/embeddings.sqlite``, else under ``~/.cache`` (XDG base dirs)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    root = Path(base) if base and Path(base).is_absolute() else Path.home() / ".cache"
    return root / "otel-shapecheck" / "embeddings.sqlite"


class VectorStore:
    """One sqlite file of vectors, bounded to ``max_bytes`` (vectors, keys and row overhead).

    Thread-safe (one connection, used under a lock) and fork-aware (a child process opens its own).
    Every method returns normally: a failure is logged once per kind and the store steps aside.
    """

    def __init__(self, path: Path, max_bytes: int) -> None:
        self._path = path
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = None
        self._pid = os.getpid()
        self._broken = False
        self._read_only = False
        self._retry_at = 0.0
        self._logged: set[str] = set()

    @property
    def path(self) -> Path:
        """The sqlite file."""
        return self._path

    @property
    def max_bytes(self) -> int:
        """The bound on what the entries cost."""
        return self._max_bytes

    @property
    def usable(self) -> bool:
        """Whether the store is still consulted (false once it was found corrupt or unopenable)."""
        return not self._broken

    def load(self, identity: str, dims: int, digests: Sequence[str]) -> dict[str, npt.NDArray[np.float32]]:
        """The stored vectors of ``digests`` (those of ``dims`` floats only), marked as just used."""
        if not digests:
            return {}
        nothing: dict[str, npt.NDArray[np.float32]] = {}
        found = self._guarded(
            "read", lambda connection: _select(connection, identity, dims, digests), nothing
        )
        if found and not self._read_only:
            self._guarded(
                "write", lambda connection: _touch(connection, identity, found, time.time_ns()), None
            )
        return found

    def save(self, identity: str, vectors: Mapping[str, npt.NDArray[np.float32]]) -> None:
        """Keep ``vectors`` (by digest), evicting the least recently used entries to stay in bound."""
        if not vectors or self._read_only:
            return
        rows = [
            (identity, digest, np.ascontiguousarray(vector, dtype="<f4").tobytes())
            for digest, vector in vectors.items()
        ]
        self._guarded("write", lambda connection: self._insert(connection, rows), None)

    def stored_bytes(self) -> int:
        """What the entries cost now, as the bound counts it (0 when the store is bypassed)."""
        return self._guarded("read", _size, 0)

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            if self._connection is not None and self._pid == os.getpid():
                self._connection.close()
            self._connection = None

    def _insert(self, connection: sqlite3.Connection, rows: Sequence[tuple[str, str, bytes]]) -> None:
        costed: list[tuple[str, str, bytes, int]] = []
        total = 0
        for identity, digest, blob in reversed(rows):  # the newest that fit, when a batch exceeds the bound
            cost = len(blob) + len(identity) + len(digest) + ROW_OVERHEAD_BYTES
            if total + cost > self._max_bytes:
                break
            costed.append((identity, digest, blob, cost))
            total += cost
        if not costed:
            return
        now = time.time_ns()
        connection.execute("BEGIN IMMEDIATE")
        try:
            _evict(connection, _size(connection) + total - self._max_bytes)
            connection.executemany(
                "INSERT INTO vectors VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (identity, digest) DO UPDATE SET used = excluded.used",
                [(*row, now) for row in costed],
            )
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def _guarded(self, what: str, action: Callable[[sqlite3.Connection], _T], fallback: _T) -> _T:
        """``action`` on the open connection, or ``fallback`` when the store is bypassed or fails."""
        if self._broken or time.monotonic() < self._retry_at:
            return fallback
        try:
            with self._lock:
                return action(self._connect())
        except Exception as error:  # sqlite's errors, a directory that cannot be made, anything else
            self._failed(what, error)
        return fallback

    def _failed(self, what: str, error: Exception) -> None:
        """Step aside as the failure asks: a while (locked), from writing (read-only, full), or for good."""
        code = getattr(error, "sqlite_errorcode", 0) & 0xFF
        if code in _BUSY_CODES:
            self._retry_at = time.monotonic() + LOCKED_BACKOFF_SECONDS
            self._log_once(
                "locked",
                "embedding cache %s is locked by another process (%s); bypassing it for %g s",
                error,
                LOCKED_BACKOFF_SECONDS,
            )
        elif what == "write" and code in (_READONLY, _FULL):
            self._read_only = True
            self._log_once("unwritable", "embedding cache %s cannot be written (%s); reading it only", error)
        else:
            self._broken = True
            self.close()
            self._log_once("broken", "embedding cache %s cannot be used (%s); embedding without it", error)

    def _log_once(self, kind: str, message: str, *arguments: object) -> None:
        """One warning per kind of failure per store, naming the file."""
        if kind not in self._logged:
            self._logged.add(kind)
            logger.warning(message, self._path, *arguments)

    def _connect(self) -> sqlite3.Connection:
        if self._pid != os.getpid():  # a forked child must not use its parent's connection
            self._connection, self._pid = None, os.getpid()
        if self._connection is not None:
            return self._connection
        self._path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        connection = sqlite3.connect(
            self._path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False
        )
        try:
            _prepare(connection, self._max_bytes)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection


def _prepare(connection: sqlite3.Connection, max_bytes: int) -> None:
    """WAL, a bounded journal and page count, and the schema (created once, by whoever comes first)."""
    (mode,) = connection.execute("PRAGMA journal_mode = WAL").fetchone()
    if str(mode).lower() != "wal":
        raise sqlite3.OperationalError(f"journal mode {mode!r} instead of WAL")
    connection.execute("PRAGMA synchronous = NORMAL")  # a cache may lose its last writes in a crash
    connection.execute(f"PRAGMA journal_size_limit = {min(max_bytes, 4 * 1024 * 1024)}")
    (page_size,) = connection.execute("PRAGMA page_size").fetchone()
    # A hard ceiling under the soft bound: twice the bound in pages (b-tree pages are not full), plus the
    # schema's. Past it sqlite answers "full", which the store survives like a full disk.
    connection.execute(f"PRAGMA max_page_count = {2 * max_bytes // int(page_size) + 32}")
    (version,) = connection.execute("PRAGMA user_version").fetchone()
    if version == SCHEMA_VERSION:
        return
    if version != 0:
        raise sqlite3.DatabaseError(f"schema version {version}, not {SCHEMA_VERSION}")
    try:  # one script, one transaction: a second process creating it at once waits, then finds it made
        connection.executescript(
            f"BEGIN IMMEDIATE; {_SCHEMA} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"
        )
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _chunks(items: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), _MAX_VARIABLES):
        yield items[start : start + _MAX_VARIABLES]


def _select(
    connection: sqlite3.Connection, identity: str, dims: int, digests: Sequence[str]
) -> dict[str, npt.NDArray[np.float32]]:
    found: dict[str, npt.NDArray[np.float32]] = {}
    width = 4 * dims
    for chunk in _chunks(list(dict.fromkeys(digests))):
        marks = ",".join("?" * len(chunk))
        rows = connection.execute(
            f"SELECT digest, vector FROM vectors WHERE identity = ? AND digest IN ({marks})",  # noqa: S608
            (identity, *chunk),
        ).fetchall()
        for digest, blob in rows:
            if isinstance(blob, bytes) and len(blob) == width:  # a row of another shape is not ours: skip it
                found[digest] = np.frombuffer(blob, dtype="<f4").astype(np.float32)
    return found


def _touch(connection: sqlite3.Connection, identity: str, digests: Iterable[str], now: int) -> None:
    connection.execute("BEGIN IMMEDIATE")
    try:
        connection.executemany(
            "UPDATE vectors SET used = ? WHERE identity = ? AND digest = ?",
            [(now, identity, digest) for digest in digests],
        )
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _size(connection: sqlite3.Connection) -> int:
    row = connection.execute("SELECT bytes FROM size WHERE id = 0").fetchone()
    return int(row[0]) if row else 0


def _evict(connection: sqlite3.Connection, excess: int) -> None:
    """Delete the least recently used rows until ``excess`` bytes are freed (inside the caller's write)."""
    while excess > 0:
        oldest = connection.execute(
            "SELECT identity, digest, cost FROM vectors ORDER BY used LIMIT ?", (_EVICTION_CHUNK,)
        ).fetchall()
        if not oldest:
            return
        doomed = []
        for identity, digest, cost in oldest:
            doomed.append((identity, digest))
            excess -= int(cost)
            if excess <= 0:
                break
        connection.executemany("DELETE FROM vectors WHERE identity = ? AND digest = ?", doomed)


_stores: dict[tuple[Path, int], VectorStore] = {}
_stores_lock = threading.Lock()


def shared_store(path: Path, max_bytes: int) -> VectorStore:
    """The process's one :class:`VectorStore` of ``path`` with ``max_bytes`` (one connection per file)."""
    key = (path, max_bytes)
    with _stores_lock:
        store = _stores.get(key)
        if store is None:
            store = _stores[key] = VectorStore(path, max_bytes)
        return store

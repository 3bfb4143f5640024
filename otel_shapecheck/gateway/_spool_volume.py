"""The disk under the durable spool: room kept for the write-ahead log, and one log line per full episode.

A volume filled to the last byte would leave the spool stuck: the deletes of forwarded requests need
new frames in the write-ahead log, and a checkpoint needs room to copy the log into the database. So a
request is refused (backpressure) while the volume would keep less free space than the log, twice the
request and :data:`HEADROOM_BYTES`; meanwhile the log is checkpointed and truncated (at most once a
second), and once it drains too, which hands its space back without a restart.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)

HEADROOM_BYTES = 1024 * 1024
"""Free space kept on the volume beyond what the write-ahead log and a request need."""
CHECKPOINT_EVERY_SECONDS = 1.0
WAL_LIMIT_BYTES = 4 * 1024 * 1024
"""The write-ahead log is cut back to this size whenever a checkpoint restarts it (it would otherwise
keep the largest size it ever reached, a disk-full episode's included)."""
_SQLITE_FULL = 13


def is_full(error: BaseException) -> bool:
    """Whether an sqlite error says the disk is full."""
    if not isinstance(error, sqlite3.OperationalError):
        return False
    return getattr(error, "sqlite_errorcode", 0) & 0xFF == _SQLITE_FULL or "disk is full" in str(error)


class SpoolVolume:
    """Watches the volume of one spool database: room, disk-full episodes, and checkpoints due."""

    def __init__(self, wal: Path, description: str) -> None:
        self._wal = wal
        self._where = description
        self._lock = threading.Lock()
        self.full = False
        """Whether the volume was found full and has not had room since (one log line each way)."""
        self._checkpointed = 0.0
        self.checkpoint_wanted = False
        """Whether a checkpoint was put off (or found the log busy): the next flush does it."""

    def has_room(self, size: int) -> bool:
        """Whether ``size`` more bytes fit (stored twice: the log, then the database) with the log's
        checkpoint and the headroom; a refusal starts (or continues) an episode."""
        try:
            stats = os.statvfs(self._wal.parent)
            log = self._wal.stat().st_size if self._wal.exists() else 0
        except OSError:  # nothing to learn: sqlite's own error decides
            return True
        free = stats.f_bavail * stats.f_frsize
        if free >= log + 2 * size + HEADROOM_BYTES:
            if self.full:
                with self._lock:
                    if self.full:
                        self.full = False
                        logger.warning("The spool in %s has space again: accepting requests", self._where)
            return True
        self.found_full(f"{free} bytes free, {log} in its write-ahead log")
        return False

    def found_full(self, why: str) -> None:
        """The volume has no room: log the episode's start once."""
        with self._lock:
            if self.full:
                return
            self.full = True
        logger.warning(
            "The spool's disk is full in %s (%s): requests are refused with backpressure until there is "
            "space again",
            self._where,
            why,
        )

    def due(self) -> bool:
        """Whether a second passed since the last checkpoint asked for (then it counts as done)."""
        now = time.monotonic()
        if now - self._checkpointed < CHECKPOINT_EVERY_SECONDS:
            return False
        self._checkpointed = now
        return True

    def checkpoint(self, db: sqlite3.Connection) -> None:
        """Copy the write-ahead log into the database and truncate it (the caller owns ``db``)."""
        with contextlib.suppress(sqlite3.Error):  # no room to copy it yet: the next drain or refusal tries
            busy = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            self.checkpoint_wanted = bool(busy and busy[0])

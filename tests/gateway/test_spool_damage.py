"""A damaged spool is found at start, moved aside, and what it lost is reported (exit 5), never silently.

Each case fills a spool through a real ``serve`` process whose destination is down, damages the files
as a bad disk or a careless copy would, and starts ``serve`` again in front of a real receiver.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
from pathlib import Path

import pytest
from otlp_receiver import OTLPReceiver, unused_endpoint

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.serve_process import ServeProcess, parse_summary
from otel_shapecheck.cli._exit import EXIT_LEFT_IN_SPOOL, EXIT_LOST, EXIT_OK, EXIT_USAGE
from otel_shapecheck.gateway._spool import SpoolError, SqliteSpool
from otel_shapecheck.gateway._spool_files import DATABASE_NAME

REQUESTS = 40
SPANS = 50
LOST = re.compile(r"spool damaged \(.*?\): (?P<lost>\d+) acknowledged items lost, (?P<kept>\d+) recovered")


def _fill(spool: Path, *, kill: bool = False) -> int:
    """Spans acknowledged into ``spool`` by a gateway whose destination is down, then stopped (or
    killed: the write-ahead log is not checkpointed)."""
    down, _ = unused_endpoint()
    acknowledged = 0
    with ServeProcess(f"http://{down}", spool, "--shutdown-timeout", "0") as gateway:
        for number in range(REQUESTS):
            body = trace_request(plain_spans(SPANS, first=1 + number * SPANS)).SerializeToString()
            if post(gateway.ports["http"], "/v1/traces", body).status == 200:
                acknowledged += SPANS
        if kill:
            gateway.kill()
        else:
            assert gateway.stop() == EXIT_LEFT_IN_SPOOL, gateway.stderr
    return acknowledged


def _restart(spool: Path, receiver: OTLPReceiver) -> tuple[int, str]:
    with ServeProcess(f"http://{receiver.grpc_endpoint}", spool, "--shutdown-timeout", "30") as gateway:
        receiver.wait_for(lambda r: False, timeout=1.5)  # let it forward what it recovered
        code = gateway.stop()
    return code, gateway.stderr


def _truncate(spool: Path) -> None:
    database = spool / DATABASE_NAME
    os.truncate(database, database.stat().st_size // 2)


def _garbage(spool: Path) -> None:
    with open(spool / DATABASE_NAME, "r+b") as file:
        file.seek(4096 * 3)
        file.write(b"\xa5" * 4096)


def _empty(spool: Path) -> None:
    os.truncate(spool / DATABASE_NAME, 0)


class TestDamagedSpool:
    @pytest.mark.parametrize("damage", [_truncate, _garbage, _empty], ids=["truncated", "garbage", "emptied"])
    def test_damage_is_found_moved_aside_and_reported_lost(
        self, damage: object, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """Truncated, overwritten with 4 KiB of garbage, or emptied: the restart says the spool was
        damaged and how many acknowledged items it lost, forwards what it could recover, keeps the
        damaged files for forensics and exits 5; every acknowledged item is forwarded or reported lost."""
        spool = tmp_path / "spool"
        acknowledged = _fill(spool)
        assert acknowledged == REQUESTS * SPANS
        assert callable(damage)
        damage(spool)
        code, stderr = _restart(spool, receiver)
        assert code == EXIT_LOST, stderr
        found = LOST.search(stderr)
        assert found is not None, stderr
        lost = int(found["lost"])
        summary = parse_summary(stderr)
        assert summary.forwarded + lost >= acknowledged
        assert summary.carried_over == summary.forwarded == len({span.span_id for span in receiver.spans})
        assert not summary.unaccounted
        aside = [path for path in spool.iterdir() if path.name.startswith("damaged-")]
        assert len(aside) == 1 and (aside[0] / DATABASE_NAME).exists()
        code, stderr = _restart(spool, receiver)  # the damage is reported once, not at every start
        assert code == EXIT_OK, stderr

    def test_a_lost_write_ahead_log_is_reported(self, tmp_path: Path, receiver: OTLPReceiver) -> None:
        """Killed (its write-ahead log not checkpointed), then the log removed: the requests it held are
        reported lost, not forgotten."""
        spool = tmp_path / "spool"
        acknowledged = _fill(spool, kill=True)
        wal = spool / f"{DATABASE_NAME}-wal"
        assert wal.exists() and wal.stat().st_size > 0
        wal.unlink()
        code, stderr = _restart(spool, receiver)
        assert code == EXIT_LOST, stderr
        found = LOST.search(stderr)
        assert found is not None, stderr
        assert parse_summary(stderr).forwarded + int(found["lost"]) >= acknowledged

    def test_a_healthy_spool_is_not_reported(self, tmp_path: Path, receiver: OTLPReceiver) -> None:
        """A spool left by a stop (or a kill) with nothing damaged forwards everything, exit 0."""
        spool = tmp_path / "spool"
        acknowledged = _fill(spool, kill=True)
        code, stderr = _restart(spool, receiver)
        assert code == EXIT_OK, stderr
        assert parse_summary(stderr).forwarded == acknowledged
        assert "damaged" not in stderr


class TestSpoolLock:
    def test_deleting_side_files_does_not_let_a_second_gateway_in(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """With every file but the database removed from the spool directory, a second ``serve`` on it
        is still refused (exit 2, naming the directory), and the first accounts for everything."""
        spool = tmp_path / "spool"
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool) as first:
            body = trace_request(plain_spans(10)).SerializeToString()
            assert post(first.ports["http"], "/v1/traces", body).status == 200
            for path in spool.iterdir():
                if path.name != DATABASE_NAME and path.is_file():
                    path.unlink()
            second = subprocess.run(
                [*first.command[:3], *first.command[3:]], capture_output=True, text=True, timeout=60
            )
            assert second.returncode == EXIT_USAGE, second.stderr
            assert "in use by another gateway" in second.stderr
            assert first.stop() == EXIT_OK, first.stderr
        assert "UNACCOUNTED" not in first.stderr
        assert parse_summary(first.stderr).forwarded == 10

    def test_the_lock_is_on_the_database_itself(self, tmp_path: Path) -> None:
        """A second spool on the same database is refused even once the directory holds nothing else."""
        spool = SqliteSpool(tmp_path, 1 << 20)
        for path in tmp_path.iterdir():
            if path.name != DATABASE_NAME:
                path.unlink()
        with pytest.raises(SpoolError, match="in use by another gateway"):
            SqliteSpool(tmp_path, 1 << 20)
        spool.close()
        SqliteSpool(tmp_path, 1 << 20).close()


def test_copying_only_the_database_file_is_what_the_docs_warn_about() -> None:
    """docs/gateway.md says a copy of the spool must take its write-ahead log too."""
    text = (Path(__file__).parents[2] / "docs" / "gateway.md").read_text()
    assert f"{DATABASE_NAME}-wal" in text


def test_a_body_damaged_inside_a_sound_database_is_reported_lost_once(
    tmp_path: Path, receiver: OTLPReceiver
) -> None:
    """A request whose stored bytes no longer parse (damage quick_check cannot see: inside a body) is
    dropped and counted as lost (exit 5) instead of failing at every start; the others are forwarded."""
    spool = tmp_path / "spool"
    acknowledged = _fill(spool)
    database = sqlite3.connect(spool / DATABASE_NAME)
    database.execute("UPDATE entries SET body = ? WHERE id = 3", (b"\xff" * 500,))
    database.commit()
    database.close()
    code, stderr = _restart(spool, receiver)
    summary = parse_summary(stderr)
    assert code == EXIT_LOST, stderr
    assert (summary.forwarded, summary.dropped, summary.left) == (acknowledged - SPANS, SPANS, 0)
    assert stderr.count("Traceback") <= 1
    code, stderr = _restart(spool, receiver)
    assert code == EXIT_OK, stderr


class _FailingCommitOnce:
    """The spool's connection, but its next COMMIT fails as on a full disk (then it works again)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db
        self.failed = False

    def __getattr__(self, name: str) -> object:
        return getattr(self._db, name)

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        if sql == "COMMIT" and not self.failed:
            self.failed = True
            raise sqlite3.OperationalError("database or disk is full")
        return self._db.execute(sql, *args)


def test_a_delete_that_failed_and_was_retried_keeps_the_record_true(tmp_path: Path) -> None:
    """Deletes rolled back (a full disk) and written at the next flush leave the record equal to the
    database: the next start finds nothing damaged."""
    spool = SqliteSpool(tmp_path, 1 << 20, flush_seconds=3600)
    entries = [spool.put("traces", b"body", 5, 4) for _ in range(3)]
    failing = _FailingCommitOnce(spool._db)
    spool._db = failing  # type: ignore[assignment]
    spool.delete(entries[:2])
    with pytest.raises(sqlite3.OperationalError):
        spool.flush()
    assert failing.failed
    spool.flush()
    spool._db = failing._db
    spool.close()
    reopened = SqliteSpool(tmp_path, 1 << 20)
    assert reopened.damage is None
    assert [entry.id for entry in reopened.recover()] == [entries[2].id]
    reopened.close()

"""A spool whose volume fills: refused with 429 (read, not reset), one log line, and recovered by itself.

The spool lives on a small tmpfs mounted for the test (it needs the right to mount; without it the test
is skipped), in front of a real receiver that first refuses everything, then takes it.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import eventually
from gateway.serve_process import ServeProcess, parse_summary
from otel_shapecheck.gateway._spool_files import DATABASE_NAME

VOLUME_BYTES = 4 * 1024 * 1024


@pytest.fixture(name="volume")
def _volume(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "volume"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={VOLUME_BYTES}", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _request(number: int) -> bytes:
    spans = plain_spans(200, first=1 + number * 200)
    for span in spans:
        span.name = f"{span.name} {os.urandom(300).hex()}"  # incompressible: the volume really fills
    return trace_request(spans).SerializeToString()


class TestDiskFull:
    def test_a_full_volume_refuses_with_429_then_recovers_on_its_own(
        self, volume: Path, receiver: OTLPReceiver
    ) -> None:
        """The destination refuses while senders fill the spool's volume: requests get 429 (never a 500
        or a reset), the log says so once per episode (filling may free room by checkpointing, so a
        fill can be two); once the destination takes the backlog the write-ahead log is checkpointed
        and cut to nothing, and requests are accepted again, without a restart."""
        receiver.behave(error_status=503)
        spool = volume / "spool"
        with ServeProcess(f"http://{receiver.grpc_endpoint}", spool, "--shutdown-timeout", "30") as gateway:
            port = gateway.ports["http"]
            statuses = []
            acknowledged = 0
            for number in range(60):
                status = post(port, "/v1/traces", _request(number)).status
                statuses.append(status)
                acknowledged += 200 if status == 200 else 0
            assert 429 in statuses, statuses
            assert set(statuses) <= {200, 429}, statuses
            receiver.behave()
            assert receiver.wait_for(lambda r: len({s.span_id for s in r.spans}) >= acknowledged, timeout=120)
            wal = spool / f"{DATABASE_NAME}-wal"
            assert eventually(lambda: wal.stat().st_size == 0, timeout=30), wal.stat().st_size
            later = [post(port, "/v1/traces", _request(100 + number)).status for number in range(3)]
            assert later == [200, 200, 200]
            code = gateway.stop()
        assert code == 0, gateway.stderr
        summary = parse_summary(gateway.stderr)
        assert summary.forwarded == acknowledged + 600
        assert "Traceback" not in gateway.stderr
        full = [line for line in gateway.stderr.splitlines() if "disk is full" in line]
        back = [line for line in gateway.stderr.splitlines() if "has space again" in line]
        assert 1 <= len(full) <= 3 and len(back) == len(full), gateway.stderr[-3000:]  # one per episode

    def test_a_refused_large_request_reads_its_429(self, tmp_path: Path, receiver: OTLPReceiver) -> None:
        """A 4 MB request refused from its headers (the spool has no room) reaches a sender that writes
        its whole body before reading as a 429 with Retry-After, not as a connection reset."""
        receiver.behave(error_status=503)
        with ServeProcess(
            f"http://{receiver.grpc_endpoint}",
            tmp_path / "spool",
            "--spool-max-bytes",
            str(4 * 1024 * 1024),
        ) as gateway:
            port = gateway.ports["http"]
            assert post(port, "/v1/traces", _request(0)).status == 200  # the spool now holds something
            large = b"\0" * 4_150_000
            answers = [post(port, "/v1/traces", large) for _ in range(5)]
            gateway.kill()
        assert [answer.status for answer in answers] == [429] * 5
        assert all(answer.headers.get("retry-after") for answer in answers)

"""``otel-shapecheck serve`` as a child process, for tests that signal or kill it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SUMMARY = re.compile(
    r"(?P<spans>\d+) spans and (?P<logs>\d+) log records accepted, (?P<rejected>\d+) rejected, "
    r"(?P<carried>\d+) carried over from the spool \((?P<doubt>\d+) possibly sent twice\); "
    r"(?P<forwarded>\d+) forwarded \(\d+ spans\), (?P<left>\d+) (?:left in the spool|lost \(no spool\)), "
    r"(?P<dropped>\d+) given up"
)


@dataclass(frozen=True)
class Summary:
    """The numbers of the exit summary line."""

    accepted: int
    rejected: int
    carried_over: int
    in_doubt: int
    forwarded: int
    left: int
    dropped: int
    unaccounted: bool


def parse_summary(stderr: str) -> Summary:
    """The exit summary of a stopped gateway's stderr."""
    found = SUMMARY.search(stderr)
    assert found is not None, stderr
    numbers = {name: int(value) for name, value in found.groupdict().items()}
    return Summary(
        accepted=numbers["spans"] + numbers["logs"],
        rejected=numbers["rejected"],
        carried_over=numbers["carried"],
        in_doubt=numbers["doubt"],
        forwarded=numbers["forwarded"],
        left=numbers["left"],
        dropped=numbers["dropped"],
        unaccounted="UNACCOUNTED" in stderr,
    )


class ServeProcess:
    """A gateway process forwarding to ``forward`` (gRPC), spooling in ``spool_dir`` (``None``: no spool)."""

    def __init__(self, forward: str, spool_dir: Path | None, *extra: str) -> None:
        self.command = [
            sys.executable,
            "-m",
            "otel_shapecheck",
            "serve",
            "--grpc",
            "127.0.0.1:0",
            "--http",
            "127.0.0.1:0",
            "--forward",
            forward,
            "--no-events",
            "--embedder",
            "hashing",
            "--export-timeout-seconds",
            "2",
            *(["--spool-dir", str(spool_dir)] if spool_dir is not None else ["--no-spool"]),
            *extra,
        ]
        self.env = {**os.environ, "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_BLRP_SCHEDULE_DELAY": "100"}
        self.ports: dict[str, int] = {}
        self.stderr = ""

    def __enter__(self) -> ServeProcess:
        self.process = subprocess.Popen(
            self.command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        self.ports = {kind: int(port) for kind, port in re.findall(r"(grpc|http)=127\.0\.0\.1:(\d+)", line)}
        if set(self.ports) != {"grpc", "http"}:
            self.process.kill()
            _, stderr = self.process.communicate(timeout=60)
            raise AssertionError(f"the gateway did not start: {line!r} {stderr}")
        return self

    def stop(self, timeout: float = 120.0) -> int:
        """SIGTERM, then wait for the exit; the exit code (stderr is kept in ``self.stderr``)."""
        self.process.send_signal(signal.SIGTERM)
        _, self.stderr = self.process.communicate(timeout=timeout)
        return self.process.returncode

    def kill(self) -> None:
        """``kill -9``: no chance to forward or close anything."""
        self.process.kill()
        self.process.communicate(timeout=60)

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.communicate(timeout=60)

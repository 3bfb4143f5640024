"""What every backend the end-to-end tests start has in common: a free loopback port, a process with its
own log started in its own session, polled until a readiness URL answers 200, and stopped (SIGTERM, then
SIGKILL if it lingers)."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path


def free_port() -> int:
    """A loopback port nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class ServerProcess:
    """One backend process (``name`` in failure messages) writing its output to ``log_path``."""

    def __init__(self, name: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self._process: subprocess.Popen[bytes] | None = None

    def launch(
        self,
        command: Sequence[str],
        ready_url: str,
        *,
        timeout: float,
        poll_seconds: float,
        environment: Mapping[str, str] | None = None,
    ) -> None:
        """Start ``command`` and wait until ``ready_url`` answers 200 (stopped and raised if it exits or
        is not ready within ``timeout`` seconds)."""
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(
                list(command),
                env=dict(environment) if environment is not None else None,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        while time.monotonic() - started < timeout:
            if self._process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self._process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(ready_url, timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(poll_seconds)
        self.stop()
        raise RuntimeError(f"{self.name} was not ready after {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's own log, for failure messages."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

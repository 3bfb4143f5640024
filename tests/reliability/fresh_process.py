"""Run code in a fresh interpreter that imports this checkout: the memory it measures is its own, and
``ru_maxrss`` sees a peak inside one C call that sampling from another thread would miss."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_fresh(code: str, *args: str, stdin: str | None = None, timeout: float = 300) -> str:
    """The standard output of ``python -c code *args``; the test fails with the child's error if it fails."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", code, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout

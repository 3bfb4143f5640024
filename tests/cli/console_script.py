"""Running the installed ``otel-shapecheck`` console script as a subprocess, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

SCRIPT = str(Path(sys.executable).with_name("otel-shapecheck"))
"""The console script installed beside the interpreter running the tests."""

TIMEOUT_S = 120


def run_cli(
    *args: str, stdin: bytes | None = None, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the console script and capture its output (text)."""
    completed = subprocess.run(
        [SCRIPT, *args],
        input=stdin.decode("utf-8", "surrogateescape") if stdin is not None else None,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "160", **(env or {})},
        check=False,
    )
    return completed

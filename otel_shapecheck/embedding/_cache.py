"""An LRU cache in front of an embedder, so repeated texts (tool descriptions above all) embed once.

Ported from agentfootprint's influence-core cache: concurrent requests for the same text share one inner
call, failures are never cached, and ``stats()`` exposes hits, misses and evictions. The key does not
include the model, so keep one cache per embedder; the cache is itself an :class:`Embedder` with the inner
id. The reference keys entries by :func:`content_hash` (length in base 36 plus two 32-bit FNV-1a lanes over
UTF-16 code units), kept here with its parity vectors; computing it is a Python loop per character (half
a millisecond for a 2 000-character context), so entries are keyed by a 128-bit BLAKE2b digest of the
text instead, computed in C: the same texts share an entry, with a collision far less likely than FNV's.

Under the memory sits a :class:`~otel_shapecheck.embedding._store.VectorStore`, a sqlite file in the
user's cache directory shared by every process (``check``, ``serve``, the processor), for embedders that
name their identity (:class:`~otel_shapecheck.embedding._store.PersistentEmbedder`: MiniLM). The hashing
embedder is not kept on disk: computing its vector (about 60 µs a text) is cheaper than reading one back
(about 115 µs with the touch that keeps the file's order of use).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from otel_shapecheck._settings_table import EMBEDDING
from otel_shapecheck.embedding._embedders import Embedder, FloatMatrix
from otel_shapecheck.embedding._store import PersistentEmbedder, VectorStore, default_store_path, shared_store

logger = logging.getLogger(__name__)


_SETTING = {setting.name: setting for setting in EMBEDDING}
_MASK32 = 0xFFFFFFFF
_LANE1_OFFSET, _LANE1_PRIME = 0x811C9DC5, 0x01000193
_LANE2_OFFSET, _LANE2_PRIME = 0xCBF29CE4, 0x01000197
_BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"


_Vectors: TypeAlias = "dict[str, npt.NDArray[np.float32]]"
_Flight: TypeAlias = "Future[dict[str, npt.NDArray[np.float32]]]"
"""One inner embed call in progress: its result maps each fetched key to its vector."""
_Owned: TypeAlias = "tuple[_Flight, dict[str, str]]"


def _base36(value: int) -> str:
    digits = ""
    while True:
        value, digit = divmod(value, 36)
        digits = _BASE36[digit] + digits
        if value == 0:
            return digits


def _key(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


def content_hash(text: str) -> str:
    """The cache key of ``text``: ``<utf-16 length in base 36>-<lane 1 hex8><lane 2 hex8>``."""
    units = text.encode("utf-16-le", "surrogatepass")  # lone surrogates hash as their code unit, as in JS
    lane1, lane2 = _LANE1_OFFSET, _LANE2_OFFSET
    for unit in memoryview(units).cast("H"):
        lane1 = ((lane1 ^ unit) * _LANE1_PRIME) & _MASK32
        lane2 = ((lane2 ^ unit) * _LANE2_PRIME) & _MASK32
    return f"{_base36(len(units) // 2)}-{lane1:08x}{lane2:08x}"


@dataclass(frozen=True)
class CacheStats:
    """Counters of an :class:`EmbeddingCache` (``clear()`` keeps them)."""

    size: int
    """Vectors held now."""
    max_entries: int
    """The LRU bound."""
    hits: int
    """Texts served from memory (cached, joined an in-flight call, or repeated in a batch)."""
    misses: int
    """Texts sent to the inner embedder."""
    evictions: int
    """Vectors dropped to stay within ``max_entries``."""
    file_hits: int = 0
    """Texts read back from the cache file instead of embedded."""

    @property
    def hit_rate(self) -> float:
        """Share of texts served without an inner call (from memory or the file); 0 before any request."""
        total = self.hits + self.file_hits + self.misses
        return (self.hits + self.file_hits) / total if total else 0.0


class EmbeddingCache:
    """A bounded, thread-safe LRU of vectors keyed by a digest of each text, wrapping one embedder.

    Misses are looked up in the cache file (``path``, shared by processes, bounded to ``max_file_bytes``)
    before they reach the embedder, and what the embedder returns is kept there, when the embedder names
    its identity; ``path="none"`` (or ``""``) keeps vectors in memory only. The file is opened on the
    first miss, never at construction, and never makes ``embed`` fail.

    Env vars:
        :envvar:`OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES` (default 1024),
        :envvar:`OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH` (default under ``$XDG_CACHE_HOME``),
        :envvar:`OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES` (default 128 MiB).
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        max_entries: int | None = None,
        path: str | os.PathLike[str] | None = None,
        max_file_bytes: int | None = None,
    ) -> None:
        self._inner = embedder
        self._max_entries: int = _SETTING["max_entries"].resolve(max_entries)
        self._path: Path | None = _SETTING["path"].resolve(path, default=default_store_path())
        self._max_file_bytes: int = _SETTING["max_file_bytes"].resolve(max_file_bytes)
        self._store: VectorStore | None = None
        self._identity: tuple[str, int] | None = None
        if self._path is not None and isinstance(embedder, PersistentEmbedder):
            self._store = shared_store(self._path, self._max_file_bytes)
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._in_flight: dict[str, _Flight] = {}
        self._hits = 0
        self._misses = 0
        self._evictions = 0
        self._file_hits = 0

    @property
    def id(self) -> str:
        """The wrapped embedder's id (the cache changes no vector)."""
        return self._inner.id

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

    @property
    def path(self) -> Path | None:
        """The cache file setting (``None``: memory only); only an embedder naming its identity uses it."""
        return self._path

    @property
    def max_file_bytes(self) -> int:
        """The cache file's bound, in bytes of vectors, keys and row overhead."""
        return self._max_file_bytes

    @property
    def store(self) -> VectorStore | None:
        """The cache file this cache reads and fills, if any."""
        return self._store

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Vectors of ``texts``: cached ones copied out, the misses fetched in one inner call, in order."""
        if not texts:
            return self._inner.embed([])
        keys = [_key(text) for text in texts]
        found, joined, owned = self._claim(texts, keys)
        if owned[1]:
            found.update(self._fetch(owned))
        for key, flight in joined.items():
            found[key] = flight.result()[key]
        return np.stack([found[key] for key in keys]).astype(np.float32, copy=True)

    def stats(self) -> CacheStats:
        """Size, bound and counters."""
        with self._lock:
            return CacheStats(
                len(self._entries),
                self._max_entries,
                self._hits,
                self._misses,
                self._evictions,
                self._file_hits,
            )

    def clear(self) -> None:
        """Drop every vector held in memory (the cache file keeps its own); the counters keep counting."""
        with self._lock:
            self._entries.clear()

    def _claim(
        self, texts: Sequence[str], keys: Sequence[str]
    ) -> tuple[_Vectors, dict[str, _Flight], _Owned]:
        """Sort each distinct text into cached, in flight elsewhere, or ours to fetch (now in flight)."""
        found: _Vectors = {}
        joined: dict[str, _Flight] = {}
        flight: _Flight = Future()
        owned: dict[str, str] = {}
        with self._lock:
            for text, key in zip(texts, keys, strict=True):
                if key in found or key in joined or key in owned:
                    self._hits += 1
                elif (vector := self._entries.get(key)) is not None:
                    self._entries.move_to_end(key)
                    found[key] = vector
                    self._hits += 1
                elif (elsewhere := self._in_flight.get(key)) is not None:
                    joined[key] = elsewhere
                    self._hits += 1
                else:
                    self._in_flight[key] = flight
                    owned[key] = text
                    self._misses += 1
        return found, joined, (flight, owned)

    def _fetch(self, owned: _Owned) -> _Vectors:
        """One inner call for the texts this request owns; waiters on the same flight get the result."""
        flight, texts = owned
        try:
            fetched = self._stored(list(texts))
            keys = [key for key in texts if key not in fetched]
            if keys:
                vectors = np.asarray(self._inner.embed([texts[key] for key in keys]), dtype=np.float32)
                if vectors.shape[0] != len(keys):
                    raise ValueError(
                        f"embedder {self.id!r} returned {vectors.shape[0]} vectors for {len(keys)}"
                    )
                embedded = {key: vectors[i].copy() for i, key in enumerate(keys)}
                self._keep(embedded)
                fetched.update(embedded)
        except BaseException as error:
            with self._lock:
                for key in texts:
                    self._in_flight.pop(key, None)
            flight.set_exception(error)
            raise
        with self._lock:
            self._file_hits += len(texts) - len(keys)
            self._misses -= len(texts) - len(keys)
            for key, vector in fetched.items():
                self._entries[key] = vector
                self._entries.move_to_end(key)
                self._in_flight.pop(key, None)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
                self._evictions += 1
        flight.set_result(fetched)
        return fetched

    def _stored(self, keys: list[str]) -> _Vectors:
        """The vectors of ``keys`` the cache file holds (none without a file)."""
        file_key = self._file_key()
        if file_key is None:
            return {}
        store, identity, dims = file_key
        return store.load(identity, dims, keys)

    def _keep(self, vectors: _Vectors) -> None:
        """Write freshly embedded vectors to the cache file, if there is one."""
        file_key = self._file_key()
        if file_key is not None:
            store, identity, _ = file_key
            store.save(identity, vectors)

    def _file_key(self) -> tuple[VectorStore, str, int] | None:
        """The cache file with the embedder's identity and dims; ``None`` (and no file) if it has none."""
        store = self._store
        if store is None:
            return None
        if self._identity is None:
            inner = self._inner
            assert isinstance(inner, PersistentEmbedder)
            try:
                self._identity = (inner.cache_identity, int(inner.dims))
            except Exception:  # an identity that cannot be read names nothing safe to share
                logger.warning(
                    "embedder %r has no readable cache identity; caching in memory only",
                    self.id,
                    exc_info=True,
                )
                self._store = None
                return None
        return store, *self._identity


def cached(embedder: Embedder) -> EmbeddingCache:
    """``embedder`` behind an :class:`EmbeddingCache`: itself when it is one already, never cached twice."""
    return embedder if isinstance(embedder, EmbeddingCache) else EmbeddingCache(embedder)

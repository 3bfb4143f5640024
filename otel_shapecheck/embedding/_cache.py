"""An LRU cache in front of an embedder, so repeated texts (tool descriptions above all) embed once.

Ported from agentfootprint's influence-core cache: concurrent requests for the same text share one inner
call, failures are never cached, and ``stats()`` exposes hits, misses and evictions. The key does not
include the model, so keep one cache per embedder; the cache is itself an :class:`Embedder` with the inner
id. The reference keys entries by :func:`content_hash` (length in base 36 plus two 32-bit FNV-1a lanes over
UTF-16 code units), kept here with its parity vectors; computing it is a Python loop per character (half
a millisecond for a 2 000-character context), so entries are keyed by a 128-bit BLAKE2b digest of the
text instead, computed in C: the same texts share an entry, with a collision far less likely than FNV's.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TypeAlias

import numpy as np
import numpy.typing as npt

from otel_shapecheck import _settings
from otel_shapecheck.embedding._embedders import Embedder, FloatMatrix
from otel_shapecheck.environment_variables import (
    OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES,
)

logger = logging.getLogger(__name__)


_DEFAULT_MAX_ENTRIES = 1024
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
    """Texts served without an inner call (cached, joined an in-flight call, or repeated in a batch)."""
    misses: int
    """Texts sent to the inner embedder."""
    evictions: int
    """Vectors dropped to stay within ``max_entries``."""

    @property
    def hit_rate(self) -> float:
        """``hits / (hits + misses)``; 0 before any request."""
        total = self.hits + self.misses
        return self.hits / total if total else 0.0


class EmbeddingCache:
    """A bounded, thread-safe LRU of vectors keyed by a digest of each text, wrapping one embedder.

    Env vars:
        :envvar:`OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES` (default 1024).
    """

    def __init__(self, embedder: Embedder, *, max_entries: int | None = None) -> None:
        self._inner = embedder
        self._max_entries = _settings.positive_int(
            "max_entries", max_entries, OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES, _DEFAULT_MAX_ENTRIES
        )
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._in_flight: dict[str, _Flight] = {}
        self._hits = 0
        self._misses = 0
        self._evictions = 0

    @property
    def id(self) -> str:
        """The wrapped embedder's id (the cache changes no vector)."""
        return self._inner.id

    @property
    def inner(self) -> Embedder:
        """The wrapped embedder."""
        return self._inner

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
                len(self._entries), self._max_entries, self._hits, self._misses, self._evictions
            )

    def clear(self) -> None:
        """Drop every vector; the counters keep counting."""
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
        keys = list(texts)
        try:
            vectors = np.asarray(self._inner.embed([texts[key] for key in keys]), dtype=np.float32)
            if vectors.shape[0] != len(keys):
                raise ValueError(f"embedder {self.id!r} returned {vectors.shape[0]} vectors for {len(keys)}")
        except BaseException as error:
            with self._lock:
                for key in keys:
                    self._in_flight.pop(key, None)
            flight.set_exception(error)
            raise
        fetched = {key: vectors[i].copy() for i, key in enumerate(keys)}
        with self._lock:
            for key, vector in fetched.items():
                self._entries[key] = vector
                self._entries.move_to_end(key)
                self._in_flight.pop(key, None)
            while len(self._entries) > self._max_entries:
                self._entries.popitem(last=False)
                self._evictions += 1
        flight.set_result(fetched)
        return fetched


def cached(embedder: Embedder) -> EmbeddingCache:
    """``embedder`` behind an :class:`EmbeddingCache`: itself when it is one already, never cached twice."""
    return embedder if isinstance(embedder, EmbeddingCache) else EmbeddingCache(embedder)

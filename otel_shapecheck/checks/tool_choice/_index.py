"""Tool-text vectors in a FAISS inner-product index, shared by tool-choice scoring and the catalog lint.

Each tool is embedded as its :func:`confusability_text` (the tokenised name plus the description), the
same text at run time and in the lint, so build-time confusability and run-time margins measure one
geometry. Vectors are keyed by :func:`content_hash`, so each distinct tool text is embedded once per
index however many calls offer it. Scoring one call reads back only that call's menu (exact); the lint
asks the index for nearest neighbours instead of comparing all pairs.
"""

from __future__ import annotations

import functools
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from otel_shapecheck import _settings
from otel_shapecheck._model import ToolParameter
from otel_shapecheck.checks.tool_choice._cache import content_hash
from otel_shapecheck.checks.tool_choice._embedders import Embedder, FloatMatrix

logger = logging.getLogger(__name__)

_DEFAULT_MAX_TOOLS = 20_000
_SEPARATOR_RUNS = re.compile(r"[_-]+")
_CAMEL_BOUNDARY = re.compile(r"([a-z0-9])([A-Z])")


def tokenised_name(name: str) -> str:
    """``name`` with ``_``/``-`` runs as spaces and camelCase split into words, trimmed."""
    return _CAMEL_BOUNDARY.sub(r"\1 \2", _SEPARATOR_RUNS.sub(" ", name)).strip()


@functools.lru_cache(maxsize=8192)  # the same menus recur on every call of an agent
def confusability_text(name: str, description: str | None) -> str:
    """The text embedded for a tool: ``"<tokenised name>: <trimmed description>"``, or the name alone."""
    label = tokenised_name(name)
    described = (description or "").strip()
    return f"{label}: {described}" if described else label


@functools.lru_cache(maxsize=8192)
def parameter_text(name: str, description: str | None, parameters: tuple[ToolParameter, ...]) -> str:
    """The calibrated scoring's tool text: :func:`confusability_text` plus the schema's parameters.

    ``"<tokenised name>: <description> (parameters: <name>: <description>; <name>; ...)"``, parameter
    names tokenised like tool names (``new_preferences.milk_type`` → ``new preferences milk type``).
    Without parameters it is exactly :func:`confusability_text`, so a menu captured without schemas
    embeds the same vectors in both scorings.
    """
    text = confusability_text(name, description)
    parts = []
    for parameter in parameters:
        label = tokenised_name(parameter.name.replace(".", " "))
        described = (parameter.description or "").strip()
        if label:
            parts.append(f"{label}: {described}" if described else label)
    return f"{text} (parameters: {'; '.join(parts)})" if parts else text


class ToolIndex:
    """A FAISS ``IndexFlatIP`` of tool-text vectors, filled on demand through one embedder.

    Flat inner product on L2-normalised vectors is exact cosine. The index is bounded by ``max_tools``:
    when adding would pass the bound it starts over (tool texts of the current request are re-added), so
    a process that sees ever-new tool descriptions cannot grow without limit.
    """

    def __init__(self, embedder: Embedder, *, max_tools: int | None = None) -> None:
        self._embedder = embedder
        self._max_tools = _settings.positive_int("max_tools", max_tools, None, _DEFAULT_MAX_TOOLS)
        self._lock = threading.RLock()
        self._index: Any = None
        self._ids: dict[str, int] = {}
        self._ids_by_text: dict[str, int] = {}  # memo of _ids: spares re-hashing texts seen before
        self._resets = 0

    @property
    def embedder(self) -> Embedder:
        """The embedder that fills this index."""
        return self._embedder

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)

    @property
    def resets(self) -> int:
        """How many times the index started over to stay within ``max_tools``."""
        return self._resets

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts of ``texts`` not in the index yet, in first-seen order."""
        with self._lock:
            return [text for text in dict.fromkeys(texts) if self._id_of(text) is None]

    def vectors(
        self, texts: Sequence[str], fresh: Mapping[str, npt.NDArray[np.float32]] | None = None
    ) -> FloatMatrix:
        """The vectors of ``texts`` in order, adding missing ones (from ``fresh`` if there, else embedded)."""
        with self._lock:
            ids = self._ensure(texts, fresh or {})
            if not ids:
                return np.zeros((0, 0), dtype=np.float32)
            return np.asarray(
                self._index.reconstruct_batch(np.asarray(ids, dtype=np.int64)), dtype=np.float32
            )

    def neighbours(
        self, texts: Sequence[str], *, min_similarity: float, min_k: int = 1
    ) -> dict[tuple[int, int], float]:
        """Pairs ``(i, j)``, ``i < j``, of positions in ``texts`` (distinct texts) and their cosine.

        Returns every pair whose similarity is at least ``min_similarity``, plus each text's ``min_k``
        nearest others, found by k-NN over only these texts' vectors: a text's k grows until its k-th
        neighbour falls below ``min_similarity``, so the result is complete without comparing all pairs.
        """
        if len(texts) < 2:
            return {}
        with self._lock:
            ids = np.asarray(self._ensure(texts, {}), dtype=np.int64)
            position = {int(vector_id): i for i, vector_id in enumerate(ids)}
            queries = np.asarray(self._index.reconstruct_batch(ids), dtype=np.float32)
            params, selector = None, None
            if self._index.ntotal != len(ids):
                selector = faiss.IDSelectorBatch(ids)  # referenced here: params.sel does not keep it alive
                params = faiss.SearchParameters()
                params.sel = selector
            pairs: dict[tuple[int, int], float] = {}
            pending = np.arange(len(ids))
            k = min(len(ids), max(min_k + 1, 16))
            while pending.size:
                sims, found = self._index.search(queries[pending], k, params=params)
                for row, query in enumerate(pending):
                    for sim, vector_id in zip(sims[row], found[row], strict=True):
                        other = position.get(int(vector_id))
                        if other is None or other == query:
                            continue
                        pair = (min(int(query), other), max(int(query), other))
                        pairs[pair] = max(pairs.get(pair, -np.inf), float(sim))
                if k >= len(ids):
                    break
                pending = pending[sims[:, -1] >= min_similarity]
                k = min(len(ids), k * 2)
            return pairs

    def _id_of(self, text: str) -> int | None:
        vector_id = self._ids_by_text.get(text)
        if vector_id is None:
            vector_id = self._ids.get(content_hash(text))
            if vector_id is not None:
                self._ids_by_text[text] = vector_id
        return vector_id

    def _ensure(self, texts: Sequence[str], fresh: Mapping[str, npt.NDArray[np.float32]]) -> list[int]:
        known = [self._id_of(text) for text in texts]
        if all(vector_id is not None for vector_id in known):
            return [vector_id for vector_id in known if vector_id is not None]
        new = {
            content_hash(text): text
            for text, vector_id in zip(texts, known, strict=True)
            if vector_id is None
        }
        if len(self._ids) + len(new) > self._max_tools and self._ids:
            logger.debug("tool index reached %s vectors; starting over", len(self._ids))
            self._index, self._ids, self._ids_by_text = None, {}, {}
            self._resets += 1
            new = {content_hash(text): text for text in texts}
        self._add(new, fresh)
        return [self._ids[content_hash(text)] for text in texts]

    def _add(self, new: Mapping[str, str], fresh: Mapping[str, npt.NDArray[np.float32]]) -> None:
        to_embed = [text for text in new.values() if text not in fresh]
        embedded = dict(zip(to_embed, self._embedder.embed(to_embed), strict=True)) if to_embed else {}
        matrix = np.stack([fresh[text] if text in fresh else embedded[text] for text in new.values()])
        matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        if self._index is None:
            self._index = faiss.IndexFlatIP(matrix.shape[1])
        start = self._index.ntotal
        self._index.add(matrix)
        for offset, (key, text) in enumerate(new.items()):
            self._ids[key] = start + offset
            self._ids_by_text[text] = start + offset

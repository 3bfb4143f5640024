"""The checks a processor runs when it is given none."""

from __future__ import annotations

from otel_shapecheck.checks._base import Check
from otel_shapecheck.checks.conformance._check import ConformanceCheck
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._embedders import HashingEmbedder, MiniLMEmbedder


def builtin_checks() -> list[Check]:
    """One instance of every built-in check, each with its defaults."""
    # Nobody can query the processor's own check: its calls are not kept (issue 18).
    return [ToolChoiceCheck(keep_calls=False), ConformanceCheck(), FiguresCheck()]


EMBEDDERS = ("minilm", "hashing")
"""Embedder names the command line accepts: the default MiniLM model, or the dependency-light hashing one."""


def build_checks(
    embedder: str,
    *,
    figures_derivations: str | None = None,
    figures_coincidence: float | None = None,
    embedding_cache: str | None = None,
) -> list[Check]:
    """The built-in checks, with tool choice scored by the named embedder (one of :data:`EMBEDDERS`).

    ``minilm`` gives exactly the span processor's default checks; ``hashing`` swaps the embedder only.
    ``figures_derivations`` and ``figures_coincidence`` are :class:`FiguresCheck`'s ``derivations`` and
    ``coincidence`` (``None``: the variable, else the default). ``embedding_cache`` is the MiniLM
    :class:`EmbeddingCache`'s ``path`` (a file, or ``"none"``; ``None``: the variable, else the default).

    Raises:
        ValueError: an unknown embedder, or a bad figures setting (the message names it).
    """
    if embedder not in EMBEDDERS:
        raise ValueError(
            f"embedder={embedder!r} is not a valid value: embedder must be one of {', '.join(EMBEDDERS)}"
        )
    figures = FiguresCheck(derivations=figures_derivations, coincidence=figures_coincidence)
    if embedder == "hashing":
        tool_choice = ToolChoiceCheck(embedder=HashingEmbedder(), keep_calls=False)
    elif embedding_cache is None:
        tool_choice = ToolChoiceCheck(keep_calls=False)  # the process's shared MiniLM index
    else:
        minilm = EmbeddingCache(MiniLMEmbedder(), path=embedding_cache)
        tool_choice = ToolChoiceCheck(embedder=minilm, keep_calls=False)
    return [tool_choice, ConformanceCheck(), figures]

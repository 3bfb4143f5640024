"""The embedding cache flag ``check`` and ``serve`` share: where MiniLM vectors are kept, or ``none``."""

from __future__ import annotations

import argparse
from pathlib import Path

from otel_shapecheck import _settings
from otel_shapecheck._settings_table import EMBEDDING, by_name

_SETTING = by_name(EMBEDDING, "path")


def _cache_file(text: str) -> str:
    """An argparse type: ``none`` (or empty), or a path made absolute against the working directory."""
    if text.strip().lower() in _settings.OFF:
        return "none"
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else path.absolute())


def add_embedding_cache_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--embedding-cache`` (left out: the variable, else the user's cache directory)."""
    assert _SETTING.flag is not None
    parser.add_argument(
        _SETTING.flag,
        dest="embedding_cache",
        type=_cache_file,
        metavar="FILE",
        help="the sqlite file that keeps MiniLM vectors across runs, or none for memory only "
        f"(default: {_SETTING.variable}, else $XDG_CACHE_HOME/otel-shapecheck/embeddings.sqlite)",
    )

"""Regrouping of flattened, indexed attributes (``prefix.<i>.<field>``) into one record per index.

OpenLLMetry's legacy form and OpenInference spell lists as ``gen_ai.prompt.0.role`` or
``llm.input_messages.0.message.content``; this turns them back into ``{0: {"role": ...}}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

T = TypeVar("T")

MAX_INDEX = 100_000
"""Indexes above this are ignored; no real list is that long, and a hostile key cannot allocate."""


def indexed_groups(attributes: Mapping[str, object], prefix: str) -> dict[int, dict[str, object]]:
    """The fields under ``prefix<i>.`` for each index ``i``, keyed by the rest of the attribute name."""
    groups: dict[int, dict[str, object]] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not key.startswith(prefix):
            continue
        index_text, dot, rest = key[len(prefix) :].partition(".")
        # isdigit() alone admits "²" and other Unicode digits that int() refuses.
        if not dot or not rest or not index_text.isascii() or not index_text.isdigit() or len(index_text) > 6:
            continue
        index = int(index_text)
        if index <= MAX_INDEX:
            groups.setdefault(index, {})[rest] = value
    return groups


def read_indexed(
    attributes: Mapping[str, object], prefix: str, read: Callable[[Mapping[str, object]], T | None]
) -> tuple[T, ...] | None:
    """Each record under ``prefix<i>.`` read by ``read``, in index order, those it cannot read left out.

    ``None`` when there is no record at all, so "not captured" stays distinct from "captured, none read".
    """
    groups = indexed_groups(attributes, prefix)
    if not groups:
        return None
    items = (read(groups[index]) for index in sorted(groups))
    return tuple(item for item in items if item is not None)

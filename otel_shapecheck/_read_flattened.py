"""Regrouping of flattened, indexed attributes (``prefix.<i>.<field>``) into one record per index.

OpenLLMetry's legacy form and OpenInference spell lists as ``gen_ai.prompt.0.role`` or
``llm.input_messages.0.message.content``; this turns them back into ``{0: {"role": ...}}``.
"""

from __future__ import annotations

from collections.abc import Mapping

MAX_INDEX = 100_000
"""Indexes above this are ignored; no real list is that long, and a hostile key cannot allocate."""


def indexed_groups(attributes: Mapping[str, object], prefix: str) -> dict[int, dict[str, object]]:
    """The fields under ``prefix<i>.`` for each index ``i``, keyed by the rest of the attribute name."""
    groups: dict[int, dict[str, object]] = {}
    for key, value in attributes.items():
        if not isinstance(key, str) or not key.startswith(prefix):
            continue
        index_text, dot, rest = key[len(prefix) :].partition(".")
        if not dot or not rest or not index_text.isdigit() or len(index_text) > 6:
            continue
        index = int(index_text)
        if index <= MAX_INDEX:
            groups.setdefault(index, {})[rest] = value
    return groups


def in_index_order(groups: Mapping[int, dict[str, object]]) -> list[dict[str, object]]:
    """The groups' fields sorted by index."""
    return [groups[index] for index in sorted(groups)]

"""The data files the benchmark builders write: JSON Lines, one record a line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any


def write_records(path: Path, records: Iterable[Mapping[str, Any]], *, compact: bool = False) -> None:
    """Write ``records`` to ``path``, one JSON object a line, text as it is (not ASCII-escaped).

    ``compact`` leaves out the spaces after separators, as the tool-choice corpora are written; the
    figures sets keep JSON's default spacing. Either way the bytes are those their sha256 records.
    """
    separators = (",", ":") if compact else None
    with path.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False, separators=separators) + "\n")

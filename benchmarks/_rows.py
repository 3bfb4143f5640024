"""One benchmark row: a value, the baseline measured beside it in the same run, and their ratio."""

from __future__ import annotations

from typing import Any


def row(
    name: str, value: float, unit: str, baseline: float | None, target: str, **extra: Any
) -> dict[str, Any]:
    """The row ``make bench`` prints and writes to ``results.json`` (rounded; no ratio without a baseline)."""
    return {
        "name": name,
        "value": round(value, 4),
        "unit": unit,
        "baseline": round(baseline, 4) if baseline is not None else None,
        "ratio": round(value / baseline, 3) if baseline else None,
        "target": target,
        **extra,
    }

"""Run every benchmark: each ``benchmarks/bench_*.py`` module's ``run()`` rows, as one table and a JSON file.

A row is a dict with ``name``, ``value``, ``unit``, ``baseline`` (measured in the same run), ``ratio``
(value / baseline) and ``target``; other keys are kept in the JSON file. Usage: ``python -m benchmarks``
(or ``make bench``); ``python -m benchmarks hot_path`` runs only the named modules.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

BENCHMARKS_DIR = Path(__file__).resolve().parent
RESULTS_FILE = BENCHMARKS_DIR / "results.json"


def benchmark_modules(selected: Sequence[str] = ()) -> list[str]:
    """Module names of the benchmarks to run: every ``bench_*.py``, or only the ``selected`` ones."""
    names = sorted(path.stem for path in BENCHMARKS_DIR.glob("bench_*.py"))
    if selected:
        wanted = {name if name.startswith("bench_") else f"bench_{name}" for name in selected}
        unknown = wanted - set(names)
        if unknown:
            raise ValueError(
                f"unknown benchmark(s) {', '.join(sorted(unknown))}: choose from {', '.join(names)}"
            )
        names = [name for name in names if name in wanted]
    return names


def run_all(selected: Sequence[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """Every selected benchmark's rows, by module name; a failing module is reported, not fatal."""
    results: dict[str, list[dict[str, Any]]] = {}
    for name in benchmark_modules(selected):
        started = time.perf_counter()
        try:
            rows = importlib.import_module(f"benchmarks.{name}").run()
        except Exception as error:  # one broken benchmark must not hide the others' numbers
            rows = [{"name": f"{name} failed", "value": None, "unit": "", "error": repr(error)}]
        for row in rows:
            row.setdefault("module", name)
            row.setdefault("module_seconds", round(time.perf_counter() - started, 1))
        results[name] = rows
    return results


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:,.3f}".rstrip("0").rstrip(".") if abs(value) < 1000 else f"{value:,.0f}"
    return str(value)


def results_table(results: dict[str, list[dict[str, Any]]]) -> Table:
    """One rich table over every row."""
    table = Table(title="otel-shapecheck benchmarks (ratios against a baseline measured in the same run)")
    for column, justify in (
        ("benchmark", "left"),
        ("value", "right"),
        ("unit", "left"),
        ("baseline", "right"),
        ("ratio", "right"),
        ("target", "left"),
    ):
        table.add_column(column, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for rows in results.values():
        for row in rows:
            ratio = row.get("ratio")
            # Text cells: row names carry brackets (``[hashing-512]``) that rich would read as markup.
            table.add_row(
                Text(str(row.get("name"))),
                _cell(row.get("value")),
                Text(str(row.get("unit", ""))),
                _cell(row.get("baseline")),
                f"{ratio:.2f}×" if isinstance(ratio, (int, float)) else "—",
                Text(str(row.get("target", row.get("error", "")))),
            )
    return table


def main(argv: Sequence[str] | None = None) -> int:
    """Run, print the table, write ``benchmarks/results.json`` (a partial run updates only its modules)."""
    selected = list(sys.argv[1:] if argv is None else argv)
    results = run_all(selected)
    Console(width=max(Console().width, 140)).print(results_table(results))
    document = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "results": results,
    }
    if selected and RESULTS_FILE.exists():  # a partial run keeps the other benchmarks' last rows
        with contextlib.suppress(ValueError, AttributeError):
            document["results"] = {**json.loads(RESULTS_FILE.read_text()).get("results", {}), **results}
    RESULTS_FILE.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Figures over one table written seven ways: JSON rows, as pandas' split orient, as column names beside
rows, as a Markdown pipe table, CSV, TSV, aligned columns.

A tool returns a table as JSON rows, as column names beside rows of values (pandas' ``to_json(orient=
"split")``, a SQL tool's ``{"columns", "rows"}``), or as text: a SQL tool's Markdown, a file's CSV, a
data frame printed with ``to_string()``. The verdicts should not depend on which. Each question of the
figure sets (``benchmarks/bench_figures_tatqa.py``: the same faithful, mutated and invented figures,
worded and bare) is asked over its table in each form, at the default setting, and the accepted shares
are printed per form beside JSON's, which is the baseline measured in the same run. The text forms are
written by the standard writers where there is one (:mod:`csv`), and by hand as GitHub Flavored
Markdown and as right-aligned columns two spaces or more apart (an empty cell printed ``NaN``, as a data
frame does).

``python -m benchmarks.bench_figures_table_forms [SET ...]`` (all five sets by default).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.bench_figures_tatqa import SETS, answer_text, invent, mutate
from benchmarks.bench_figures_tatqa import Case as _Case
from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._text import figures_in

Table = list[list[str]]


def as_markdown(table: Table) -> str:
    width = max(map(len, table))
    rows = [[cell.replace("|", "\\|") for cell in row] + [""] * (width - len(row)) for row in table]
    lines = [rows[0], ["---"] * width, *rows[1:]]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)


def _separated(table: Table, delimiter: str) -> str:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter, lineterminator="\n").writerows(table)
    return out.getvalue()


def as_aligned(table: Table) -> str:
    width = max(map(len, table))
    rows = [[cell or "NaN" for cell in row] + ["NaN"] * (width - len(row)) for row in table]
    widths = [max(len(row[column]) for row in rows) for column in range(width)]
    return "\n".join(
        "  ".join(cell.rjust(size) for cell, size in zip(row, widths, strict=True)) for row in rows
    )


def _padded(table: Table) -> Table:
    width = max(map(len, table))
    return [row + [""] * (width - len(row)) for row in table]


def as_split(table: Table) -> str:
    """pandas' ``orient="split"``: column names, row names and rows of values apart."""
    header, *rows = _padded(table)
    index = [row[0] for row in rows]
    return json.dumps({"columns": header[1:], "index": index, "data": [row[1:] for row in rows]})


def as_columns_and_rows(table: Table) -> str:
    """A SQL tool's answer: the column names once, then the rows as lists."""
    header, *rows = _padded(table)
    return json.dumps({"columns": header, "rows": rows})


FORMS: dict[str, Callable[[Table], str]] = {
    "json": lambda table: json.dumps(table),
    "split": as_split,
    "columns+rows": as_columns_and_rows,
    "markdown": as_markdown,
    "csv": lambda table: _separated(table, ","),
    "tsv": lambda table: _separated(table, "\t"),
    "aligned": as_aligned,
}
"""Each form's writer; ``json`` is the baseline."""


def tallies(sets: Sequence[str]) -> dict[tuple[str, str, bool], list[int]]:
    """``(set, form, worded) → [faithful, accepted, mutated, accepted, invented, accepted]``."""
    counts: dict[tuple[str, str, bool], list[int]] = {}
    for name in sets:
        with SETS[name].open(encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines]
        for record in records:
            figures = {
                0: (record["answer_text"],),
                2: (mutate(record["answer_text"], record["id"]),),
                4: invent(record["answer_text"], record["id"]),
            }
            for form, write in FORMS.items():
                result = ToolResult(write(record["table"]), name="get_table")
                case = _Case(record["id"], name, record["question"], result, "", "", ())
                for worded in (True, False):
                    row = counts.setdefault((name, form, worded), [0] * 6)
                    for kind, written in figures.items():
                        for figure in written:
                            if _accepted(figure, case, result, worded, row, kind):
                                row[kind + 1] += 1
    return counts


def _accepted(figure: str, case: _Case, result: ToolResult, worded: bool, row: list[int], kind: int) -> bool:
    written = {found.written for found in figures_in(figure, 1)}
    if not written:
        return False
    row[kind] += 1
    finding = check_figures(answer_text(figure, case, worded), [result], min_digits=1)
    return not written & set(finding.unsupported)


def _share(part: int, whole: int) -> float:
    return 100 * part / whole if whole else 0.0


def run(sets: Sequence[str] = tuple(SETS)) -> list[dict[str, Any]]:
    """A row per set, form and wording: the faithful share accepted, with JSON's as its baseline, and the
    mutated and invented shares accepted beside it."""
    counts = tallies(sets)
    rows = []
    for (name, form, worded), (f, fa, m, ma, i, ia) in counts.items():
        baseline = counts[(name, "json", worded)]
        rows.append(
            {
                "name": f"figures over a {form} table, {name}, {'worded' if worded else 'bare'}",
                "value": round(_share(fa, f), 1),
                "unit": "% faithful accepted",
                "baseline": round(_share(baseline[1], baseline[0]), 1),
                "ratio": round(_share(fa, f) / _share(baseline[1], baseline[0]), 3) if baseline[1] else None,
                "target": "the JSON table's share",
                "mutated_accepted_pct": round(_share(ma, m), 2),
                "invented_accepted_pct": round(_share(ia, i), 2),
            }
        )
    return rows


def main(arguments: Sequence[str]) -> None:
    unknown = [name for name in arguments if name not in SETS]
    if unknown:
        raise SystemExit(f"unknown set {unknown[0]!r}: the sets are {', '.join(SETS)}")
    counts = tallies(arguments or tuple(SETS))
    print(
        f"{'set':<13} {'form':<13} {'answer':<7} {'faithful accepted':>20} {'mutated':>15} {'invented':>16}"
    )
    for (name, form, worded), (f, fa, m, ma, i, ia) in counts.items():
        print(
            f"{name:<13} {form:<13} {'worded' if worded else 'bare':<7} "
            f"{_share(fa, f):>7.1f}% of {f:<6} {_share(ma, m):>6.2f}% of {m:<5} "
            f"{_share(ia, i):>6.2f}% of {i:<5}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])

"""FinQA dev and train questions no earlier build took, as figures records: the next report set.

Every question of two FinQA samples (the records of FinQA's ``dev.json`` and ``train.json`` in
FinQA's own format; ``benchmarks/data/README.md`` says where they come from) whose gold program is
arithmetic over the table's cells becomes one record of the format of
``benchmarks/data/tatqa_tuning.jsonl``, written to ``benchmarks/data/finqa_sample_fresh.jsonl``. Built
by ``python -m benchmarks._finqa_sample build DEV_JSON TRAIN_JSON``, by these rules (fixed before any
check ran on the records):

- **order**: the dev file's records, then the train file's, each in file order; all of them kept
  that pass the rules below (no sampling);
- **table**: FinQA's table as given, a cell FinQA wrote as two readings of one number
  (``-32 ( 32 )``, ``18.5% ( 18.5 % )``) keeping its first (the rule of ``finqa_fresh.jsonl``);
- **kept**: a program whose every step is ``add``, ``subtract``, ``multiply`` or ``divide`` over numbers
  of the table's cells past its first row and first column (sign ignored), results of earlier steps
  (``#0``), or ``const_100`` as the last step's multiplier (the rule of ``convfinqa_fresh.jsonl``);
  an answer that rounds to 0 is dropped;
- **dropped**: every question on a FinQA page (``company/year/page``) of ``finqa_fresh.jsonl`` or
  ``convfinqa_fresh.jsonl``, and every question whose table's cell numbers are those of a table of any
  of the four seen files;
- **scale** ``percent`` when the question says *percent*, *percentage*, *%* or *growth rate* and the
  last step divides (the answer ×100) or multiplies by ``const_100`` (the answer as computed), or when
  it says so and the table has ``%`` cells (percentage points, the answer as computed); else empty;
- **answer**: the program's value computed exactly from its operands, rounded as in
  ``finqa_fresh.jsonl`` (2 decimals, or 3 significant digits below 1 when not a percentage);
  ``derivation`` the program written as arithmetic; ``id`` is ``finqa-<split>-<FinQA id>``.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._convfinqa import _derivation, _numbers, _over_cells, _page, _rounded, _seen, _steps, _value
from benchmarks._data_files import write_records

_DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_FILE = _DATA_DIR / "finqa_sample_fresh.jsonl"
SEEN_FILES = ("tatqa_tuning.jsonl", "tatqa_fresh.jsonl", "finqa_fresh.jsonl", "convfinqa_fresh.jsonl")
_TWO_READINGS = re.compile(r"^(.*?\S)\s*\(\s*[^()]*\)\s*$")
_PERCENT_WORDS = re.compile(r"percent|%|growth rate")


def build(dev: Path, train: Path, data_dir: Path = _DATA_DIR) -> list[dict[str, Any]]:
    """Every kept question of the two samples, dev first (see the module doc)."""
    seen_pages, seen_tables = _seen(data_dir, SEEN_FILES)
    records = []
    for split, path in (("dev", dev), ("train", train)):
        for entry in json.loads(path.read_text(encoding="utf-8")):
            table = [[_cell(cell) for cell in row] for row in entry["table"]]
            if _page(entry["id"]) in seen_pages or _numbers(table) in seen_tables:
                continue
            record = _record(split, entry["id"], table, entry["qa"])
            if record is not None:
                records.append(record)
    return records


def _cell(cell: str) -> str:
    """A cell FinQA wrote as two readings (``-32 ( 32 )``) keeps its first; other cells as they are."""
    match = _TWO_READINGS.match(cell)
    if match is not None and re.search(r"[0-9]", match.group(1)):
        return match.group(1)
    return cell


def _record(
    split: str, question_id: str, table: list[list[str]], qa: dict[str, Any]
) -> dict[str, Any] | None:
    steps = _steps(str(qa.get("program", "")))
    if steps is None or not _over_cells(steps, table):
        return None
    value = _value(steps)
    if value is None:
        return None
    question = str(qa["question"]).strip()
    says_percent = _PERCENT_WORDS.search(question.lower()) is not None
    last = steps[-1]
    hundred = last[0] == "multiply" and last[2] == "const_100"
    has_percent_cells = any("%" in cell for row in table[1:] for cell in row[1:])
    percent = says_percent and (last[0] == "divide" or hundred or has_percent_cells)
    if percent and last[0] == "divide":
        value *= 100
    answer = _rounded(value, percent)
    if answer == 0:
        return None
    return {
        "id": f"finqa-{split}-{question_id}",
        "table": table,
        "question": question,
        "answer": answer,
        "derivation": _derivation(steps),
        "scale": "percent" if percent else "",
        "answer_text": f"{answer}%" if percent else str(answer),
    }


def main(argv: Sequence[str]) -> None:
    """``build DEV TRAIN``: write :data:`DATA_FILE` from the two FinQA samples."""
    if len(argv) != 3 or argv[0] != "build":
        raise SystemExit("usage: python -m benchmarks._finqa_sample build DEV_JSON TRAIN_JSON")
    records = build(Path(argv[1]), Path(argv[2]))
    write_records(DATA_FILE, records)
    tables = len({json.dumps(record["table"]) for record in records})
    print(f"{len(records)} records on {tables} tables written")


if __name__ == "__main__":
    main(sys.argv[1:])

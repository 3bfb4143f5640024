"""ConvFinQA's dev conversations as figures records: a report set of tables no lever was chosen on.

Each turn of a conversation whose gold program is arithmetic over the table's cells becomes one record
of the format of ``benchmarks/data/tatqa_tuning.jsonl`` (``id``, ``table``, ``question``, ``answer``,
``derivation``, ``scale``, ``answer_text``), written to ``benchmarks/data/convfinqa_fresh.jsonl``.
``benchmarks/data/README.md`` says where the conversations come from. Built by
``python -m benchmarks._convfinqa build CONVFINQA_DATASET_JSON``, by these rules (fixed before any
check ran on the records):

- **table**: ConvFinQA gives a table as columns of ``{row: number}``; it becomes a header row
  (``""`` then the column names) and one row per row name in order of first appearance, a number
  written as an integer when it is one, else at its shortest (``60.94``), a missing cell as ``""``;
- **question**: the conversation's questions up to and including the turn, joined by a space (a
  follow-up, "so what was the percentage change?", names its rows only through the earlier turns);
- **kept**: a program whose every step is ``add``, ``subtract``, ``multiply`` or ``divide`` over
  numbers of the table's cells (sign ignored), results of earlier steps (``#0``), or ``const_100`` as the
  last step's multiplier; each program once per conversation (a later turn repeating it is left out);
  an answer that rounds to 0 is dropped;
- **dropped**: every conversation on a page of ``finqa_fresh.jsonl`` (FinQA's page ``company/year/page``)
  and every table whose cell numbers are those of a table of either TAT-QA file;
- **scale** ``percent`` when ConvFinQA's answer string ends with ``%`` (the answer ×100, unless the
  program multiplies by ``const_100`` itself), else empty; the answer is the program's value computed
  exactly from its operands (ConvFinQA's executed answers are rounded to 5 decimals first), rounded as
  in ``finqa_fresh.jsonl`` (2 decimals, or 3 significant digits below 1 when not a percentage);
- ``derivation``: the program written as arithmetic, as in ``finqa_fresh.jsonl``; ``id`` is
  ``convfinqa-dev-<ConvFinQA id>-<turn>``.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._data_files import write_records

_DATA_DIR = Path(__file__).resolve().parent / "data"
DATA_FILE = _DATA_DIR / "convfinqa_fresh.jsonl"
SEEN_FILES = ("tatqa_tuning.jsonl", "tatqa_fresh.jsonl", "finqa_fresh.jsonl")
OPERATIONS = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}
_STEP = re.compile(r"\s*(\w+)\(\s*([^,()]+?)\s*,\s*([^,()]+?)\s*\)\s*")
_NUMBER = re.compile(r"-?[0-9][0-9,]*(?:\.[0-9]+)?")


def build(path: Path, data_dir: Path = _DATA_DIR) -> list[dict[str, Any]]:
    """Every kept turn of ConvFinQA's dev conversations in ``path`` (see the module doc)."""
    conversations = json.loads(path.read_text(encoding="utf-8"))["dev"]
    seen_pages, seen_tables = _seen(data_dir, SEEN_FILES)
    records = []
    for conversation in conversations:
        page = _page(conversation["id"])
        table = _table(conversation["doc"]["table"])
        if page in seen_pages or _numbers(table) in seen_tables:
            continue
        dialogue = conversation["dialogue"]
        programs: set[str] = set()
        for turn, program in enumerate(dialogue["turn_program"]):
            if program in programs:
                continue
            record = _record(conversation["id"], turn, table, dialogue, program)
            if record is not None:
                programs.add(program)
                records.append(record)
    return records


def _record(
    conversation: str, turn: int, table: list[list[str]], dialogue: Mapping[str, Any], program: str
) -> dict[str, Any] | None:
    steps = _steps(program)
    if steps is None or not _over_cells(steps, table):
        return None
    value = _value(steps)
    percent = str(dialogue["conv_answers"][turn]).strip().endswith("%")
    if value is None:
        return None
    if percent and not (steps[-1][0] == "multiply" and steps[-1][2] == "const_100"):
        value *= 100
    answer = _rounded(value, percent)
    if answer == 0:
        return None
    written = str(answer)
    return {
        "id": f"convfinqa-dev-{conversation}-{turn}",
        "table": table,
        "question": " ".join(str(question).strip() for question in dialogue["conv_questions"][: turn + 1]),
        "answer": answer,
        "derivation": _derivation(steps),
        "scale": "percent" if percent else "",
        "answer_text": f"{written}%" if percent else written,
    }


def _steps(program: str) -> list[tuple[str, str, str]] | None:
    """The program's steps, or ``None`` when it is not a chain of the four operations."""
    parts = [part for part in re.split(r"\)\s*,", program) if part.strip()]
    steps = []
    for part in parts:
        match = _STEP.fullmatch(part if part.rstrip().endswith(")") else part + ")")
        if match is None or match.group(1) not in OPERATIONS:
            return None
        steps.append((match.group(1), match.group(2), match.group(3)))
    return steps or None


def _over_cells(steps: Sequence[tuple[str, str, str]], table: Sequence[Sequence[str]]) -> bool:
    cells = {abs(number) for row in table[1:] for cell in row[1:] for number in _cell_numbers(cell)}
    for index, (operation, *operands) in enumerate(steps):
        for position, operand in enumerate(operands):
            if re.fullmatch(r"#[0-9]+", operand) and int(operand[1:]) < index:
                continue
            last_multiplier = index == len(steps) - 1 and operation == "multiply" and position == 1
            if operand == "const_100" and last_multiplier:
                continue
            try:
                number = abs(float(operand))
            except ValueError:
                return False
            if number not in cells:
                return False
    return True


def _value(steps: Sequence[tuple[str, str, str]]) -> float | None:
    """The program's value computed exactly (ConvFinQA's executed answers are rounded to 5 decimals,
    which, scaled by 100 and rounded to 2, can land one digit off), or ``None`` for a division by 0."""
    results: list[float] = []
    for operation, left, right in steps:
        a, b = (results[int(side[1:])] if side.startswith("#") else _operand(side) for side in (left, right))
        if operation == "divide" and b == 0:
            return None
        results.append(
            {"add": a + b, "subtract": a - b, "multiply": a * b}.get(operation, 0.0)
            if operation != "divide"
            else a / b
        )
    return results[-1]


def _operand(text: str) -> float:
    return 100.0 if text == "const_100" else float(text)


def _derivation(steps: Sequence[tuple[str, str, str]]) -> str:
    written: list[str] = []
    for index, (operation, left, right) in enumerate(steps):
        if operation == "multiply" and right == "const_100" and index == len(steps) - 1:
            break
        parts = [written[int(side[1:])] if side.startswith("#") else side for side in (left, right)]
        if index < len(steps) - 1 and operation in ("add", "subtract"):
            written.append(f"({parts[0]}{OPERATIONS[operation]}{parts[1]})")
        else:
            written.append(f"{parts[0]}{OPERATIONS[operation]}{parts[1]}")
    final = written[-1]
    return final[1:-1] if final.startswith("(") and final.endswith(")") and final.count("(") == 1 else final


def _rounded(value: float, percent: bool) -> float | int:
    if not percent and 0 < abs(value) < 1:
        digits = 2 - math.floor(math.log10(abs(value)))
        return round(value, digits)
    rounded = round(value, 2)
    return int(rounded) if rounded.is_integer() else rounded


def _table(columns: Mapping[str, Mapping[str, Any]]) -> list[list[str]]:
    rows: list[str] = []
    for column in columns.values():
        rows.extend(name for name in column if name not in rows)
    header = ["", *columns]
    return [header] + [[row, *(_cell(column.get(row)) for column in columns.values())] for row in rows]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _cell_numbers(cell: str) -> list[float]:
    return [float(found.replace(",", "")) for found in _NUMBER.findall(cell)]


def _numbers(table: Iterable[Sequence[str]]) -> tuple[float, ...]:
    """A table's data-cell numbers, sorted: what a re-rendered copy of a table keeps."""
    return tuple(
        sorted(abs(number) for row in list(table)[1:] for cell in row[1:] for number in _cell_numbers(cell))
    )


def _page(conversation: str) -> str:
    """FinQA's page of a ConvFinQA id: ``Single_MRO/2007/page_134.pdf-1`` → ``MRO/2007/page_134.pdf``."""
    page = conversation.split("_", 1)[1] if conversation.startswith(("Single_", "Double_")) else conversation
    return page.rsplit("-", 1)[0] if re.search(r"\.pdf-[0-9]+$", page) else page


def _seen(data_dir: Path, names: Sequence[str]) -> tuple[set[str], set[tuple[float, ...]]]:
    """The FinQA pages and the tables' cell numbers of the data files ``names``: what a new set drops."""
    pages: set[str] = set()
    tables: set[tuple[float, ...]] = set()
    for name in names:
        for line in (data_dir / name).read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            record = json.loads(line)
            tables.add(_numbers(record["table"]))
            identifier = str(record["id"])
            if identifier.startswith("finqa-test-"):
                pages.add(_page(identifier.removeprefix("finqa-test-")))
            elif identifier.startswith("convfinqa-dev-"):
                pages.add(_page(identifier.removeprefix("convfinqa-dev-").rsplit("-", 1)[0]))
    return pages, tables


def main(argv: Sequence[str]) -> None:
    """``build FILE``: write :data:`DATA_FILE` from ConvFinQA's dataset file (its ``dev`` split)."""
    if len(argv) != 2 or argv[0] != "build":
        raise SystemExit("usage: python -m benchmarks._convfinqa build CONVFINQA_DATASET_JSON")
    records = build(Path(argv[1]))
    write_records(DATA_FILE, records)
    tables = len({json.dumps(record["table"]) for record in records})
    print(f"{len(records)} records on {tables} tables written")


if __name__ == "__main__":
    main(sys.argv[1:])

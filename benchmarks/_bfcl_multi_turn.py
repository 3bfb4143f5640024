"""BFCL's multi-turn class APIs as single-choice tool-choice cases: menus of 10–40 tools nobody tuned on.

``benchmarks/data/bfcl_multi_turn_tool_choice.jsonl`` holds the cases (``{id, query, classes,
chosen}``); each case's menu is every function of its ``classes`` in BFCL's own function documents
(``bfcl_eval/data/multi_turn_func_doc/``, read from the installed ``bfcl-eval`` package at load time,
so the committed file stays small). Built by ``python -m benchmarks._bfcl_multi_turn build`` from
``BFCL_v4_multi_turn_base.json`` and its ``possible_answer``: one case per turn that has one user message
and whose ground truth calls exactly one distinct function (once or several times); the turn's user
message is the query (earlier turns are not kept: the check reads only the current turn's user
message). The ground truth's arguments are not kept.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._bfcl import Case, _case, source_dir
from benchmarks._data_files import write_records

DATA_FILE = Path(__file__).resolve().parent / "data" / "bfcl_multi_turn_tool_choice.jsonl"
QUESTIONS = "BFCL_v4_multi_turn_base.json"
CLASS_FILES = {
    "GorillaFileSystem": "gorilla_file_system.json",
    "MathAPI": "math_api.json",
    "MessageAPI": "message_api.json",
    "TwitterAPI": "posting_api.json",
    "TicketAPI": "ticket_api.json",
    "TradingBot": "trading_bot.json",
    "TravelAPI": "travel_booking.json",
    "VehicleControlAPI": "vehicle_control.json",
}
_CALLED = re.compile(r"\s*([A-Za-z_][\w.]*)\s*\(")


def load(path: Path = DATA_FILE, source: Path | None = None) -> list[Case] | None:
    """The committed cases with their menus from ``bfcl-eval``'s data, or ``None`` without that data."""
    source = source or source_dir()
    if source is None:
        return None
    functions = {name: _functions(source, file_name) for name, file_name in CLASS_FILES.items()}
    cases = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                record = json.loads(line)
                tools = [tool for name in record["classes"] for tool in functions[name]]
                cases.append(_case({**record, "tools": tools}, {}, {}))
    return cases


def _functions(source: Path, file_name: str) -> list[dict[str, Any]]:
    path = source / "multi_turn_func_doc" / file_name
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def build(source: Path) -> list[dict[str, Any]]:
    """Every single-choice turn of the multi-turn base questions (see the module doc)."""
    answers = {
        record["id"]: record["ground_truth"] for record in _lines(source / "possible_answer" / QUESTIONS)
    }
    records = []
    for question in _lines(source / QUESTIONS):
        classes = [name for name in question["involved_classes"] if name in CLASS_FILES]
        menu = {tool["name"] for name in classes for tool in _functions(source, CLASS_FILES[name])}
        for turn, (messages, truth) in enumerate(
            zip(question["question"], answers[question["id"]], strict=True)
        ):
            users = [message["content"] for message in messages if message.get("role") == "user"]
            called = {match.group(1) for call in truth if (match := _CALLED.match(call))}
            if len(users) != 1 or len(called) != 1 or not called <= menu or len(menu) < 2:
                continue
            records.append(
                {
                    "id": f"{question['id']}_turn_{turn}",
                    "query": users[0],
                    "classes": classes,
                    "chosen": sorted(called),
                }
            )
    return records


def _lines(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def main(argv: Sequence[str]) -> None:
    """``build [BFCL_DATA]``: write :data:`DATA_FILE` from the installed (or named) ``bfcl-eval`` data."""
    if not argv or argv[0] != "build" or len(argv) > 2:
        raise SystemExit("usage: python -m benchmarks._bfcl_multi_turn build [BFCL_DATA_DIR]")
    source = Path(argv[1]) if len(argv) == 2 else source_dir()
    if source is None:
        raise SystemExit("bfcl-eval's data not found: install bfcl-eval or name its data folder")
    records = build(source)
    write_records(DATA_FILE, records, compact=True)
    print(f"{len(records)} cases written to {DATA_FILE}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""The BFCL tool-choice cases the tool-choice benchmarks read, with tool schemas and arguments when found.

The cases are the shared JSON Lines files (``{id, query, tools[{name, description}], chosen}``), looked
for in ``$SHAPECHECK_BENCH_DATA``, else ``shared/data`` beside the repository, else
``/work/shared/data``. Those files carry no parameter schemas and no call arguments. When the BFCL source
data is at hand (``$SHAPECHECK_BENCH_BFCL_SOURCE``, else the ``bfcl_eval/data`` folder of an installed
``bfcl-eval`` package, found without importing it; ``make bench`` installs it with ``--no-deps``), each
case is joined by id to its source record: every tool gains its ``parameters`` schema (only where the
source tool has the same name and description) and every case its reference calls' ``arguments``. Tools
or cases that carry these fields in the JSON Lines themselves keep their own.

BFCL live is split by menu for tuning vs reporting: a case belongs to the ``tune`` half when the first
byte of the SHA-256 of its menu (sorted tool names joined by newlines) is even, else to ``report``, so
cases offering the same menu never straddle the halves.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from otel_shapecheck._model import JSONValue, OfferedTool
from otel_shapecheck.readers._tool_schema import tool_parameters

BFCL_FILES = {"bfcl": "bfcl_tool_choice.jsonl", "bfcl_live": "bfcl_live_tool_choice.jsonl"}
DATA_ENV = "SHAPECHECK_BENCH_DATA"
SOURCE_ENV = "SHAPECHECK_BENCH_BFCL_SOURCE"
_SOURCE_FILES = (
    "BFCL_v4_multiple.json",
    "BFCL_v4_parallel_multiple.json",
    "BFCL_v4_live_multiple.json",
    "BFCL_v4_live_parallel_multiple.json",
)


@dataclass(frozen=True)
class Case:
    """One BFCL case: the query, the menu, the reference's tools and (when known) their calls' arguments."""

    id: str
    query: str
    tools: tuple[OfferedTool, ...]
    chosen: tuple[str, ...]
    arguments: Mapping[str, JSONValue] = field(default_factory=dict)
    """Per chosen tool, the arguments of its first reference call (first accepted value of each)."""
    schemas: Mapping[str, JSONValue] = field(default_factory=dict)
    """Per offered tool name, its raw parameter schema as the source wrote it (when it had one)."""

    @property
    def has_distractor(self) -> bool:
        """At least one offered tool is not chosen, so there is a margin to measure."""
        return len(self.chosen) < len(self.tools)

    @property
    def half(self) -> str:
        """``tune`` or ``report``, by the hash of the menu's sorted tool names."""
        digest = hashlib.sha256("\n".join(sorted(t.name for t in self.tools)).encode()).digest()
        return "tune" if digest[0] % 2 == 0 else "report"


def data_dir(explicit: str | Path | None = None) -> Path | None:
    """The folder holding both BFCL JSON Lines files, or ``None``."""
    here = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    raw = explicit if explicit is not None else os.environ.get(DATA_ENV)
    candidates = [Path(raw)] if raw else [here, Path("/work/shared/data")]
    for candidate in candidates:
        if all((candidate / name).is_file() for name in BFCL_FILES.values()):
            return candidate
    return None


def source_dir(explicit: str | Path | None = None) -> Path | None:
    """The BFCL source data folder (questions with schemas, ``possible_answer/``), or ``None``."""
    raw = explicit if explicit is not None else os.environ.get(SOURCE_ENV)
    if raw:
        return Path(raw) if (Path(raw) / _SOURCE_FILES[0]).is_file() else None
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "data"
        if (candidate / _SOURCE_FILES[0]).is_file():
            return candidate
    return None


def load(directory: Path, source: Path | None = None) -> dict[str, list[Case]]:
    """Every case of both files by dataset name (``bfcl``, ``bfcl_live``), joined to ``source`` if given."""
    functions, answers = _source_records(source) if source is not None else ({}, {})
    datasets: dict[str, list[Case]] = {}
    for dataset, file_name in BFCL_FILES.items():
        with (directory / file_name).open(encoding="utf-8") as lines:
            records = [json.loads(line) for line in lines if line.strip()]
        datasets[dataset] = [_case(record, functions, answers) for record in records]
    return datasets


def _case(
    record: dict[str, Any], functions: Mapping[str, list[Any]], answers: Mapping[str, list[Any]]
) -> Case:
    source_tools = {t.get("name"): t for t in functions.get(record["id"], []) if isinstance(t, dict)}
    tools = []
    schemas: dict[str, JSONValue] = {}
    for tool in record["tools"]:
        schema = tool.get("parameters")
        source = source_tools.get(tool["name"])
        if schema is None and source is not None and source.get("description") == tool.get("description"):
            schema = source.get("parameters")
        tools.append(OfferedTool(tool["name"], tool.get("description"), tool_parameters(schema)))
        if schema is not None:
            schemas.setdefault(tool["name"], schema)
    arguments = record.get("arguments")
    if not isinstance(arguments, dict):
        arguments = {}
        for call in answers.get(record["id"], []):
            for name, args in call.items() if isinstance(call, dict) else ():
                arguments.setdefault(name, _first_accepted(args))
    return Case(record["id"], record["query"], tuple(tools), tuple(record["chosen"]), arguments, schemas)


def _first_accepted(value: Any) -> JSONValue:
    """A reference call's arguments with each list of accepted values reduced to its first one."""
    if isinstance(value, dict):
        return {key: _first_accepted(item) for key, item in value.items()}
    if isinstance(value, list):
        return _first_accepted(value[0]) if value else None
    return value  # type: ignore[no-any-return]


def _source_records(source: Path) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    functions: dict[str, list[Any]] = {}
    answers: dict[str, list[Any]] = {}
    for file_name in _SOURCE_FILES:
        for record in _json_lines(source / file_name):
            functions[record["id"]] = record.get("function", [])
        for record in _json_lines(source / "possible_answer" / file_name):
            answers[record["id"]] = record.get("ground_truth", [])
    return functions, answers


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                yield json.loads(line)

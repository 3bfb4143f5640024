"""ToolAlpaca's evaluation APIs as single-choice tool-choice cases: a corpus nobody tuned the check on.

``benchmarks/data/toolalpaca_tool_choice.jsonl`` holds the cases (``{id, api, split, query, tools[{name,
description, parameters}], chosen}``); ``benchmarks/data/README.md`` says where they come from. Built by
``python -m benchmarks._toolalpaca build EVAL_REAL.json EVAL_SIMULATED.json`` from ToolAlpaca's
``data/eval_real.json`` and ``data/eval_simulated.json``:

- one menu per API: its functions (``Function_Description``, in that order), each described by the first
  line of ToolAlpaca's own function description (the text its agent reads before ``Parameters:``);
- each function's ``parameters`` as a JSON Schema object built from the API's OpenAPI document (the
  operation's and its path's parameters, ``$ref`` resolved, and the properties of a JSON request body),
  keeping each property's ``type``, ``description``, ``enum``, ``default`` and ``example(s)``;
- one case per instruction whose golden answer calls exactly one distinct function (once or several
  times) on a menu of at least two functions; instructions whose answer chains different functions are
  left out (the first call's choice of such a task is not one tool). The answers' arguments are not kept.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._bfcl import Case, _case
from benchmarks._data_files import write_records

DATA_FILE = Path(__file__).resolve().parent / "data" / "toolalpaca_tool_choice.jsonl"
_PROPERTY_KEYS = ("type", "description", "enum", "default", "example", "examples")


def load(path: Path = DATA_FILE) -> list[Case]:
    """The committed ToolAlpaca cases, with their tools' schemas read as the check reads them."""
    with path.open(encoding="utf-8") as lines:
        return [_case(json.loads(line), {}, {}) for line in lines if line.strip()]


def build(real: Path, simulated: Path) -> list[dict[str, Any]]:
    """Every single-choice case of both ToolAlpaca evaluation files (see the module doc)."""
    records: list[dict[str, Any]] = []
    for split, path in (("eval_real", real), ("eval_simulated", simulated)):
        apis = json.loads(path.read_text(encoding="utf-8"))
        for number, api in enumerate(apis):
            records += _api_cases(split, number, api)
    return records


def _api_cases(split: str, number: int, api: Mapping[str, Any]) -> list[dict[str, Any]]:
    document = api["Documentation"]
    document = json.loads(document) if isinstance(document, str) else document
    tools = []
    for name, text in api["Function_Description"].items():
        if name not in api["Function_Projection"]:  # "components": the data structures, not a function
            continue
        path, method = api["Function_Projection"][name]
        operation = document["paths"][path][method]
        description = text.split("\nParameters:", 1)[0].strip()
        tools.append(
            {"name": name, "description": description, "parameters": _schema(document, path, operation)}
        )
    names = [tool["name"] for tool in tools]
    cases = []
    seen: set[str] = set()
    for index, (query, answer) in enumerate(zip(api["Instructions"], api["Golden_Answers"], strict=True)):
        called = {step["Action"] for step in answer}
        if len(called) != 1 or len(names) < 2 or not called <= set(names) or query in seen:
            continue
        seen.add(query)
        cases.append(
            {
                "id": f"toolalpaca_{split}_{number}_{index}",
                "api": api["Name"],
                "split": split,
                "query": query,
                "tools": tools,
                "chosen": sorted(called),
            }
        )
    return cases


def _schema(document: Mapping[str, Any], path: str, operation: Mapping[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for parameter in [*document["paths"][path].get("parameters", []), *operation.get("parameters", [])]:
        parameter = _resolved(document, parameter)
        name = parameter.get("name")
        if not isinstance(name, str):
            continue
        spec = dict(_resolved(document, parameter.get("schema", {})))
        for key in ("description", "example", "examples"):
            if key in parameter:
                spec[key] = parameter[key]
        properties[name] = _property(spec)
        if parameter.get("required"):
            required.append(name)
    body = operation.get("requestBody")
    if isinstance(body, Mapping):
        content = _resolved(document, body).get("content", {})
        schema = _resolved(document, content.get("application/json", {}).get("schema", {}))
        for name, spec in schema.get("properties", {}).items():
            properties.setdefault(name, _property(_resolved(document, spec)))
        required += [name for name in schema.get("required", []) if name not in required]
    return {"type": "object", "properties": properties, "required": required}


def _property(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {key: spec[key] for key in _PROPERTY_KEYS if key in spec}


def _resolved(document: Mapping[str, Any], value: Any) -> Mapping[str, Any]:
    """``value`` with a local ``$ref`` (``#/components/...``) followed, once; ``{}`` when unreadable."""
    if isinstance(value, Mapping) and isinstance(value.get("$ref"), str):
        target: Any = document
        for part in value["$ref"].removeprefix("#/").split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        value = target
    return value if isinstance(value, Mapping) else {}


def main(argv: Sequence[str]) -> None:
    """``build EVAL_REAL EVAL_SIMULATED``: write :data:`DATA_FILE`."""
    if len(argv) != 3 or argv[0] != "build":
        raise SystemExit("usage: python -m benchmarks._toolalpaca build EVAL_REAL.json EVAL_SIMULATED.json")
    records = build(Path(argv[1]), Path(argv[2]))
    write_records(DATA_FILE, records, compact=True)
    print(f"{len(records)} cases written to {DATA_FILE}")


if __name__ == "__main__":
    main(sys.argv[1:])

"""Seal-Tools' test splits as single-choice tool-choice cases: a third corpus nobody tuned on.

``benchmarks/data/seal_tools_tool_choice.jsonl`` holds them compactly: first one ``{"tool": {name,
description, parameters}}`` line per distinct tool, then one ``{id, split, query, menu, chosen}`` line per
case, ``menu`` naming its tools in the order they were offered (Seal-Tools defines every tool name once,
with one description and one parameter list, so a name stands for its tool). ``benchmarks/data/README.md``
says where they come from. Built by ``python -m benchmarks._seal_tools build DIR`` from a copy of
Seal-Tools' ``Seal-Tools_Dataset/`` folder:

- the menu of a case is the ``api_list`` of its prompt in ``dataset_for_finetune/<split>.json`` (the
  tools retrieved for that task, the right ones among them), each tool its ``api_name``,
  ``api_description`` and ``parameters`` as a JSON Schema object (``type`` and ``description`` kept, and
  ``required``; the ``field`` label and the ``responses`` are left out: a tool definition offered to a
  model has neither);
- the query is the case's ``query`` in ``<split>.jsonl``, and a case is kept when its ``calling`` names
  exactly one distinct API, offered on a menu of at least two. The calls' arguments are not kept.
"""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._bfcl import Case, _case
from benchmarks._data_files import write_records

DATA_FILE = Path(__file__).resolve().parent / "data" / "seal_tools_tool_choice.jsonl"
SPLITS = ("test_in_domain", "test_out_domain")


def load(path: Path = DATA_FILE) -> list[Case]:
    """The committed Seal-Tools cases, with their tools' schemas read as the check reads them."""
    tools: dict[str, dict[str, Any]] = {}
    cases = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            if "tool" in record:
                tools[record["tool"]["name"]] = record["tool"]
                continue
            menu = [tools[name] for name in record["menu"]]
            cases.append(_case({**record, "tools": menu}, {}, {}))
    return cases


def build(folder: Path) -> list[dict[str, Any]]:
    """The tool lines, then every single-choice case of both test splits (see the module doc)."""
    tools: dict[str, dict[str, Any]] = {}
    cases: list[dict[str, Any]] = []
    for split in SPLITS:
        prompts = json.loads((folder / "dataset_for_finetune" / f"{split}.json").read_text(encoding="utf-8"))
        queries = {}
        for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                record = json.loads(line)
                queries[record["id"]] = record
        for prompt in prompts:
            source = queries[prompt["id"]]
            menu = _menu(prompt["conversations"][0]["value"])
            for tool in menu:
                if tools.setdefault(tool["name"], tool) != tool:
                    raise ValueError(f"tool {tool['name']!r} is defined twice, differently")
            names = [tool["name"] for tool in menu]
            called = {call["api"] for call in source["calling"]}
            if len(called) != 1 or len(set(names)) < 2 or not called <= set(names):
                continue
            cases.append(
                {
                    "id": prompt["id"],
                    "split": split,
                    "query": source["query"],
                    "menu": names,
                    "chosen": sorted(called),
                }
            )
    used = {name for case in cases for name in case["menu"]}
    return [{"tool": tools[name]} for name in sorted(used)] + cases


def _menu(prompt: str) -> list[dict[str, Any]]:
    listed = prompt.split("api_list = ", 1)[1].split("\ntask_instruction = ", 1)[0]
    return [_tool(api) for api in ast.literal_eval(listed)]


def _tool(api: Mapping[str, Any]) -> dict[str, Any]:
    properties = {
        name: {key: spec[key] for key in ("type", "description") if key in spec}
        for name, spec in api.get("parameters", {}).items()
        if isinstance(spec, Mapping)
    }
    schema = {"type": "object", "properties": properties, "required": list(api.get("required", []))}
    return {"name": api["api_name"], "description": api["api_description"], "parameters": schema}


def main(argv: Sequence[str]) -> None:
    """``build DIR``: write :data:`DATA_FILE` from a copy of ``Seal-Tools_Dataset/``."""
    if len(argv) != 2 or argv[0] != "build":
        raise SystemExit("usage: python -m benchmarks._seal_tools build SEAL_TOOLS_DATASET_DIR")
    records = build(Path(argv[1]))
    write_records(DATA_FILE, records, compact=True)
    print(f"{sum('id' in r for r in records)} cases, {sum('tool' in r for r in records)} tools written")


if __name__ == "__main__":
    main(sys.argv[1:])

"""StableToolBench's solvable test queries as single-choice tool-choice cases: a corpus nobody tuned on.

``benchmarks/data/stabletoolbench_tool_choice.jsonl`` holds them compactly, as
:mod:`benchmarks._seal_tools` does: first one ``{"tool": {name, description, parameters}}`` line per
distinct tool definition, then one ``{id, group, query, menu, chosen}`` line per case, ``menu`` the
positions of its tools among the tool lines, in the order they were offered (two RapidAPI tools of one
name exist, so a name does not stand for its tool). ``benchmarks/data/README.md``
says where they come from. Built by ``python -m benchmarks._stabletoolbench build DIR`` from a copy of
StableToolBench's ``solvable_queries/test_instruction/`` folder (the six groups G1 category, instruction
and tool, G2 category and instruction, G3 instruction):

- a tool is one RapidAPI endpoint of a query's ``api_list``, written as ToolBench's agents are shown it:
  the name ``<api>_for_<tool>`` (both standardised as ToolBench does: characters other than letters,
  digits and ``_`` become ``_``, runs of ``_`` collapse, lower case, no ``_`` at either end, a leading
  digit gets ``get_``, a reserved word such as ``id`` gets ``is_``; not cut to ToolBench's 64
  characters, which gives 13 distinct endpoints one name), the
  description ``This is the subfunction for tool "<tool>", you can use this tool.`` followed, when the
  endpoint has one, by ``The description of this function is: "<its description, the api name in it
  replaced by the function name, first 256 characters>"``, and its required then optional parameters as
  a JSON Schema object (``type`` as ToolBench maps it, ``description`` cut at 256 characters;
  ``required`` lists the required ones). Parameter defaults (ToolBench's example values) are left out;
- a query names its ``relevant APIs``, usually two or more. Each relevant API gives one case: the menu is
  the query's ``api_list`` in its order without the *other* relevant APIs (so the right tool is the only
  offered tool the query asks for), the chosen tool is that API, and the case is kept when the menu has
  at least two tools. The same query, menu and choice from several groups is kept once. No call or
  argument is kept (the queries have none).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks._bfcl import Case, _case
from benchmarks._data_files import write_records

DATA_FILE = Path(__file__).resolve().parent / "data" / "stabletoolbench_tool_choice.jsonl"
GROUPS = ("G1_category", "G1_instruction", "G1_tool", "G2_category", "G2_instruction", "G3_instruction")
MAX_DESCRIPTION_CHARS = 256
_RESERVED = frozenset({"from", "class", "return", "false", "true", "id", "and"})
_TYPES = {"NUMBER": "integer", "STRING": "string", "BOOLEAN": "boolean"}
_NOT_NAME = re.compile(r"[^\u4e00-\u9fa5a-zA-Z0-9_]")


def load(path: Path = DATA_FILE) -> list[Case]:
    """The committed StableToolBench cases, with their tools' schemas read as the check reads them."""
    tools: list[dict[str, Any]] = []
    cases = []
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            record = json.loads(line)
            if "tool" in record:
                tools.append(record["tool"])
                continue
            cases.append(_case({**record, "tools": [tools[key] for key in record["menu"]]}, {}, {}))
    return cases


def standardised(text: str) -> str:
    """A name part as ToolBench writes it in function names (see the module doc)."""
    name = re.sub(r"_+", "_", _NOT_NAME.sub("_", text)).lower().strip("_")
    return f"get_{name}" if name[:1].isdigit() else name


def function(api: Mapping[str, Any]) -> dict[str, Any]:
    """One ``api_list`` entry as the tool ToolBench's agents are offered (see the module doc)."""
    tool = standardised(api["tool_name"])
    pure = standardised(api["api_name"])
    pure = f"is_{pure}" if pure in _RESERVED else pure
    name = f"{pure}_for_{tool}"
    description = f'This is the subfunction for tool "{tool}", you can use this tool.'
    own = str(api.get("api_description") or "").strip()
    if own:
        own = own.replace(api["api_name"], name)[:MAX_DESCRIPTION_CHARS]
        description += f'The description of this function is: "{own}"'
    properties: dict[str, Any] = {}
    required = []
    for kind in ("required_parameters", "optional_parameters"):
        for parameter in api.get(kind) or ():
            key = standardised(str(parameter["name"]))
            key = f"is_{key}" if key in _RESERVED else key
            properties[key] = {
                "type": _TYPES.get(parameter.get("type"), "string"),
                "description": str(parameter.get("description") or "")[:MAX_DESCRIPTION_CHARS],
            }
            if kind == "required_parameters":
                required.append(key)
    schema = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": description, "parameters": schema}


def build(folder: Path) -> list[dict[str, Any]]:
    """The tool lines, then one case per relevant API of every query of the six groups (module doc)."""
    tools: dict[str, int] = {}
    cases: list[dict[str, Any]] = []
    seen: set[tuple[str, tuple[str, ...], str]] = set()
    for group in GROUPS:
        queries = json.loads((folder / f"{group}.json").read_text(encoding="utf-8"))
        for query in queries:
            offered = [(api["tool_name"], api["api_name"], function(api)) for api in query["api_list"]]
            keys = {}
            for _, _, tool in offered:
                text = json.dumps(tool, ensure_ascii=False)
                keys[tool["name"]] = tools.setdefault(text, len(tools))
            if len(keys) < len(offered):
                raise ValueError(f"query {query['query_id']} of {group} offers two tools of one name")
            relevant = list(dict.fromkeys((tool, api) for tool, api in query["relevant APIs"]))
            for right in relevant:
                others = set(relevant) - {right}
                menu = list(dict.fromkeys(t["name"] for tool, api, t in offered if (tool, api) not in others))
                chosen = [t["name"] for tool, api, t in offered if (tool, api) == right]
                key = (query["query"], tuple(menu), chosen[0] if chosen else "")
                if len(chosen) != 1 or len(menu) < 2 or key in seen:
                    continue
                seen.add(key)
                cases.append(
                    {
                        "id": f"stabletoolbench_{group}_{query['query_id']}_{relevant.index(right)}",
                        "group": group,
                        "query": query["query"],
                        "menu": [keys[name] for name in menu],
                        "chosen": chosen,
                    }
                )
    used = sorted({key for case in cases for key in case["menu"]})
    renumbered = {key: number for number, key in enumerate(used)}
    for case in cases:
        case["menu"] = [renumbered[key] for key in case["menu"]]
    definitions = {key: json.loads(text) for text, key in tools.items()}
    return [{"tool": definitions[key]} for key in used] + cases


def main(argv: Sequence[str]) -> None:
    """``build DIR``: write :data:`DATA_FILE` from a copy of ``solvable_queries/test_instruction/``."""
    if len(argv) != 2 or argv[0] != "build":
        raise SystemExit("usage: python -m benchmarks._stabletoolbench build TEST_INSTRUCTION_DIR")
    records = build(Path(argv[1]))
    write_records(DATA_FILE, records, compact=True)
    print(f"{sum('id' in r for r in records)} cases, {sum('tool' in r for r in records)} tools written")


if __name__ == "__main__":
    main(sys.argv[1:])

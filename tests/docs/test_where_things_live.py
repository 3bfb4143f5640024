"""docs/where-things-live.md lists every module of the package, and nothing that is not there."""

from __future__ import annotations

import re
from pathlib import Path

from docs.module_index import PACKAGE, modules

DOC = Path(__file__).resolve().parents[2] / "docs" / "where-things-live.md"
_FOLDER = re.compile(r"^\*\*`(otel_shapecheck/[\w/]*)`\*\*$")
_MODULE = re.compile(r"^- `([\w.]+\.py)`: \S")


def _listed() -> set[tuple[str, str]]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Every module\n", 1)[1]
    listed: set[tuple[str, str]] = set()
    folder = None
    for line in section.splitlines():
        if match := _FOLDER.match(line):
            folder = match.group(1)
        elif (match := _MODULE.match(line)) and folder is not None:
            listed.add((folder, match.group(1)))
    return listed


def test_every_module_is_listed_and_every_listed_module_exists() -> None:
    tree = {(folder, name) for folder, name, _ in modules()}
    listed = _listed()
    assert not tree - listed, f"modules missing from docs/where-things-live.md: {sorted(tree - listed)}"
    assert not listed - tree, f"listed but not in the package: {sorted(listed - tree)}"


def test_the_layer_tree_names_every_folder() -> None:
    text = DOC.read_text(encoding="utf-8").split("\n## Every module\n", 1)[0]
    folders = {path.parent.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("__init__.py")}
    top = {folder.split("/")[0] for folder in folders if folder != "."}
    assert all(re.search(rf"^\s+{re.escape(name)}/", text, re.M) for name in top), top

"""Print the module index of docs/where-things-live.md: every module of the package, by folder, with the
first sentence of its docstring. ``tests/docs/test_where_things_live.py`` checks the doc against the tree.

Usage: .venv/bin/python tests/docs/module_index.py  (prints the section to paste under "## Every module")
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "otel_shapecheck"


def first_sentence(path: Path) -> str:
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    text = " ".join(docstring.split())
    match = re.match(r"(.+?[.:])(\s|$)", text)
    return (match.group(1) if match else text).rstrip(":.") or "(no docstring)"


def modules() -> list[tuple[str, str, Path]]:
    """Every module as (folder, file name, path), folders in path order; a subpackage's ``__init__.py``
    (a docstring describing the folder) is the folder's own line, not a module."""
    found = []
    for folder in sorted({path.parent for path in PACKAGE.rglob("*.py")}):
        relative = folder.relative_to(PACKAGE.parent).as_posix() + "/"
        for path in sorted(folder.glob("*.py")):
            if path.name != "__init__.py" or folder == PACKAGE:
                found.append((relative, path.name, path))
    return found


def index() -> str:
    """The section's text."""
    lines: list[str] = []
    folder = None
    for relative, name, path in modules():
        if relative != folder:
            folder = relative
            lines += ["", f"**`{relative}`**", ""]
        lines.append(f"- `{name}`: {first_sentence(path)}")
    return "\n".join(lines).strip() + "\n"


def main() -> None:
    print(index())


if __name__ == "__main__":
    main()

"""docs/configuration.md against the settings table: every setting documented once with its variable,
argument, default and flag; nothing documented that the table does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from otel_shapecheck._settings_table import SETTINGS, Setting

CONFIGURATION = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
SETTINGS_HEADER = "| variable | argument | flag | default | meaning |"
RENAMED_HEADER = "| deprecated variable | replaced by |"
VARIABLE = re.compile(r"OTEL_SHAPECHECK_[A-Z0-9_]*[A-Z0-9]")
FLAG = re.compile(r"--[a-z][a-z-]*")


def _rows(header: str) -> list[list[str]]:
    """The cells of every row of every table under ``header``, backticks removed."""
    rows: list[list[str]] = []
    lines = CONFIGURATION.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if line.strip() != header:
            continue
        for row in lines[index + 2 :]:
            if not row.startswith("|"):
                break
            rows.append([cell.strip().replace("`", "") for cell in row.strip().strip("|").split(" | ")])
    return rows


def _documented() -> dict[str, list[str]]:
    rows = _rows(SETTINGS_HEADER)
    variables = [row[0] for row in rows]
    assert len(variables) == len(set(variables)), "a variable is documented twice"
    return {row[0]: row for row in rows}


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.variable)
def test_every_setting_is_documented_with_its_argument_flag_and_default(setting: Setting) -> None:
    """The setting's row names its variable, its argument, its flag (or none) and starts with its default."""
    row = _documented().get(setting.variable)
    assert row is not None, f"{setting.variable} is not in docs/configuration.md"
    _, argument, flag, default, _ = row
    assert re.search(rf"\b{setting.name}\b", argument), argument
    assert FLAG.findall(flag) == ([setting.flag] if setting.flag else []), flag
    assert default.startswith(setting.default_text.replace("`", "")), default


def test_nothing_is_documented_that_the_table_does_not_have() -> None:
    """Every documented row, flag and variable (renamed ones included) is a setting of the table."""
    variables = {setting.variable for setting in SETTINGS}
    flags = {setting.flag for setting in SETTINGS if setting.flag}
    documented = _documented()
    assert set(documented) == variables
    assert {flag for row in documented.values() for flag in FLAG.findall(row[2])} == flags
    renamed = {(setting.renamed_from, setting.variable) for setting in SETTINGS if setting.renamed_from}
    assert {(row[0], row[1]) for row in _rows(RENAMED_HEADER)} == renamed
    mentioned = set(VARIABLE.findall(CONFIGURATION.read_text(encoding="utf-8")))
    assert mentioned == variables | {old for old, _ in renamed}


def test_the_check_catches_a_missing_row(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A row taken out of the docs is reported (the check can fail)."""
    text = CONFIGURATION.read_text(encoding="utf-8")
    edited = tmp_path / "configuration.md"
    edited.write_text(
        "\n".join(line for line in text.splitlines() if "`OTEL_SHAPECHECK_MAX_TRACES`" not in line),
        encoding="utf-8",
    )
    monkeypatch.setattr(f"{__name__}.CONFIGURATION", edited)
    assert "OTEL_SHAPECHECK_MAX_TRACES" not in _documented()

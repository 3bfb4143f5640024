"""``check`` on exports that hold nothing to read: an empty export, and runs in which no model call was seen.

Spans come from the real SDK, are exported as OTLP/JSON and read back by the real command.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from otel_shapecheck.cli._main import main


@pytest.mark.parametrize("document", ["{}", '{"resourceSpans": []}', "{}\n{}\n"])
def test_an_empty_export_is_zero_spans_and_exit_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], document: str
) -> None:
    """Proto3 JSON writes an export without spans as ``{}``: a valid empty export, not a foreign shape."""
    path = tmp_path / "empty.json"
    path.write_text(document)
    assert main(["check", "--embedder", "hashing", "--json", str(path)]) == 0
    report: Any = json.loads(capsys.readouterr().out)
    assert report["summary"]["spans"] == 0
    assert report["spans"] == [] and report["runs"] == []


def test_an_empty_export_prints_zero_spans(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The terminal report says 0 spans for ``{}``."""
    path = tmp_path / "empty.json"
    path.write_text("{}")
    assert main(["check", "--embedder", "hashing", str(path)]) == 0
    assert "0 spans" in capsys.readouterr().out

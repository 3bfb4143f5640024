"""The reference docs stay true to the code: every public name and every setting documented, nothing else."""

from __future__ import annotations

import re
from pathlib import Path

from otel_shapecheck import _attributes

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
TABLE_ROW_NAME = re.compile(r"^\|\s*`([^`]+)`\s*\|", re.MULTILINE)
SETTING = re.compile(r"OTEL_SHAPECHECK_[A-Z0-9_]*[A-Z0-9]")


METRICS_HEADING = "\n## Metrics\n"


def _contract_names(*, metrics: bool = False) -> set[str]:
    return {
        value
        for name, value in vars(_attributes).items()
        if name.isupper() and isinstance(value, str) and name.startswith("METRIC_") is metrics
    }


def _attribute_reference() -> tuple[str, str]:
    """docs/attributes.md before its Metrics section, and the section (to the next heading of its level)."""
    text = (DOCS / "attributes.md").read_text(encoding="utf-8")
    before, found, metrics = text.partition(METRICS_HEADING)
    assert found, "docs/attributes.md has no Metrics section"
    return before, metrics.split("\n## ")[0]


def test_attribute_reference_lists_exactly_the_contract() -> None:
    """docs/attributes.md's tables name every constant of the attribute module, and nothing else."""
    spans, _ = _attribute_reference()
    documented = TABLE_ROW_NAME.findall(spans)
    assert len(documented) == len(set(documented)), "a name is listed twice"
    assert set(documented) == _contract_names()


def test_metrics_reference_lists_exactly_the_metric_names() -> None:
    """The Metrics section's tables name every metric and metric attribute constant, and nothing else."""
    _, metrics = _attribute_reference()
    documented = TABLE_ROW_NAME.findall(metrics)
    assert len(documented) == len(set(documented)), "a name is listed twice"
    assert set(documented) == _contract_names(metrics=True)


def test_configuration_reference_lists_every_setting_in_the_code() -> None:
    """docs/configuration.md documents every OTEL_SHAPECHECK_* variable the package reads, and no other."""
    in_code = {
        name
        for path in (ROOT / "otel_shapecheck").rglob("*.py")
        for name in SETTING.findall(path.read_text(encoding="utf-8"))
    }
    documented = set(SETTING.findall((DOCS / "configuration.md").read_text(encoding="utf-8")))
    assert in_code, "the package reads no OTEL_SHAPECHECK_* variable?"
    assert in_code - documented == set(), "undocumented settings"
    assert documented - in_code == set(), "documented settings the code does not read"


def test_attribute_reference_lists_every_score_label() -> None:
    """Every gen_ai.evaluation.score.label a built-in check can write appears in docs/attributes.md."""
    from otel_shapecheck.checks.conformance import _check as _conformance_check
    from otel_shapecheck.checks.figures import _check as _figures_check
    from otel_shapecheck.checks.tool_choice import _labels as _tool_choice

    labels = {
        value
        for module in (_tool_choice, _conformance_check, _figures_check)
        for name, value in vars(module).items()
        if name.startswith("LABEL_") and isinstance(value, str)
    }
    text = (DOCS / "attributes.md").read_text(encoding="utf-8")
    assert labels, "the checks define no labels?"
    assert {label for label in labels if f"`{label}`" not in text} == set()


def test_attribute_reference_lists_every_skip_reason() -> None:
    """Every value shapecheck.tool_choice.skipped can take appears in docs/attributes.md."""
    from otel_shapecheck.checks.tool_choice import _labels as _tool_choice

    reasons = {value for name, value in vars(_tool_choice).items() if name.startswith("SKIP_")}
    text = (DOCS / "attributes.md").read_text(encoding="utf-8")
    assert reasons
    assert {reason for reason in reasons if f"`{reason}`" not in text} == set()

"""``check --junit`` read back with a maintained JUnit parser, and ``check --markdown``: the right counts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from junitparser import Failure, JUnitXml, Skipped

from cli.console_script import run_cli


@pytest.fixture(name="checked", scope="module")
def _checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The demo's export checked once with every report written: the output folder and the JSON report."""
    out = tmp_path_factory.mktemp("ci-reports")
    demo = run_cli("demo", "--embedder", "hashing", "--out", str(out))
    assert demo.returncode == 0, demo.stderr
    traces = str(out / "traces.jsonl")
    junit, markdown = out / "report.xml", out / "summary.md"
    completed = run_cli(
        "check", "--embedder", "hashing", "--junit", str(junit), "--markdown", str(markdown), "--json", traces
    )
    assert completed.returncode == 0, completed.stderr
    return out, json.loads(completed.stdout)


def test_junit_has_a_suite_per_run_and_a_case_per_evaluated_span(
    checked: tuple[Path, dict[str, Any]],
) -> None:
    out, report = checked
    xml = JUnitXml.fromfile(str(out / "report.xml"))
    suites = list(xml)
    runs = report["runs"]
    assert len(suites) == len(runs) == 4
    assert sorted(suite.name.rsplit(" ", 1)[0] for suite in suites) == sorted(run["name"] for run in runs)
    cases = [case for suite in suites for case in suite]
    assert len(cases) == report["summary"]["evaluated"]
    failures = [case for case in cases if any(isinstance(result, Failure) for result in case.result)]
    assert len(failures) == report["summary"]["flagged"] == xml.failures
    spans = report["spans"]
    flagged_ids = {span["span_id"] for span in spans if span["attributes"].get("shapecheck.flagged")}
    assert {case.name.rsplit(" ", 1)[1] for case in failures} == flagged_ids
    skipped = [case for case in cases if any(isinstance(result, Skipped) for result in case.result)]
    assert len(skipped) == xml.skipped
    for case in failures:
        message = case.result[0].message
        assert message and ":" in message  # "check: label" of each flagged verdict


def test_junit_suite_counts_add_up(checked: tuple[Path, dict[str, Any]]) -> None:
    out, _ = checked
    xml = JUnitXml.fromfile(str(out / "report.xml"))
    assert xml.tests == sum(suite.tests for suite in xml)
    assert xml.failures == sum(suite.failures for suite in xml)
    for suite in xml:
        assert suite.tests == len(list(suite))


def test_markdown_lists_every_flagged_verdict(checked: tuple[Path, dict[str, Any]]) -> None:
    out, report = checked
    text = (out / "summary.md").read_text(encoding="utf-8")
    summary = report["summary"]
    assert f"**{summary['evaluated']}** evaluated, **{summary['flagged']}** flagged" in text
    table = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line][1:]
    flagged_events = sum(
        1
        for span in report["spans"]
        for event in span["events"]
        if any(
            flag.startswith(_check_name(event) + ".")
            for flag in span["attributes"].get("shapecheck.flags", [])
        )
    )
    assert len(table) == flagged_events > 0
    assert all(line.count(" | ") == 4 for line in table)  # no explanation breaks the table


def test_an_unwritable_report_path_is_a_usage_error(tmp_path: Path) -> None:
    completed = run_cli("check", "--junit", str(tmp_path / "missing" / "r.xml"), str(tmp_path / "x.json"))
    assert completed.returncode == 2
    assert "--junit" in completed.stderr


def _check_name(event: dict[str, Any]) -> str:
    return str(event["attributes"]["gen_ai.evaluation.name"]).removeprefix("shapecheck.")

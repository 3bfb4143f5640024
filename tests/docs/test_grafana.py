"""The Grafana dashboard in docs/grafana/: importable JSON, its panels, variables and Tempo queries.

Whether its PromQL queries return the right data is proven against a real Prometheus scraping a
scripted run's verdict metrics: ``tests/e2e/test_prometheus.py`` (``make test-e2e``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from otel_shapecheck import _attributes

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "otel-shapecheck.json"

_TRACEQL_ATTRIBUTE = re.compile(r"\b(?:span|resource)?\.((?:[a-z_]+\.)*[a-z_]+)\s*(?:=|!=|=~|>|<)")
_VARIABLE = re.compile(r"\$(\w+)")


def _dashboard() -> dict[str, Any]:
    document = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert isinstance(document, dict)
    return document


def _targets(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for panel in document["panels"]:
        for target in panel.get("targets", []):
            yield panel["title"], target


def _promql(document: dict[str, Any]) -> Iterator[tuple[str, str]]:
    for title, target in _targets(document):
        if target["datasource"]["type"] == "prometheus":
            yield title, target["expr"]


def _links(document: dict[str, Any]) -> Iterator[str]:
    yield from (link["url"] for link in document.get("links", []))
    for panel in document["panels"]:
        yield from (link["url"] for link in panel["fieldConfig"]["defaults"].get("links", []))


def test_template_variables_and_the_variables_queries_use() -> None:
    """Two data source variables and the agent and model variables, whose All matches series without the
    label; the PromQL queries use no other variable (the end-to-end test replaces exactly these)."""
    variables = {variable["name"]: variable for variable in _dashboard()["templating"]["list"]}
    assert {variables["prometheus"]["type"], variables["tempo"]["type"]} == {"datasource"}
    for name in ("agent", "model"):
        assert variables[name]["query"]["query"].startswith("label_values(shapecheck_verdicts_total, ")
        assert variables[name]["allValue"] == ".*", "All must also match series without the label"
    used = {name for _, expr in _promql(_dashboard()) for name in _VARIABLE.findall(expr)}
    assert used == {"agent", "model", "__rate_interval"}


def test_tempo_queries_and_links_name_contract_attributes() -> None:
    """The flagged-traces table and the Tempo links search span attributes the library writes."""
    contract = {
        value for name, value in vars(_attributes).items() if name.isupper() and isinstance(value, str)
    }
    document = _dashboard()
    traceql = [target["query"] for _, target in _targets(document) if target["datasource"]["type"] == "tempo"]
    traceql += [unquote(url) for url in _links(document)]
    assert traceql and any(_attributes.FLAGGED in query for query in traceql)
    for query in traceql:
        attributes = set(_TRACEQL_ATTRIBUTE.findall(query))
        assert attributes, query
        assert attributes <= contract, attributes - contract
    assert all(url.startswith("/explore?") and "${tempo}" in url for url in _links(document))


def test_the_dashboard_has_the_panels_the_issue_asks_for() -> None:
    """Flag rate by check and by agent, the margin distribution, unsupported figures per answer,
    conformance collapses and flagged traces from Tempo; every panel on a dashboard variable's datasource."""
    document = _dashboard()
    titles = {panel["title"] for panel in document["panels"]}
    assert {
        "Flag rate by check",
        "Flag rate by agent",
        "Tool-choice margin distribution",
        "Unsupported figures per answer",
        "Conformance collapses by agent",
        "Flagged traces",
    } <= titles
    ids = [panel["id"] for panel in document["panels"]]
    assert len(ids) == len(set(ids))
    for panel in document["panels"]:
        assert panel["datasource"]["uid"] in ("${prometheus}", "${tempo}"), panel["title"]
    assert document["uid"] and document["schemaVersion"] >= 36

"""The Grafana dashboard in docs/grafana/: importable JSON whose every query names what the code emits.

The metric and label names are taken from a real run: a scripted agent run goes through the span
processor into an ``InMemoryMetricReader``, and each collected metric is translated as Prometheus stores
OTLP metrics by default (the Collector's ``prometheus`` exporter, Prometheus' own OTLP receiver): dots to
underscores, ``_total`` on monotonic sums, ``_bucket``/``_sum``/``_count`` on histograms, curly-brace
units dropped. A query naming anything else would draw an empty panel.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import Histogram, InMemoryMetricReader, Metric, Sum
from opentelemetry.sdk.trace import TracerProvider
from pipeline.runs import AGENT, GENAI, run

from otel_shapecheck import _attributes
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "otel-shapecheck.json"
PROMETHEUS_BUILT_IN_LABELS = {"le", "job", "instance"}

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_MATCHER = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
_SELECTOR = re.compile(r"\{([^}]*)\}")
_GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
_METRIC = re.compile(r"([A-Za-z_:][A-Za-z0-9_:]*)\s*[{\[]")
_LABEL_VALUES = re.compile(r"label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)")
_TRACEQL_ATTRIBUTE = re.compile(r"\b(?:span|resource)?\.((?:[a-z_]+\.)*[a-z_]+)\s*(?:=|!=|=~|>|<)")


def prometheus_names(metric: Metric) -> set[str]:
    """The series names Prometheus stores for one OTel metric (the default translation, with suffixes)."""
    base = re.sub(r"_+", "_", re.sub(r"[^A-Za-z0-9_:]", "_", metric.name)).strip("_")
    unit = metric.unit or ""
    assert unit == "1" or re.fullmatch(r"\{[^}]*\}", unit) or not unit, f"translate unit {unit!r} here"
    if isinstance(metric.data, Histogram):
        return {f"{base}_bucket", f"{base}_sum", f"{base}_count"}
    if isinstance(metric.data, Sum) and metric.data.is_monotonic:
        return {f"{base}_total"}
    return {f"{base}_ratio" if unit == "1" else base}


def prometheus_label(key: str) -> str:
    """An attribute key as a Prometheus label name."""
    return re.sub(r"[^A-Za-z0-9_]", "_", key)


@cache
def emitted() -> tuple[frozenset[str], frozenset[str]]:
    """The Prometheus metric and label names a scripted agent run's verdict metrics produce."""
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected, checks=build_checks("hashing"), meter_provider=meter_provider
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    run(provider.get_tracer("app"), GENAI, agent=AGENT)
    assert processor.force_flush()
    data = reader.get_metrics_data()
    provider.shutdown()
    meter_provider.shutdown()
    names: set[str] = set()
    labels: set[str] = set()
    assert data is not None
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if not metric.name.startswith(_verdict_metric_prefixes()):
                    continue
                names |= prometheus_names(metric)
                for point in metric.data.data_points:
                    labels |= {prometheus_label(key) for key in point.attributes or {}}
    return frozenset(names), frozenset(labels)


def _verdict_metric_prefixes() -> tuple[str, ...]:
    return (
        _attributes.METRIC_VERDICTS,
        _attributes.METRIC_TOOL_CHOICE_MARGIN,
        _attributes.METRIC_FIGURES_SUPPORT,
        _attributes.METRIC_FIGURES_UNSUPPORTED,
        _attributes.METRIC_RUNS,
    )


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


def names_in(expr: str) -> tuple[set[str], set[str]]:
    """The metric names and label names a PromQL expression uses (string literals ignored)."""
    bare = _STRING.sub('""', expr)
    labels = {name for selector in _SELECTOR.findall(bare) for name in _MATCHER.findall(selector)}
    labels |= {
        name.strip() for grouping in _GROUPING.findall(bare) for name in grouping.split(",") if name.strip()
    }
    metrics = set(_METRIC.findall(bare)) - {"by", "without"}
    return metrics, labels


def test_names_in_reads_promql() -> None:
    """The PromQL reader finds metric and label names, and not the words inside strings."""
    metrics, labels = names_in(
        'sum by (a, b) (rate(m_total{c="x=y", d=~"$v"}[$__rate_interval])) / sum(rate(n_count[5m]))'
    )
    assert metrics == {"m_total", "n_count"}
    assert labels == {"a", "b", "c", "d"}


def test_the_emitted_names_are_the_documented_ones() -> None:
    """The translation of the scripted run's metrics gives the Prometheus names docs/attributes.md lists."""
    names, labels = emitted()
    text = (ROOT / "docs" / "attributes.md").read_text(encoding="utf-8")
    assert names == {
        "shapecheck_verdicts_total",
        "shapecheck_tool_choice_margin_bucket",
        "shapecheck_tool_choice_margin_sum",
        "shapecheck_tool_choice_margin_count",
        "shapecheck_figures_support_bucket",
        "shapecheck_figures_support_sum",
        "shapecheck_figures_support_count",
        "shapecheck_figures_unsupported_total",
        "shapecheck_runs_total",
    }
    for name in names:
        stem = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
        assert f"`{name}`" in text or f"`{stem}_bucket`" in text, name
    assert labels == {
        "shapecheck_check",
        "shapecheck_label",
        "shapecheck_flagged",
        "shapecheck_run_coverage",
        "gen_ai_agent_name",
        "gen_ai_request_model",
        "gen_ai_provider_name",
    }
    assert all(f"`{label}`" in text for label in labels)


def test_every_prometheus_query_names_emitted_metrics_and_labels() -> None:
    """Each PromQL query names at least one metric, and only metrics and labels the code emits."""
    names, labels = emitted()
    queries = list(_promql(_dashboard()))
    assert queries
    for title, expr in queries:
        metrics, used_labels = names_in(expr)
        assert metrics, f"{title}: names no metric"
        assert metrics <= names, f"{title}: {metrics - names} not emitted"
        assert used_labels <= labels | PROMETHEUS_BUILT_IN_LABELS, f"{title}: {used_labels - labels}"


def test_template_variables_read_emitted_labels() -> None:
    """The agent and model variables list the values of labels the verdict counter carries."""
    names, labels = emitted()
    variables = {variable["name"]: variable for variable in _dashboard()["templating"]["list"]}
    assert {variables["prometheus"]["type"], variables["tempo"]["type"]} == {"datasource"}
    for name in ("agent", "model"):
        (metric, label), *_ = _LABEL_VALUES.findall(variables[name]["query"]["query"])
        assert metric in names and label in labels
        assert variables[name]["allValue"] == ".*", "All must also match series without the label"


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


def test_the_readmes_promql_names_emitted_metrics_and_labels() -> None:
    """The alert example in docs/grafana/README.md queries what the code emits, like the dashboard."""
    names, labels = emitted()
    text = (DASHBOARD.parent / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```promql\n(.*?)```", text, re.DOTALL)
    assert blocks
    for block in blocks:
        metrics, used_labels = names_in(block)
        assert metrics and metrics <= names, metrics - names
        assert used_labels <= labels | PROMETHEUS_BUILT_IN_LABELS, used_labels - labels

"""End to end into a real Prometheus: the demo's agent with verdict metrics on, scraped, and every query of
the Grafana dashboard (``docs/grafana/otel-shapecheck.json``) evaluated through Prometheus' HTTP API.

The verdict metrics leave the process through the OpenTelemetry Prometheus exporter (Debian's Prometheus
has no OTLP receiver); a Prometheus server started on 127.0.0.1 scrapes it every second. The demo's four
scenarios run twice in one process, and the server starts between the rounds: a counter's first sample
is its baseline, so the second round is what ``rate`` and ``increase`` see. Each query must return
series with the labels its panel shows, and the values the run implies: a clean agent's flag rate is 0,
a disagreement's negative margin reaches the margin quantiles, and the conformance verdict is found when
a model is chosen.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.util.genai.handler import TelemetryHandler
from prometheus_client import start_http_server

from otel_shapecheck import _attributes as attrs
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli.demo import _demo as demo
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._verdict_metrics import (
    MARGIN_PLUS_ONE_BUCKETS,
    SUPPORT_BUCKETS,
    shifted_margin,
)

from .prometheus import PrometheusServer

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "grafana" / "otel-shapecheck.json"
RATE_WINDOW = "5m"
"""What ``$__rate_interval`` becomes: it covers every scrape of the run."""
ALL = ".*"
"""What a dashboard variable set to All becomes (its ``allValue``)."""
MODEL = "gpt-4o-mini"
AGENTS = {"storage-ops", "order-support", "capacity-planner", "incident-triage"}
_LEGEND_LABEL = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


@dataclass(frozen=True)
class Scraped:
    """The server once both rounds were scraped, and what one round recorded (the expected values)."""

    prometheus: PrometheusServer
    margins: tuple[float, ...]
    supports: tuple[float, ...]


@pytest.fixture(name="scraped", scope="module")
def _scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scraped]:
    reader = PrometheusMetricReader()  # the client library's default registry, on every exporter release
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    exposition, _ = start_http_server(0, addr="127.0.0.1")
    prometheus = PrometheusServer(
        tmp_path_factory.mktemp("prometheus"), f"127.0.0.1:{exposition.server_port}"
    )
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected, checks=build_checks("hashing"), meter_provider=meter_provider
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        # Round 1 ends before the server starts, so every series is in every scrape from the first one:
        # the same sample times for all, hence the same rate extrapolation and exact ratios.
        first = _run_demo_scenarios(provider, processor, collected)
        prometheus.start()
        prometheus.wait_for_scrape_after(time.time())
        margins, supports = _run_demo_scenarios(provider, processor, collected)
        prometheus.wait_for_scrape_after(time.time())
        assert (margins, supports) == first, "the same run must record the same values"
        yield Scraped(prometheus, tuple(margins), tuple(supports))
    finally:
        prometheus.stop()
        provider.shutdown()
        exposition.shutdown()
        exposition.server_close()
        meter_provider.shutdown()


def _run_demo_scenarios(
    provider: TracerProvider, processor: ShapecheckSpanProcessor, collected: CollectingSpanProcessor
) -> tuple[list[float], list[float]]:
    """The demo's scenarios through the instrumented client into the span processor (metrics on); returns
    the margins and supported shares this round's spans carry."""
    already = len(collected.spans)
    with demo._content_capture_on_spans(), demo._instrumented(provider):
        handler = TelemetryHandler(tracer_provider=provider)
        with ScriptedOpenAIServer(demo.demo_script(), model=MODEL) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
            agent = demo._ScriptedAgent(client, handler, provider)
            for turn in demo._TOOL_TURNS:
                agent.run_tool_turn(turn)
            agent.run_analyst()
            client.close()
    assert processor.force_flush()
    spans: list[Any] = [span.attributes or {} for span in collected.spans[already:]]
    margins = [float(a[attrs.TOOL_CHOICE_MARGIN]) for a in spans if attrs.TOOL_CHOICE_MARGIN in a]
    supports = [_supported_share(a) for a in spans if a.get(attrs.FIGURES_CHECKED)]
    return margins, supports


def _supported_share(attributes: Any) -> float:
    supported = sum(
        attributes.get(key, 0)
        for key in (attrs.FIGURES_CARRIED, attrs.FIGURES_COMPUTED, attrs.FIGURES_INFERRED)
    )
    return float(supported / attributes[attrs.FIGURES_CHECKED])


def _dashboard_queries() -> list[tuple[str, str, str]]:
    """``(panel title, PromQL, legend format)`` of every Prometheus target of the dashboard."""
    document = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    return [
        (panel["title"], target["expr"], target.get("legendFormat", ""))
        for panel in document["panels"]
        for target in panel.get("targets", [])
        if target["datasource"]["type"] == "prometheus"
    ]


def _as_grafana_sends(expr: str, *, agent: str = ALL, model: str = ALL) -> str:
    """The query with the dashboard's variables replaced as Grafana replaces them."""
    return expr.replace("$__rate_interval", RATE_WINDOW).replace("$agent", agent).replace("$model", model)


def _by(series: Sequence[dict[str, Any]], *labels: str) -> dict[tuple[str, ...], float]:
    """Each series' value, keyed by the given labels (``""`` where a series lacks one)."""
    keyed = {tuple(s["metric"].get(label, "") for label in labels): float(s["value"][1]) for s in series}
    assert len(keyed) == len(series), f"labels {labels} do not tell the series apart: {series}"
    return keyed


def _query(scraped: Scraped, title: str, ref: int = 0, **variables: str) -> list[dict[str, Any]]:
    expr = [expr for panel, expr, _ in _dashboard_queries() if panel == title][ref]
    return scraped.prometheus.query(_as_grafana_sends(expr, **variables))


def quantile(q: float, values: Sequence[float], bounds: Sequence[float]) -> float:
    """What Prometheus' ``histogram_quantile`` answers for these values in buckets with these upper bounds
    (linear inside the bucket; the first bucket starts at 0 when its bound is positive)."""
    rank = q * len(values)
    below = 0
    for index, upper in enumerate(bounds):
        count = sum(1 for value in values if value <= upper)
        if count >= rank:
            lower = bounds[index - 1] if index else (0.0 if upper > 0 else upper)
            return lower + (upper - lower) * (rank - below) / (count - below)
        below = count
    return bounds[-1]


def test_quantile_reads_buckets_as_prometheus_does() -> None:
    """The expected-value rule: rank 0.3 of three values in the bucket (0.95, 1] lies 30 % into it."""
    assert quantile(0.1, [0.99, 1.3, 1.4], (0.5, 0.95, 1.0, 1.5)) == pytest.approx(0.965)
    assert quantile(0.5, [0.2, 0.6], (0.5, 1.0)) == pytest.approx(0.5)


class TestEveryQuery:
    def test_every_dashboard_query_returns_series_with_its_panels_labels(self, scraped: Scraped) -> None:
        """Every PromQL target, with All selected and with the run's model selected, returns finite
        values in series that carry the labels its legend shows."""
        queries = _dashboard_queries()
        assert len(queries) == 12
        for model in (ALL, MODEL):
            for title, expr, legend in queries:
                series = scraped.prometheus.query(_as_grafana_sends(expr, model=model))
                assert series, f"{title} (model {model}): no series for\n{expr}"
                shown = set(_LEGEND_LABEL.findall(legend))
                for one in series:
                    # Only the provider may be missing: the conformance verdict's agent span names none.
                    missing = shown - set(one["metric"])
                    assert missing <= {"gen_ai_provider_name"}, f"{title}: {one['metric']} lacks {missing}"
                assert all(any(label in one["metric"] for one in series) for label in shown), title
                assert all(math.isfinite(float(s["value"][1])) for s in series), f"{title}: {series}"

    def test_the_variables_list_the_runs_agents_and_model(self, scraped: Scraped) -> None:
        """``label_values(metric, label)`` of the agent and model variables, through the labels API."""
        variables = json.loads(DASHBOARD.read_text(encoding="utf-8"))["templating"]["list"]
        found = {}
        for variable in variables:
            if variable["type"] == "query":
                (metric, label), *_ = re.findall(
                    r"label_values\(\s*([\w:]+)\s*,\s*(\w+)\s*\)", variable["query"]["query"]
                )
                found[variable["name"]] = set(scraped.prometheus.label_values(label, metric))
        assert found == {"agent": AGENTS, "model": {MODEL}}

    def test_the_readmes_promql_runs(self, scraped: Scraped) -> None:
        """The examples in docs/grafana/README.md are accepted by Prometheus; the flag rate by agent draws
        the clean agent at 0, and the alert, comparing with a week ago, finds no week-old data here."""
        text = (DASHBOARD.parent / "README.md").read_text(encoding="utf-8")
        blocks = re.findall(r"```promql\n(.*?)```", text, re.DOTALL)
        assert len(blocks) == 2
        rates, alert = (scraped.prometheus.query(block) for block in blocks)
        assert _by(rates, "gen_ai_agent_name")[("storage-ops",)] == 0.0
        assert alert == []

    def test_the_stored_names_are_the_documented_ones(self, scraped: Scraped) -> None:
        """The verdict metrics' series and labels in Prometheus are the ones docs/attributes.md lists."""
        text = (ROOT / "docs" / "attributes.md").read_text(encoding="utf-8")
        names = set(scraped.prometheus.label_values("__name__", '{__name__=~"shapecheck_.*"}'))
        verdict_names = {name for name in names if not name.startswith("shapecheck_processor_")}
        assert verdict_names == {
            "shapecheck_verdicts_total",
            "shapecheck_tool_choice_margin_plus_one_bucket",
            "shapecheck_tool_choice_margin_plus_one_sum",
            "shapecheck_tool_choice_margin_plus_one_count",
            "shapecheck_figures_support_bucket",
            "shapecheck_figures_support_sum",
            "shapecheck_figures_support_count",
            "shapecheck_figures_unsupported_total",
            "shapecheck_runs_total",
        }
        for name in verdict_names:
            stem = name.removesuffix("_bucket").removesuffix("_sum").removesuffix("_count")
            assert f"`{name}`" in text or f"`{stem}_bucket`" in text, name
        ours = {
            "shapecheck_check",
            "shapecheck_label",
            "shapecheck_flagged",
            "gen_ai_agent_name",
            "gen_ai_request_model",
            "gen_ai_provider_name",
        }
        series = scraped.prometheus.query("shapecheck_verdicts_total")
        assert ours == {label for s in series for label in s["metric"]} & ours
        runs = scraped.prometheus.query("shapecheck_runs_total")
        assert {"shapecheck_run_coverage", "shapecheck_flagged", "gen_ai_agent_name"} <= {
            label for s in runs for label in s["metric"]
        }
        assert all(f"`{label}`" in text for label in ours | {"shapecheck_run_coverage"})


class TestPanelValues:
    def test_flag_rate_by_check(self, scraped: Scraped) -> None:
        """Per round: 1 of 6 tool-choice verdicts (the disagreement), 1 of 3 figures, 1 of 1 conformance."""
        rates = _by(_query(scraped, "Flag rate by check"), "shapecheck_check")
        assert rates == pytest.approx({("tool_choice",): 1 / 6, ("figures",): 1 / 3, ("conformance",): 1.0})

    def test_a_clean_agent_shows_a_flag_rate_of_zero(self, scraped: Scraped) -> None:
        """storage-ops had nothing flagged: it is drawn at 0, not left out."""
        rates = _by(_query(scraped, "Flag rate by agent"), "gen_ai_agent_name")
        assert rates == pytest.approx(
            {
                ("storage-ops",): 0.0,
                ("order-support",): 1 / 3,
                ("capacity-planner",): 1 / 3,
                ("incident-triage",): 1.0,
            }
        )
        clean = _by(_query(scraped, "Flag rate by agent", agent="storage-ops"), "gen_ai_agent_name")
        assert clean == {("storage-ops",): 0.0}

    def test_flag_rate_by_model_and_provider(self, scraped: Scraped) -> None:
        """The calls name provider and model; the conformance verdict takes the model from its agent span,
        which names no provider."""
        rates = _by(
            _query(scraped, "Flag rate by model and provider"), "gen_ai_provider_name", "gen_ai_request_model"
        )
        assert rates == pytest.approx({("openai", MODEL): 2 / 9, ("", MODEL): 1.0})

    def test_verdicts_by_check_and_label(self, scraped: Scraped) -> None:
        """One series per check and label the run produced."""
        series = _query(scraped, "Verdicts by check and label")
        assert set(_by(series, "shapecheck_check", "shapecheck_label")) == {
            ("tool_choice", "clear"),
            ("tool_choice", "skipped"),
            ("tool_choice", "disagreement"),
            ("figures", "grounded"),
            ("figures", "unsupported"),
            ("conformance", "recovered"),
        }

    def test_a_disagreement_reaches_the_margin_distribution(self, scraped: Scraped) -> None:
        """The heatmap's buckets count every scored call, the negative margin included, where it belongs."""
        assert any(margin < 0 for margin in scraped.margins), "the run must hold a disagreement"
        increases = _by(_query(scraped, "Tool-choice margin distribution"), "le")
        total = increases[("+Inf",)]
        assert total > 0
        for bound in MARGIN_PLUS_ONE_BUCKETS:
            share = sum(1 for margin in scraped.margins if shifted_margin(margin) <= bound) / len(
                scraped.margins
            )
            assert increases[(str(bound),)] / total == pytest.approx(share), bound

    def test_margin_p10_and_median_include_the_disagreement(self, scraped: Scraped) -> None:
        """The quantiles are those of every margin, negative ones included (the p10 lies below 0)."""
        shifted = [shifted_margin(margin) for margin in scraped.margins]
        for ref, q in ((0, 0.1), (1, 0.5)):
            (series,) = _query(scraped, "Tool-choice margin: p10 and median", ref)
            expected = quantile(q, shifted, MARGIN_PLUS_ONE_BUCKETS) - 1
            assert float(series["value"][1]) == pytest.approx(expected), q
        (p10,) = _query(scraped, "Tool-choice margin: p10 and median", 0)
        assert float(p10["value"][1]) < 0

    def test_unsupported_figures_per_answer(self, scraped: Scraped) -> None:
        """One invented figure across three answers with figures."""
        (series,) = _query(scraped, "Unsupported figures per answer")
        assert float(series["value"][1]) == pytest.approx(1 / 3)

    def test_share_of_supported_figures(self, scraped: Scraped) -> None:
        """p10 and median of the supported share, as the support buckets place the run's answers."""
        for ref, q in ((0, 0.1), (1, 0.5)):
            (series,) = _query(scraped, "Share of supported figures per answer: p10 and median", ref)
            assert float(series["value"][1]) == pytest.approx(
                quantile(q, scraped.supports, SUPPORT_BUCKETS)
            ), q

    def test_conformance_verdicts_stay_when_a_model_is_chosen(self, scraped: Scraped) -> None:
        """The analyst span names no model; its verdict carries its agent span's, so the panel keeps it."""
        for model in (ALL, MODEL):
            series = _query(scraped, "Conformance collapses by agent", model=model)
            increases = _by(series, "gen_ai_agent_name", "shapecheck_label")
            assert set(increases) == {("incident-triage", "recovered")}, model
            assert increases[("incident-triage", "recovered")] > 0
        assert _query(scraped, "Conformance collapses by agent", model="another-model") == []

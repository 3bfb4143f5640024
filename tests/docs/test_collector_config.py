"""The Collector configurations in collector-config/: pipelines wired to defined components, known names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_shapecheck import _attributes
from otel_shapecheck._settings_table import PROCESSOR, by_name

CONFIG_DIR = Path(__file__).resolve().parents[2] / "collector-config"
CONFIG_FILES = sorted(CONFIG_DIR.glob("*.yaml")) + sorted(CONFIG_DIR.glob("*.yml"))
CONTRACT_NAMES = {
    value for name, value in vars(_attributes).items() if name.isupper() and isinstance(value, str)
}
SHAPECHECK_NAME = re.compile(r"shapecheck\.[a-z_]+(?:\.[a-z_]+)*")
GEN_AI_NAME = re.compile(r"gen_ai\.evaluation\.[a-z_.]+")
KINDS = ("receivers", "processors", "exporters")


def wiring_problems(document: dict[str, Any]) -> list[str]:
    """Pipelines naming undefined components, defined components no pipeline uses, half-used connectors,
    and routes to pipelines that do not exist."""
    problems: list[str] = []
    connectors = set(document.get("connectors") or {})
    defined = {kind: set(document.get(kind) or {}) for kind in KINDS}
    usable = {"receivers": defined["receivers"] | connectors, "processors": defined["processors"]}
    usable["exporters"] = defined["exporters"] | connectors
    pipelines: dict[str, dict[str, list[str]]] = (document.get("service") or {}).get("pipelines") or {}
    if not pipelines:
        problems.append("no pipelines")
    for name, pipeline in pipelines.items():
        if name.split("/")[0] not in {"traces", "logs", "metrics"}:
            problems.append(f"pipeline {name}: unknown signal")
        if not pipeline.get("receivers") or not pipeline.get("exporters"):
            problems.append(f"pipeline {name}: needs receivers and exporters")
        for kind in KINDS:
            problems += [
                f"pipeline {name}: undefined {kind} {c}"
                for c in pipeline.get(kind) or []
                if c not in usable[kind]
            ]
    problems += _extension_problems(document)
    used = {kind: {c for p in pipelines.values() for c in p.get(kind) or []} for kind in KINDS}
    for kind in KINDS:
        problems += [f"{kind} {c} defined but unused" for c in sorted(defined[kind] - used[kind])]
    for connector, settings in (document.get("connectors") or {}).items():
        if connector not in used["exporters"] or connector not in used["receivers"]:
            problems.append(f"connector {connector} not used at both ends")
        routes = list((settings or {}).get("default_pipelines") or [])
        routes += [
            route for entry in (settings or {}).get("table") or [] for route in entry.get("pipelines") or []
        ]
        problems += [
            f"connector {connector} routes to unknown pipeline {r}" for r in routes if r not in pipelines
        ]
    return problems


def _authenticators(node: Any) -> list[str]:
    """Every ``auth: {authenticator: NAME}`` anywhere in a component's settings."""
    if isinstance(node, dict):
        found = [str(node["authenticator"])] if isinstance(node.get("authenticator"), str) else []
        return found + [name for value in node.values() for name in _authenticators(value)]
    if isinstance(node, list):
        return [name for value in node for name in _authenticators(value)]
    return []


def _extension_problems(document: dict[str, Any]) -> list[str]:
    """Extensions enabled but not defined, defined but not enabled, authenticators not enabled."""
    defined = set(document.get("extensions") or {})
    enabled = set((document.get("service") or {}).get("extensions") or [])
    problems = [f"extension {name} enabled but not defined" for name in sorted(enabled - defined)]
    problems += [f"extension {name} defined but not enabled" for name in sorted(defined - enabled)]
    for kind in KINDS:
        for component, settings in (document.get(kind) or {}).items():
            problems += [
                f"{kind} {component}: authenticator {name} is not an enabled extension"
                for name in _authenticators(settings)
                if name not in enabled
            ]
    return problems


def unknown_names(text: str) -> set[str]:
    """``shapecheck.*`` and ``gen_ai.evaluation.*`` names in the text that the library does not define."""
    return (set(SHAPECHECK_NAME.findall(text)) | set(GEN_AI_NAME.findall(text))) - CONTRACT_NAMES


def _pipelines(document: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    pipelines: dict[str, dict[str, list[str]]] = (document.get("service") or {}).get("pipelines") or {}
    return pipelines


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict), f"{path.name} is not a mapping"
    return document


def test_there_are_configurations() -> None:
    """The single-tier configuration and the gateway/agent pair exist."""
    assert {path.name for path in CONFIG_FILES} >= {"collector.yaml", "agent.yaml", "gateway.yaml"}


def test_the_checks_catch_a_miswired_configuration() -> None:
    """A configuration with an undefined, an unused and a half-used component, a bad route and a made-up name
    is reported on every count: the checks below are not vacuous."""
    broken = """
receivers: {otlp: {}}
processors: {batch: {}, tail_sampling: {}}
exporters: {otlp/tempo: {auth: {authenticator: bearertokenauth/missing}}}
extensions: {health_check: {}}
connectors:
  routing/x: {default_pipelines: [logs/nowhere], table: []}
service:
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch, filter/missing]
      exporters: [otlp/tempo, routing/x]
# keeps traces where shapecheck.flaged = true
"""
    problems = wiring_problems(yaml.safe_load(broken))
    assert "pipeline traces: undefined processors filter/missing" in problems
    assert "processors tail_sampling defined but unused" in problems
    assert "connector routing/x not used at both ends" in problems
    assert "connector routing/x routes to unknown pipeline logs/nowhere" in problems
    assert "extension health_check defined but not enabled" in problems
    assert (
        "exporters otlp/tempo: authenticator bearertokenauth/missing is not an enabled extension" in problems
    )
    assert unknown_names(broken) == {"shapecheck.flaged"}


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda path: path.name)
class TestConfiguration:
    def test_pipelines_are_wired_to_components_defined_in_the_file(self, path: Path) -> None:
        """Every component a pipeline or route names is defined in the same file, and every one is used."""
        assert wiring_problems(_load(path)) == []

    def test_attribute_names_are_the_librarys(self, path: Path) -> None:
        """Every shapecheck.* and gen_ai.evaluation.* name in the file is one of the library's constants."""
        assert unknown_names(path.read_text(encoding="utf-8")) == set()

    def test_traces_keep_flagged_traces(self, path: Path) -> None:
        """Wherever traces are tail-sampled, a policy keeps traces with shapecheck.flagged = true."""
        document = _load(path)
        sampling = (document.get("processors") or {}).get("tail_sampling")
        if sampling is None:  # a tier that only forwards (an agent, a load-balancing front)
            return
        flagged = [
            policy
            for policy in sampling["policies"]
            if policy["type"] == "boolean_attribute"
            and policy["boolean_attribute"] == {"key": _attributes.FLAGGED, "value": True}
        ]
        assert flagged
        assert any(policy["type"] == "probabilistic" for policy in sampling["policies"])

    def test_metrics_reach_prometheus_or_the_next_tier(self, path: Path) -> None:
        """Where metrics are handled, the applications' OTLP metrics go to Prometheus or to the gateways."""
        pipelines = _pipelines(_load(path))
        metrics = {name: p for name, p in pipelines.items() if name.split("/")[0] == "metrics"}
        if not metrics:  # a tier that only routes traces and logs (the shapecheck front)
            return
        (pipeline,) = metrics.values()
        assert "otlp" in pipeline["receivers"]
        assert any(e.startswith(("prometheus", "otlp")) for e in pipeline["exporters"])

    def test_span_metrics_count_every_evaluated_span_by_flagged(self, path: Path) -> None:
        """A spanmetrics connector counts by shapecheck.flagged, fed before tail sampling (every trace, not
        only the kept ones), only with the spans the library judged, into the metrics pipeline."""
        document = _load(path)
        connector = (document.get("connectors") or {}).get("spanmetrics")
        if connector is None:
            assert "tail_sampling" not in (document.get("processors") or {}), "a sampling tier needs it"
            return
        assert {"name": _attributes.FLAGGED} in connector["dimensions"]
        pipelines = _pipelines(document)
        feeding = {name: p for name, p in pipelines.items() if "spanmetrics" in p.get("exporters", [])}
        assert feeding and all(name.split("/")[0] == "traces" for name in feeding)
        for pipeline in feeding.values():
            assert "tail_sampling" not in pipeline.get("processors", [])
            (kept,) = [c for c in pipeline["processors"] if c.startswith("filter")]
            conditions = document["processors"][kept]["traces"]["span"]
            assert conditions == [f'attributes["{_attributes.FLAGGED}"] == nil']
        fed = [p for name, p in pipelines.items() if "spanmetrics" in p.get("receivers", [])]
        assert fed and all("prometheus" in p["exporters"] for p in fed)

    def test_sampling_waits_for_the_processors_deadline(self, path: Path) -> None:
        """decision_wait outlasts the span processor's default max wait: enriched copies arrive in time."""
        sampling = (_load(path).get("processors") or {}).get("tail_sampling")
        if sampling is None:
            return
        wait = re.fullmatch(r"(\d+)(ms|s|m)", sampling["decision_wait"])
        assert wait is not None, sampling["decision_wait"]
        millis = int(wait[1]) * {"ms": 1, "s": 1000, "m": 60_000}[wait[2]]
        assert millis > by_name(PROCESSOR, "max_wait_millis").default


def test_the_front_collector_reaches_the_gateways_over_tls_with_a_bearer_token() -> None:
    """shapecheck-front.yaml exports to the gateways with TLS (not insecure) and a bearer token."""
    document = _load(CONFIG_DIR / "shapecheck-front.yaml")
    for name, exporter in document["exporters"].items():
        otlp = exporter["protocol"]["otlp"]
        assert otlp["tls"].get("insecure") is not True and otlp["tls"].get("ca_file"), name
        assert otlp["auth"]["authenticator"].startswith("bearertokenauth"), name

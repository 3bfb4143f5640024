"""The Collector configurations in collector-config/: pipelines wired to defined components, known names."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from otel_shapecheck import _attributes

CONFIG_DIR = Path(__file__).resolve().parents[2] / "collector-config"
CONFIG_FILES = sorted(CONFIG_DIR.glob("*.yaml")) + sorted(CONFIG_DIR.glob("*.yml"))
CONTRACT_NAMES = {
    value for name, value in vars(_attributes).items() if name.isupper() and isinstance(value, str)
}
SHAPECHECK_NAME = re.compile(r"shapecheck\.[a-z_]+(?:\.[a-z_]+)*")
GEN_AI_NAME = re.compile(r"gen_ai\.evaluation\.[a-z_.]+")


def _load(path: Path) -> dict[str, Any]:
    document = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(document, dict), f"{path.name} is not a mapping"
    return document


def test_there_are_configurations() -> None:
    """The single-tier configuration and the gateway/agent pair exist."""
    assert {path.name for path in CONFIG_FILES} >= {"collector.yaml", "agent.yaml", "gateway.yaml"}


@pytest.mark.parametrize("path", CONFIG_FILES, ids=lambda path: path.name)
class TestConfiguration:
    def test_pipelines_use_only_components_defined_in_the_file(self, path: Path) -> None:
        """Every receiver, processor and exporter a pipeline names is defined in the same file."""
        document = _load(path)
        connectors = set(document.get("connectors") or {})
        defined = {
            "receivers": set(document.get("receivers") or {}) | connectors,
            "processors": set(document.get("processors") or {}),
            "exporters": set(document.get("exporters") or {}) | connectors,
        }
        pipelines = document["service"]["pipelines"]
        assert pipelines, f"{path.name} has no pipelines"
        for pipeline_name, pipeline in pipelines.items():
            assert pipeline_name.split("/")[0] in {"traces", "logs", "metrics"}, pipeline_name
            assert pipeline.get("receivers") and pipeline.get("exporters"), pipeline_name
            for kind, names in defined.items():
                missing = set(pipeline.get(kind) or []) - names
                assert not missing, f"{path.name}: pipeline {pipeline_name} uses undefined {kind} {missing}"

    def test_every_defined_component_is_used(self, path: Path) -> None:
        """No component is defined and left out of every pipeline; connectors are used at both ends."""
        document = _load(path)
        pipelines = document["service"]["pipelines"].values()
        used = {
            kind: {n for p in pipelines for n in p.get(kind) or []}
            for kind in ("receivers", "processors", "exporters")
        }
        for kind in ("receivers", "processors", "exporters"):
            unused = set(document.get(kind) or {}) - used[kind]
            assert not unused, f"{path.name}: {kind} {unused} are defined but unused"
        for connector in document.get("connectors") or {}:
            assert connector in used["exporters"] and connector in used["receivers"], connector

    def test_connector_routes_point_at_pipelines_of_the_file(self, path: Path) -> None:
        """Routing tables and default pipelines name pipelines that exist."""
        document = _load(path)
        pipelines = set(document["service"]["pipelines"])
        for connector in (document.get("connectors") or {}).values():
            routes = list(connector.get("default_pipelines") or [])
            for entry in connector.get("table") or []:
                routes.extend(entry["pipelines"])
            assert set(routes) <= pipelines, routes

    def test_attribute_names_are_the_librarys(self, path: Path) -> None:
        """Every shapecheck.* and gen_ai.evaluation.* name in the file is one of the library's constants."""
        text = path.read_text(encoding="utf-8")
        names = set(SHAPECHECK_NAME.findall(text)) | set(GEN_AI_NAME.findall(text))
        assert not names - CONTRACT_NAMES, f"{path.name} names {names - CONTRACT_NAMES}, not in the library"

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

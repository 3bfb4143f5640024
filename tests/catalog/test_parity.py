"""Parity vectors L1–L3 of the ported reference's tool lint: confusable and watch pairs, bare tools."""

from __future__ import annotations

import pytest
from embedding.embedders import PlantedEmbedder

from otel_shapecheck import lint_catalog
from otel_shapecheck.catalog._rules import CatalogTool

LINT_PLANTED = PlantedEmbedder([("twin a", [1, 0.1, 0]), ("twin b", [1, 0.3, 0])], fallback=[0, 0, 1])
LINT_CATALOG = [
    CatalogTool("twin_a", "Twin a: reads the port counters of one switch, for when a port flaps."),
    CatalogTool("twin_b", "Twin b: reads the port counters of the fabric, for when many ports flap."),
    CatalogTool("unrelated", "Sends a summary email to the on-call engineer after triage is done."),
]


class TestCatalogLintParity:
    def test_l1_confusable_pair_fails_the_gate(self) -> None:
        """L1: the twins' cosine 0.98166 is over a 0.95 threshold: one confusable pair, not ok."""
        report = lint_catalog(LINT_CATALOG, embedder=LINT_PLANTED, threshold=0.95)
        assert [(p.a, p.b) for p in report.confusable] == [("twin_a", "twin_b")]
        assert report.confusable[0].similarity == pytest.approx(0.98166, abs=1e-5)
        assert not report.ok

    def test_l2_watch_pair_is_advisory(self) -> None:
        """L2: at threshold 0.999 with band 0.02 the twins are one watch pair and the gate passes."""
        report = lint_catalog(LINT_CATALOG, embedder=LINT_PLANTED, threshold=0.999, watch_band=0.02)
        assert report.confusable == ()
        assert [(p.a, p.b) for p in report.watch] == [("twin_a", "twin_b")]
        assert report.ok

    def test_l3_bare_tool_without_embedder(self) -> None:
        """L3: a bare tool with no embedder is not analysed and fails on the missing description."""
        report = lint_catalog([CatalogTool("bare")])
        assert not report.analyzed
        assert [(f.rule, f.severity) for f in report.structural] == [
            ("description-missing-or-short", "error")
        ]
        assert not report.ok

    def test_l3_short_description_passes_unless_strict(self) -> None:
        """L3: a 14-character description only warns: ok by default, not ok when warnings fail the gate."""
        tool = CatalogTool("bare", "Reads a value.")
        assert len(tool.description or "") == 14
        assert lint_catalog([tool]).ok
        assert not lint_catalog([tool], fail_on="warn").ok

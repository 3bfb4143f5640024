"""The catalog lint: structural rules, catalog shapes, similarity verdicts and the lint-tools command."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from embedding.embedders import CharCountEmbedder, CountingEmbedder

from otel_shapecheck import HashingEmbedder, ToolChoiceCheck, lint_catalog
from otel_shapecheck.catalog._lint import coerce_catalog, differentiation_hint
from otel_shapecheck.catalog._rules import CatalogTool
from otel_shapecheck.cli._lint import register, run
from otel_shapecheck.embedding._tool_index import confusability_text

GOOD = "Returns the port counters of one switch. Use when a single port flaps; for sweeps use another."


def _rules(tool: CatalogTool) -> list[tuple[str, str, str | None]]:
    return [(f.rule, f.severity, f.param) for f in lint_catalog([tool]).structural]


class TestStructuralRules:
    def test_good_tool_has_no_findings(self) -> None:
        """A long description with a when-cue and documented parameters passes every rule."""
        schema = {
            "properties": {
                "switch": {"type": "string", "description": "The switch name."},
                "window": {"type": "string", "description": "Time window; defaults to 1h."},
            },
            "required": ["switch"],
        }
        assert _rules(CatalogTool("get_counters", GOOD, schema)) == []

    def test_short_description_warns_and_missing_errors(self) -> None:
        """Fewer than 40 characters warns; no description at all is an error."""
        assert ("description-missing-or-short", "warn", None) in _rules(
            CatalogTool("t", "Only for a short time.")
        )
        assert _rules(CatalogTool("t", "  ")) == [("description-missing-or-short", "error", None)]

    def test_says_what_not_when(self) -> None:
        """A description without a whole-word cue gets a warning; 'fortune' does not count as 'for'."""
        what = "Returns the fortune of the day as a long string of several words."
        assert _rules(CatalogTool("t", what)) == [("says-what-not-when", "warn", None)]
        assert _rules(CatalogTool("t", what + " Call FIRST.")) == []

    @pytest.mark.parametrize(
        ("prop", "suggestion"),
        [
            (
                {"type": "string", "description": "avg_iops | peak_iops | mbps"},
                '"enum": ["avg_iops","peak_iops","mbps"]',
            ),
            ({"description": "Colour, one of: red, green, blue"}, '"enum": ["red","green","blue"]'),
            ({"type": "string", "description": "Allowed values: a.b, c-d"}, '"enum": ["a.b","c-d"]'),
            (
                {"type": ["string", "null"], "description": "One of: online, offline, degraded"},
                '"enum": ["online","offline","degraded"]',
            ),
        ],
    )
    def test_enum_in_prose(self, prop: dict[str, str], suggestion: str) -> None:
        """Pipe lists, and comma lists after a values marker, suggest a JSON-Schema enum."""
        tool = CatalogTool("t", GOOD, {"properties": {"p": prop}, "required": ["p"]})
        (finding,) = lint_catalog([tool]).structural
        assert (finding.rule, finding.param, finding.suggestion) == ("enum-in-prose", "p", suggestion)

    @pytest.mark.parametrize(
        "prop",
        [
            {"type": "string", "description": "e.g. 1h, 24h", "enum": None},
            {"type": "string", "description": "a | b", "enum": ["a", "b"]},
            {"type": "integer", "description": "1 | 2"},
            {"type": ["integer", "null"], "description": "1 | 2"},
            {"type": "string", "description": "Examples: 1h, 24h"},
        ],
    )
    def test_enum_in_prose_leaves_others_alone(self, prop: dict[str, object]) -> None:
        """Declared enums, non-string types and free-form examples are not flagged."""
        tool = CatalogTool("t", GOOD, {"properties": {"p": prop}, "required": ["p"]})
        assert lint_catalog([tool]).structural == ()

    def test_optional_param_undocumented(self) -> None:
        """An optional parameter needs a description that says what omitting it means."""
        schema = {
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "string", "description": "The switch."},
                "c": {"type": "string", "description": "The switch; omit for all switches."},
                "d": {"type": "string", "description": "If not given, the last hour."},
            }
        }
        rules = _rules(CatalogTool("t", GOOD, schema))
        assert rules == [
            ("optional-param-undocumented", "warn", "a"),
            ("optional-param-undocumented", "warn", "b"),
        ]

    def test_malformed_schemas_never_raise(self) -> None:
        """Odd schema shapes are read as having no parameters."""
        for schema in ({"properties": []}, {"properties": {"p": "string"}}, {"required": "p"}):
            assert lint_catalog([CatalogTool("t", GOOD, schema)]).structural == ()

    def test_duplicate_names_are_errors_and_the_first_is_kept(self) -> None:
        """A repeated name is a duplicate-name error; similarity sees the first tool only."""
        tools = [
            CatalogTool("t", GOOD),
            CatalogTool("t", "Another description of the same tool, for tests."),
            CatalogTool("u", GOOD),
        ]
        report = lint_catalog(tools, embedder=CharCountEmbedder())
        assert [(f.rule, f.severity) for f in report.structural] == [("duplicate-name", "error")]
        assert report.tool_count == 3 and not report.ok
        assert [(p.a, p.b) for p in report.ranked] == [("t", "u")]


class TestHints:
    def test_near_twin_names(self) -> None:
        """Names that differ by one qualifier name it and ask when to choose each."""
        hint = differentiation_hint(CatalogTool("get_fcns_database"), CatalogTool("influx_get_fcns_database"))
        assert hint.startswith("names differ only by 'influx'") and "WHEN" in hint

    def test_distinct_description_terms(self) -> None:
        """Otherwise the hint lists up to three description terms unique to each side."""
        a = CatalogTool("read_port", "Reads port counters from the switch quickly")
        b = CatalogTool("scan_fabric", "Reads port counters across fabric members")
        hint = differentiation_hint(a, b)
        assert "read_port: [switch, quickly]" in hint and "scan_fabric: [across, fabric, members]" in hint

    def test_near_duplicate_descriptions(self) -> None:
        """With no unique terms on either side the descriptions are called near-duplicates."""
        hint = differentiation_hint(
            CatalogTool("alpha", "Reads counters"), CatalogTool("omega", "reads COUNTERS")
        )
        assert hint.startswith("the descriptions are near-duplicates")


class TestCatalogShapes:
    def test_four_shapes(self) -> None:
        """Plain, MCP, OpenAI and Anthropic catalogs all read to the same tools."""
        schema = {"type": "object", "properties": {"q": {"type": "string"}}}
        plain = [{"name": "search", "description": "Search.", "inputSchema": schema}]
        mcp = {"tools": plain}
        openai = [
            {
                "type": "function",
                "function": {"name": "search", "description": "Search.", "parameters": schema},
            }
        ]
        anthropic = [{"name": "search", "description": "Search.", "input_schema": schema}]
        expected = [CatalogTool("search", "Search.", schema)]
        for document in (plain, mcp, openai, anthropic):
            assert coerce_catalog(document) == expected

    @pytest.mark.parametrize(
        ("document", "message"),
        [
            ({"functions": []}, "expected a JSON array of tools"),
            ("tools", "expected a JSON array of tools"),
            ([1], r"tools\[0\] is not an object"),
            ([{"name": "a"}, {"description": "x"}], r"tools\[1\] has no string 'name'"),
            ([{"type": "function", "function": {"name": ""}}], r"tools\[0\] has no string 'name'"),
        ],
    )
    def test_bad_shapes_raise_value_error(self, document: object, message: str) -> None:
        """A document of no known shape raises ValueError saying what is wrong."""
        with pytest.raises(ValueError, match=message):
            coerce_catalog(document)


def _catalog(n: int) -> list[CatalogTool]:
    verbs = ["get", "list", "create", "delete", "update", "search", "export", "sync"]
    nouns = ["user", "invoice", "port", "switch", "ticket", "report", "alert", "volume", "snapshot", "job"]
    return [
        CatalogTool(
            f"{verbs[i % 8]}_{nouns[(i // 8) % 10]}_{i}",
            f"{verbs[i % 8].title()} the {nouns[(i // 8) % 10]} record number {i} for when it is needed.",
        )
        for i in range(n)
    ]


class TestSimilarity:
    def test_mock_calibration_applies_by_default(self) -> None:
        """With the char-count mock the defaults are 0.94 / 0.02; with other embedders 0.85 / 0.05."""
        tools = _catalog(3)
        mock = lint_catalog(tools, embedder=CharCountEmbedder())
        assert (mock.threshold, mock.watch_band) == (0.94, 0.02)
        real = lint_catalog(tools, embedder=HashingEmbedder())
        assert (real.threshold, real.watch_band) == (0.85, 0.05)

    def test_report_only_similarity_does_not_gate(self) -> None:
        """Confusable pairs are listed but do not fail the gate when similarity is not gated."""
        tools = [CatalogTool("twin_a", GOOD), CatalogTool("twin_b", GOOD)]
        report = lint_catalog(tools, embedder=HashingEmbedder(), gate_on_similarity=False)
        assert len(report.confusable) == 1 and report.ok
        assert not lint_catalog(tools, embedder=HashingEmbedder()).ok

    def test_names_that_read_the_same_are_identical_twins(self) -> None:
        """``get_user`` and ``get-user`` with one description embed the same text: similarity exactly 1."""
        tools = [CatalogTool("get_user", GOOD), CatalogTool("get-user", GOOD)]
        report = lint_catalog(tools, embedder=HashingEmbedder())
        assert [(p.a, p.b, p.similarity) for p in report.confusable] == [("get_user", "get-user", 1.0)]
        assert report.confusable[0].hint.startswith("names differ only by nothing")

    def test_reuses_the_check_index(self) -> None:
        """Linting through a check's tool index embeds tool texts the check already has only once."""
        counting = CountingEmbedder(HashingEmbedder())
        check = ToolChoiceCheck(counting)
        tools = _catalog(20)
        lint_catalog(tools, index=check.tool_index)
        lint_catalog(tools, index=check.tool_index)
        assert counting.calls == 1 and len(counting.texts) == 20

    def test_ranked_pairs_are_the_closest_in_order(self) -> None:
        """``ranked`` holds the top pairs by similarity, highest first, matching brute force."""
        tools = _catalog(60)
        report = lint_catalog(tools, embedder=HashingEmbedder(), top_pairs=5)
        sims = [p.similarity for p in report.ranked]
        assert len(sims) == 5 and sims == sorted(sims, reverse=True)
        texts = [confusability_text(t.name, t.description) for t in tools]
        matrix = HashingEmbedder().embed(texts)
        full = sorted(
            (float(matrix[i] @ matrix[j]) for i in range(60) for j in range(i + 1, 60)), reverse=True
        )
        assert sims == pytest.approx(full[:5], abs=1e-5)

    def test_large_catalog_verdicts_equal_brute_force(self) -> None:
        """On 1 500 tools the k-NN lint finds exactly the confusable and watch pairs of all-pairs cosine."""
        tools = _catalog(1500)
        report = lint_catalog(tools, embedder=HashingEmbedder(), threshold=0.8123, watch_band=0.0456)
        matrix = HashingEmbedder().embed([confusability_text(t.name, t.description) for t in tools])
        sims = matrix @ matrix.T
        rows, cols = np.triu_indices(len(tools), k=1)
        pair_sims = sims[rows, cols]
        names = [t.name for t in tools]

        def expected(low: float, high: float) -> set[tuple[str, str]]:
            hits = (pair_sims >= low) & (pair_sims < high)
            return {(names[i], names[j]) for i, j in zip(rows[hits], cols[hits], strict=True)}

        for edge in (0.8123, 0.7667):
            assert not (np.abs(pair_sims - edge) < 1e-5).any(), (
                "a pair on an edge: float32 could round either way"
            )
        assert {(p.a, p.b) for p in report.confusable} == expected(0.8123, 2.0)
        assert {(p.a, p.b) for p in report.watch} == expected(0.7667, 0.8123)
        assert report.confusable and report.watch


def _args(path: Path, *extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["lint-tools", str(path), "--embedder", "hashing", *extra])


@pytest.fixture(name="catalog_file")
def _catalog_file(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    tools = [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": GOOD.replace("port", "city")},
        },
        {"type": "function", "function": {"name": "send_email", "description": "Sends an email to someone."}},
    ]
    path.write_text(json.dumps(tools), encoding="utf-8")
    return path


class TestLintCommand:
    def test_pass_prints_the_report(self, catalog_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Warnings alone pass: exit 0, and the text report lists findings and PASS."""
        assert run(_args(catalog_file)) == 0
        out = capsys.readouterr().out
        assert "says-what-not-when" in out and "report-only" in out and out.rstrip().endswith("PASS")

    def test_strict_fails_on_warnings(self, catalog_file: Path) -> None:
        """--strict makes warnings fail the gate: exit 1."""
        assert run(_args(catalog_file, "--strict")) == 1

    def test_threshold_gates_on_similarity(
        self, catalog_file: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--threshold makes confusable pairs fail the gate; --json prints the report as JSON."""
        assert run(_args(catalog_file, "--threshold", "-1", "--json")) == 1
        report = json.loads(capsys.readouterr().out)
        assert report["similarity_gated"] is True
        assert [(p["a"], p["b"]) for p in report["confusable"]] == [("get_weather", "send_email")]

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            (None, "cannot read the file"),
            ("{not json", "not valid JSON"),
            ('{"functions": []}', "expected a JSON array of tools"),
            ("[]", None),
        ],
    )
    def test_usage_errors_exit_2_naming_the_file(
        self, tmp_path: Path, content: str | None, message: str | None, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Unreadable files, bad JSON and unknown shapes exit 2 with a message naming the file."""
        path = tmp_path / "catalog.json"
        if content is not None:
            path.write_text(content, encoding="utf-8")
        code = run(_args(path))
        if message is None:
            assert code == 0
            return
        assert code == 2
        err = capsys.readouterr().err
        assert str(path) in err and message in err

    def test_bad_threshold_exits_2(self, catalog_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A threshold that is not a cosine is a usage error."""
        assert run(_args(catalog_file, "--threshold", "nan")) == 2
        assert run(_args(catalog_file, "--threshold", "3")) == 2
        assert "threshold" in capsys.readouterr().err

    def test_console_script(self, catalog_file: Path, tmp_path: Path) -> None:
        """The installed ``otel-shapecheck lint-tools`` gives the same exit codes in a subprocess."""
        script = Path(sys.executable).parent / "otel-shapecheck"

        def exit_code(*args: str) -> int:
            done = subprocess.run(
                [str(script), "lint-tools", *args], capture_output=True, text=True, timeout=120
            )
            return done.returncode

        assert exit_code(str(catalog_file), "--embedder", "hashing") == 0
        assert exit_code(str(catalog_file), "--embedder", "hashing", "--strict") == 1
        assert exit_code(str(tmp_path / "missing.json")) == 2
        assert exit_code(str(catalog_file), "--embedder", "word2vec") == 2

    def test_console_script_with_minilm_gates_the_twins(self, tmp_path: Path) -> None:
        """With the default MiniLM embedder and a threshold, near-twin tools fail the gate, listed in JSON."""
        path = tmp_path / "mcp.json"
        tools = [
            {
                "name": "get_fcns_database",
                "description": "Get FC name server database registrations from the fabric.",
            },
            {
                "name": "influx_get_fcns_database",
                "description": "Get FC name server database registrations from influx.",
            },
            {
                "name": "send_email",
                "description": "Send an email to a recipient, for notifying the on-call engineer.",
            },
        ]
        path.write_text(json.dumps({"tools": tools}), encoding="utf-8")
        script = Path(sys.executable).parent / "otel-shapecheck"
        command = [str(script), "lint-tools", str(path), "--threshold", "0.5", "--json"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 1, done.stderr
        report = json.loads(done.stdout)
        assert report["embedder"] == "all-MiniLM-L6-v2-onnx-int8"
        assert [(p["a"], p["b"]) for p in report["confusable"]] == [
            ("get_fcns_database", "influx_get_fcns_database")
        ]
        assert report["confusable"][0]["hint"].startswith("names differ only by 'influx'")

"""The installed ``otel-shapecheck`` script, run as a subprocess: demo, check, usage and input errors."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from otlp_receiver import OTLPReceiver, unused_endpoint

from cli.console_script import TIMEOUT_S, run_cli
from otel_shapecheck import __version__
from otel_shapecheck.cli._main import main


@dataclass(frozen=True)
class Span:
    """A span from an OTLP/JSON file, flattened for assertions."""

    trace_id: str
    span_id: str
    name: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    start_time: int = 0


def _value(value: Mapping[str, Any]) -> Any:
    if "arrayValue" in value:
        return [_value(item) for item in value["arrayValue"].get("values", [])]
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    return None


def _attributes(key_values: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    return {kv["key"]: _value(kv.get("value", {})) for kv in key_values}


def read_spans(path: Path) -> list[Span]:
    """Every span of an OTLP/JSON Lines file, read with plain json (independently of our loader)."""
    spans = []
    for line in path.read_text().splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    spans.append(
                        Span(
                            trace_id=span["traceId"],
                            span_id=span["spanId"],
                            name=span["name"],
                            attributes=_attributes(span.get("attributes", [])),
                            events=[
                                (event["name"], _attributes(event.get("attributes", [])))
                                for event in span.get("events", [])
                            ],
                            start_time=int(span["startTimeUnixNano"]),
                        )
                    )
    return spans


def scenario_spans(spans: Sequence[Span], agent: str) -> list[Span]:
    """The spans of the trace whose root is ``invoke_agent <agent>``."""
    root = next(span for span in spans if span.name == f"invoke_agent {agent}")
    return [span for span in spans if span.trace_id == root.trace_id]


def chat_spans(spans: Sequence[Span]) -> list[Span]:
    """The LLM-call spans, in the order the agent made the calls."""
    chats = [span for span in spans if span.attributes.get("gen_ai.operation.name") == "chat"]
    return sorted(chats, key=lambda span: span.start_time)


@dataclass(frozen=True)
class DemoRun:
    """One demo run with the hashing embedder: its output directory and what it printed."""

    out: Path
    stdout: str


@pytest.fixture(name="demo_run", scope="module")
def _demo_run(tmp_path_factory: pytest.TempPathFactory) -> DemoRun:
    out = tmp_path_factory.mktemp("demo")
    completed = run_cli("demo", "--embedder", "hashing", "--out", str(out))
    assert completed.returncode == 0, completed.stderr
    return DemoRun(out, completed.stdout)


@pytest.fixture(name="demo_dir", scope="module")
def _demo_dir(demo_run: DemoRun) -> Path:
    """The output directory of the demo run."""
    return demo_run.out


@pytest.fixture(name="demo_spans", scope="module")
def _demo_spans(demo_dir: Path) -> list[Span]:
    return read_spans(demo_dir / "traces.jsonl")


def assert_scenario_verdicts(spans: Sequence[Span]) -> None:
    """Each demo scenario's spans carry the verdict the scenario is built to show."""
    clear_choice, grounded_answer = chat_spans(scenario_spans(spans, "storage-ops"))
    assert clear_choice.attributes["shapecheck.tool_choice.chosen"] == ["get_volume_usage"]
    assert clear_choice.attributes["shapecheck.tool_choice.narrow"] is False
    assert clear_choice.attributes["shapecheck.tool_choice.proxy_disagreement"] is False
    assert clear_choice.attributes["shapecheck.tool_choice.margin"] >= 0.05
    assert grounded_answer.attributes["shapecheck.figures.checked"] == 3
    assert grounded_answer.attributes.get("shapecheck.figures.unsupported", []) == []
    assert "figures.unsupported" not in grounded_answer.attributes["shapecheck.flags"]

    narrow_choice, _ = chat_spans(scenario_spans(spans, "order-support"))
    assert narrow_choice.attributes["shapecheck.tool_choice.chosen"] == ["lookup_order"]
    assert narrow_choice.attributes["shapecheck.tool_choice.narrow"] is True
    assert abs(narrow_choice.attributes["shapecheck.tool_choice.margin"]) < 0.05
    assert "tool_choice.narrow" in narrow_choice.attributes["shapecheck.flags"]
    assert narrow_choice.attributes["shapecheck.flagged"] is True

    _, capacity_answer = chat_spans(scenario_spans(spans, "capacity-planner"))
    assert capacity_answer.attributes["shapecheck.figures.unsupported"] == ["2400 TB"]
    assert capacity_answer.attributes["shapecheck.figures.computed"] == 1
    assert any("column-sum" in text for text in capacity_answer.attributes["shapecheck.figures.derivations"])
    assert capacity_answer.attributes["shapecheck.flags"] == ["figures.unsupported"]

    triage = scenario_spans(spans, "incident-triage")
    analyst = next(span for span in triage if span.name == "analyst incident-triage")
    assert analyst.attributes["shapecheck.conformance.attempts"] == 2
    assert analyst.attributes["shapecheck.conformance.collapsed"] is True
    assert analyst.attributes["shapecheck.conformance.recovered"] is True
    assert analyst.attributes["shapecheck.flags"] == ["conformance.collapsed"]


def is_evaluated(span: Span) -> bool:
    """Whether the span got verdicts (a run's agent span carries shapecheck.flagged for its run only)."""
    return "shapecheck.flagged" in span.attributes and "shapecheck.run.evaluated" not in span.attributes


class TestDemo:
    def test_demo_spans_carry_each_scenarios_verdict(self, demo_spans: list[Span]) -> None:
        """Clear choice, narrow choice, derived plus invented figure, collapsed then recovered analyst."""
        assert_scenario_verdicts(demo_spans)

    def test_each_scenarios_agent_span_carries_its_run(self, demo_spans: list[Span]) -> None:
        """Every invoke_agent span sums up its scenario: what was evaluated under it and what flagged."""
        runs = {
            span.name: span.attributes for span in demo_spans if "shapecheck.run.evaluated" in span.attributes
        }
        assert set(runs) == {
            "invoke_agent storage-ops",
            "invoke_agent order-support",
            "invoke_agent capacity-planner",
            "invoke_agent incident-triage",
        }
        clear = runs["invoke_agent storage-ops"]
        assert (clear["shapecheck.run.evaluated"], clear["shapecheck.run.flagged"]) == (2, 0)
        assert clear["shapecheck.flagged"] is False and clear["shapecheck.run.scored"] == 1
        narrow = runs["invoke_agent order-support"]
        assert (narrow["shapecheck.run.narrow"], narrow["shapecheck.run.flagged"]) == (1, 1)
        capacity = runs["invoke_agent capacity-planner"]
        assert capacity["shapecheck.run.figures_unsupported"] == 1 and capacity["shapecheck.flagged"] is True
        triage = runs["invoke_agent incident-triage"]
        assert (triage["shapecheck.run.analysts"], triage["shapecheck.run.collapsed"]) == (1, 1)
        assert triage["shapecheck.run.recovered"] == 1
        assert not any(run["shapecheck.run.incomplete"] for run in runs.values())

    def test_every_verdict_is_also_a_span_event(self, demo_spans: list[Span]) -> None:
        """Each evaluated span carries one gen_ai.evaluation.result event per check that judged it."""
        evaluated = [span for span in demo_spans if is_evaluated(span)]
        assert evaluated
        for span in evaluated:
            names = [
                attrs["gen_ai.evaluation.name"]
                for name, attrs in span.events
                if name == "gen_ai.evaluation.result"
            ]
            assert names, span.name
            assert len(names) == len(set(names))

    def test_flagged_events_file_holds_the_flagged_verdicts(
        self, demo_dir: Path, demo_spans: list[Span]
    ) -> None:
        """events.jsonl holds log records for flagged verdicts, parented to the evaluated spans."""
        records = [
            record
            for line in (demo_dir / "events.jsonl").read_text().splitlines()
            for resource_logs in json.loads(line)["resourceLogs"]
            for scope_logs in resource_logs["scopeLogs"]
            for record in scope_logs["logRecords"]
        ]
        flagged_span_ids = {
            span.span_id
            for span in demo_spans
            if is_evaluated(span) and span.attributes["shapecheck.flagged"]
        }
        assert {record["spanId"] for record in records} == flagged_span_ids
        assert {record["eventName"] for record in records} == {"gen_ai.evaluation.result"}
        names = {_attributes(record["attributes"])["gen_ai.evaluation.name"] for record in records}
        assert names == {"shapecheck.tool_choice", "shapecheck.figures", "shapecheck.conformance"}

    def test_demo_prints_the_verdict_table(self, demo_run: DemoRun) -> None:
        """The terminal output names the checks, the verdicts, the scenarios and where the files went."""
        for text in ("tool_choice", "figures", "conformance", "narrow", "recovered", "unsupported: 2400 TB"):
            assert text in demo_run.stdout
        assert "invoke_agent order-support" in demo_run.stdout
        assert str(demo_run.out / "traces.jsonl") in demo_run.stdout

    def test_demo_with_the_default_minilm_embedder(self, tmp_path: Path) -> None:
        """The default embedder gives the same scenario verdicts."""
        completed = run_cli("demo", "--out", str(tmp_path))
        assert completed.returncode == 0, completed.stderr
        assert_scenario_verdicts(read_spans(tmp_path / "traces.jsonl"))

    @pytest.mark.parametrize("transport", ["grpc", "http"])
    def test_demo_exports_to_an_otlp_endpoint(self, tmp_path: Path, transport: str) -> None:
        """With --otlp-endpoint, spans and flagged events reach a real OTLP receiver; no files are written."""
        with OTLPReceiver() as receiver:
            if transport == "grpc":
                flags = ["--otlp-endpoint", f"http://{receiver.grpc_endpoint}"]
            else:
                flags = ["--otlp-endpoint", receiver.http_endpoint, "--protocol", "http/protobuf"]
            completed = run_cli("demo", "--embedder", "hashing", *flags, cwd=tmp_path)
            assert completed.returncode == 0, completed.stderr
            assert receiver.wait_for(lambda r: len(r.log_records) >= 3 and len(r.spans) >= 10)
            assert {span.transport for span in receiver.spans} == {transport}
            flagged = [
                span
                for span in receiver.spans
                if span.attributes.get("shapecheck.flagged") is True
                and "shapecheck.run.evaluated" not in span.attributes
            ]
            assert len(flagged) == 3
            assert {record.span_id for record in receiver.log_records} == {span.span_id for span in flagged}
        assert not (tmp_path / "shapecheck-demo").exists()

    def test_endpoint_that_is_down_exits_1_and_says_so(self, tmp_path: Path) -> None:
        """With nothing listening at the endpoint the demo prints its verdicts, then says so and exits 1."""
        _, http_endpoint = unused_endpoint()
        completed = run_cli(
            "demo",
            "--embedder",
            "hashing",
            "--otlp-endpoint",
            http_endpoint,
            "--protocol",
            "http/protobuf",
            cwd=tmp_path,
        )
        assert completed.returncode == 1
        assert "18 spans, 7 evaluated, 3 flagged" in completed.stdout
        assert (
            f"Export to OTLP/HTTP {http_endpoint} failed: 18 spans and 3 evaluation events"
            in completed.stdout
        )

    def test_out_that_is_a_file_is_a_usage_error(self, tmp_path: Path) -> None:
        """--out naming an existing file (not a directory) exits 2 naming it, before the agent runs."""
        occupied = tmp_path / "occupied"
        occupied.write_text("not a directory")
        completed = run_cli("demo", "--embedder", "hashing", "--out", str(occupied))
        assert completed.returncode == 2
        assert f"{occupied}: cannot write the demo output" in completed.stderr
        assert completed.stdout == ""

    def test_bad_endpoint_is_a_usage_error(self) -> None:
        """An endpoint that is not a URL or host:port exits 2 naming it."""
        completed = run_cli("demo", "--otlp-endpoint", "ftp:/nowhere")
        assert completed.returncode == 2
        assert "ftp:/nowhere" in completed.stderr


def check_json(*args: str, stdin: bytes | None = None) -> dict[str, Any]:
    completed = run_cli("check", "--json", "--embedder", "hashing", *args, stdin=stdin)
    assert completed.returncode == 0, completed.stderr
    report: dict[str, Any] = json.loads(completed.stdout)
    return report


def report_as_spans(report: Mapping[str, Any], all_spans: Sequence[Span]) -> list[Span]:
    """The demo's spans with the attributes the check report gives them (non-verdict attributes kept)."""
    by_id = {entry["span_id"]: entry for entry in report["spans"]}
    merged = []
    for span in all_spans:
        entry = by_id.get(span.span_id)
        attributes = {k: v for k, v in span.attributes.items() if not k.startswith("shapecheck.")}
        if entry is not None:
            attributes.update(entry["attributes"])
        merged.append(Span(span.trace_id, span.span_id, span.name, attributes, [], span.start_time))
    return merged


class TestCheck:
    def test_check_json_reproduces_the_demo_verdicts(self, demo_dir: Path, demo_spans: list[Span]) -> None:
        """Checking the demo's own export offline gives every span the verdicts the live run gave."""
        report = check_json(str(demo_dir / "traces.jsonl"))
        live = {
            span.span_id: {k: v for k, v in span.attributes.items() if k.startswith("shapecheck.")}
            for span in demo_spans
            if is_evaluated(span)
        }
        offline = {entry["span_id"]: entry["attributes"] for entry in report["spans"]}
        assert offline == live
        live_runs = {
            span.span_id: {
                key.removeprefix("shapecheck.run."): value
                for key, value in span.attributes.items()
                if key.startswith("shapecheck.run.")
            }
            for span in demo_spans
            if "shapecheck.run.evaluated" in span.attributes
        }
        assert {entry["span_id"]: entry["summary"] for entry in report["runs"]} == live_runs
        assert_scenario_verdicts(report_as_spans(report, demo_spans))

    def test_json_report_shape(self, demo_dir: Path, demo_spans: list[Span]) -> None:
        """The document has exactly the documented keys, lowercase hex ids and consistent counts."""
        report = check_json(str(demo_dir / "traces.jsonl"))
        assert set(report) == {"version", "spans", "runs", "summary"} and report["version"] == 1
        for run in report["runs"]:
            assert set(run) == {"trace_id", "span_id", "name", "flagged", "summary"}
            assert run["summary"]["incomplete"] is False
        for entry in report["spans"]:
            assert set(entry) == {"trace_id", "span_id", "name", "attributes", "events"}
            assert len(entry["trace_id"]) == 32 and entry["trace_id"] == entry["trace_id"].lower()
            assert len(entry["span_id"]) == 16 and entry["span_id"] == entry["span_id"].lower()
            assert all(key.startswith("shapecheck.") for key in entry["attributes"])
            assert all(set(event) == {"name", "attributes"} for event in entry["events"])
            evaluations = [event["attributes"]["gen_ai.evaluation.name"] for event in entry["events"]]
            assert evaluations and len(evaluations) == len(set(evaluations)), (
                "one event per check, none doubled"
            )
        summary = report["summary"]
        assert summary["spans"] == len(demo_spans)
        assert summary["evaluated"] == len(report["spans"])
        assert summary["flagged"] == 3
        assert set(summary["tool_choice"]) == {
            "llm_calls_with_tools",
            "choices",
            "scored",
            "flagged",
            "narrow",
            "proxy_disagreement",
            "skipped",
        }
        assert summary["tool_choice"]["choices"] == 3
        assert summary["tool_choice"]["narrow"] >= 1
        assert summary["conformance"] == {"analysts": 1, "collapsed": 1, "recovered": 1}
        assert summary["figures"]["unsupported"] == 1 and summary["figures"]["computed"] == 1

    def test_stdin_and_tempo_and_jaeger_shapes_give_the_same_report(self, demo_dir: Path) -> None:
        """The same traces read from stdin, as a Tempo response and as a Jaeger response agree."""
        lines = (demo_dir / "traces.jsonl").read_text().splitlines()
        resource_spans = [rs for line in lines for rs in json.loads(line)["resourceSpans"]]
        tempo = {"batches": _base64_ids(resource_spans)}
        jaeger = {"result": {"resourceSpans": resource_spans}}
        expected = check_json(str(demo_dir / "traces.jsonl"))
        expected_ids = sorted(entry["span_id"] for entry in expected["spans"])
        for document in (tempo, jaeger):
            report = check_json("-", stdin=json.dumps(document).encode())
            assert sorted(entry["span_id"] for entry in report["spans"]) == expected_ids
            assert report["summary"] == expected["summary"]

    def test_a_span_given_twice_is_checked_once(self, demo_dir: Path, demo_spans: list[Span]) -> None:
        """Overlapping exports (here the same file twice) give each span one verdict, counted once."""
        path = str(demo_dir / "traces.jsonl")
        report = check_json(path, path)
        assert report["summary"]["spans"] == len(demo_spans)
        assert report["summary"]["flagged"] == 3
        assert len({entry["span_id"] for entry in report["spans"]}) == len(report["spans"])

    def test_out_writes_enriched_traces_that_read_back(self, demo_dir: Path, tmp_path: Path) -> None:
        """--out writes every span as OTLP/JSON with the verdicts, readable by check again."""
        out = tmp_path / "enriched.jsonl"
        completed = run_cli(
            "check", "--embedder", "hashing", "--out", str(out), str(demo_dir / "traces.jsonl")
        )
        assert completed.returncode == 0, completed.stderr
        assert f"Enriched traces (18 spans): {out}" in completed.stdout
        assert_scenario_verdicts(read_spans(out))
        assert check_json(str(out))["summary"] == check_json(str(demo_dir / "traces.jsonl"))["summary"]

    def test_recheck_keeps_the_exports_dropped_counts(self, demo_dir: Path, tmp_path: Path) -> None:
        """Re-checking an enriched export writes every span's dropped attribute, event and link counts
        as the export recorded them, on evaluated spans, run spans and untouched spans alike."""
        dropped = {"droppedAttributesCount": 3, "droppedEventsCount": 2, "droppedLinksCount": 1}
        given = tmp_path / "dropped.jsonl"
        given.write_text(_with_fields(demo_dir / "traces.jsonl", dropped))
        out = tmp_path / "rechecked.jsonl"
        completed = run_cli("check", "--embedder", "hashing", "--out", str(out), str(given))
        assert completed.returncode == 0, completed.stderr
        written = [
            span
            for line in out.read_text().splitlines()
            for resource_spans in json.loads(line)["resourceSpans"]
            for scope_spans in resource_spans["scopeSpans"]
            for span in scope_spans["spans"]
        ]
        names = {span["name"] for span in written}
        assert {"invoke_agent storage-ops", "analyst incident-triage"} <= names
        assert len(written) == len(read_spans(demo_dir / "traces.jsonl"))
        assert [{key: span.get(key) for key in dropped} for span in written] == [dropped] * len(written)
        assert_scenario_verdicts(read_spans(out))

    def test_rich_summary_is_the_default_output(self, demo_dir: Path) -> None:
        """Without --json the table lists span, check, verdict, score and why."""
        completed = run_cli("check", "--embedder", "hashing", str(demo_dir / "traces.jsonl"))
        assert completed.returncode == 0, completed.stderr
        for text in ("span", "check", "verdict", "score", "why", "narrow", "unsupported: 2400 TB"):
            assert text in completed.stdout
        assert "shapecheck runs" in completed.stdout and "invoke_agent incident-triage" in completed.stdout
        assert "runs: 4 agent runs, 3 flagged" in completed.stdout

    def test_fail_on_flagged_exits_1_when_flagged(self, demo_dir: Path) -> None:
        """--fail-on flagged turns a flagged span into exit code 1; never (the default) keeps 0."""
        path = str(demo_dir / "traces.jsonl")
        assert run_cli("check", "--embedder", "hashing", "--fail-on", "flagged", path).returncode == 1
        assert run_cli("check", "--embedder", "hashing", "--fail-on", "never", path).returncode == 0

    def test_fail_on_flagged_exits_0_when_clean(self, demo_dir: Path, tmp_path: Path) -> None:
        """A trace with nothing flagged passes --fail-on flagged."""
        clean = tmp_path / "clean.jsonl"
        root = next(s for s in read_spans(demo_dir / "traces.jsonl") if s.name == "invoke_agent storage-ops")
        clean.write_text(_only_trace(demo_dir / "traces.jsonl", root.trace_id))
        completed = run_cli("check", "--embedder", "hashing", "--fail-on", "flagged", "--json", str(clean))
        assert completed.returncode == 0, completed.stderr
        report = json.loads(completed.stdout)
        assert report["summary"]["flagged"] == 0 and report["summary"]["evaluated"] >= 2


class TestProgress:
    def test_large_input_shows_a_progress_bar_on_stderr(self, demo_dir: Path, tmp_path: Path) -> None:
        """Over a few thousand spans progress is drawn on stderr; stdout keeps only the JSON."""
        large = tmp_path / "large.jsonl"
        large.write_text(_copies(demo_dir / "traces.jsonl", 140))
        completed = run_cli("check", "--json", "--embedder", "hashing", str(large), env={"FORCE_COLOR": "1"})
        assert completed.returncode == 0, completed.stderr
        assert "checking spans" in completed.stderr
        assert f"reading {large}" in completed.stderr, "a file over a few MB gets a spinner while it is read"
        report = json.loads(completed.stdout)
        assert report["summary"]["spans"] == 140 * len(read_spans(demo_dir / "traces.jsonl"))
        assert report["summary"]["conformance"]["analysts"] == 140

    def test_small_input_draws_no_progress_bar(self, demo_dir: Path) -> None:
        """A small input gets no progress bar even on a terminal."""
        completed = run_cli(
            "check",
            "--json",
            "--embedder",
            "hashing",
            str(demo_dir / "traces.jsonl"),
            env={"FORCE_COLOR": "1"},
        )
        assert completed.returncode == 0
        assert completed.stderr == ""


def _copies(path: Path, copies: int) -> str:
    """``copies`` copies of an OTLP/JSON Lines file, each with its own trace and span ids."""
    lines = []
    for copy in range(copies):
        for line in path.read_text().splitlines():
            lines.append(_shift_ids(json.loads(line), copy))
    return "\n".join(json.dumps(document) for document in lines) + "\n"


def _shift_ids(node: Any, copy: int) -> Any:
    if isinstance(node, dict):
        return {
            key: f"{(int(value, 16) + copy) % (1 << (4 * len(value))):0{len(value)}x}"
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str) and value
            else _shift_ids(value, copy)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_shift_ids(item, copy) for item in node]
    return node


def _with_fields(path: Path, fields: Mapping[str, Any]) -> str:
    """An OTLP/JSON Lines file with ``fields`` set on every span."""
    lines = []
    for line in path.read_text().splitlines():
        document = json.loads(line)
        for resource_spans in document["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                for span in scope_spans["spans"]:
                    span.update(fields)
        lines.append(json.dumps(document))
    return "\n".join(lines) + "\n"


def _only_trace(path: Path, trace_id: str) -> str:
    lines = []
    for line in path.read_text().splitlines():
        document = json.loads(line)
        for resource_spans in document["resourceSpans"]:
            for scope_spans in resource_spans["scopeSpans"]:
                scope_spans["spans"] = [s for s in scope_spans["spans"] if s["traceId"] == trace_id]
        lines.append(json.dumps(document))
    return "\n".join(lines) + "\n"


def _base64_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str) and value
            else _base64_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_base64_ids(item) for item in node]
    return node


@pytest.fixture(name="bad_inputs")
def _bad_inputs(tmp_path: Path) -> Iterator[dict[str, Path]]:
    inputs = {
        "empty": b"",
        "binary": bytes(range(256)) * 4,
        "truncated": b'{"resourceSpans": [{"resource": {}, "scopeSpans": [{"spans": [{"traceId": "0af7',
        "malformed": b'{"resourceSpans": [}',
        "wrong-shape": b'{"data": [{"traceID": "0af7651916cd43dd8448eb211c80319c", "spans": []}]}',
    }
    paths = {}
    for name, data in inputs.items():
        path = tmp_path / f"{name}.json"
        path.write_bytes(data)
        paths[name] = path
    yield paths


class TestErrors:
    @pytest.mark.parametrize(
        ("kind", "problem"),
        [
            ("empty", "empty input"),
            ("binary", "binary content"),
            ("truncated", "truncated JSON"),
            ("malformed", "malformed JSON"),
            ("wrong-shape", "is not exported traces"),
        ],
    )
    def test_unreadable_input_exits_2_naming_the_file(
        self, bad_inputs: dict[str, Path], kind: str, problem: str
    ) -> None:
        """Empty, binary, truncated, malformed and foreign JSON exit 2 with the file and the problem."""
        completed = run_cli("check", "--embedder", "hashing", str(bad_inputs[kind]))
        assert completed.returncode == 2
        assert str(bad_inputs[kind]) in completed.stderr
        assert problem in completed.stderr
        assert "Traceback" not in completed.stderr
        assert completed.stdout == ""

    def test_one_bad_file_among_good_ones_fails_the_run(
        self, bad_inputs: dict[str, Path], demo_dir: Path
    ) -> None:
        """Inputs are all read before any check runs; the bad one is named."""
        completed = run_cli("check", "--json", str(demo_dir / "traces.jsonl"), str(bad_inputs["truncated"]))
        assert completed.returncode == 2
        assert "truncated.json" in completed.stderr
        assert completed.stdout == ""

    def test_out_in_a_missing_directory_fails_before_checking(self, demo_dir: Path, tmp_path: Path) -> None:
        """--out that cannot be a file is a usage error found before any input is read."""
        completed = run_cli("check", "--out", str(tmp_path / "no" / "such" / "dir.jsonl"), str(demo_dir))
        assert completed.returncode == 2
        assert "not a file in an existing directory" in completed.stderr

    def test_missing_file_and_directory(self, tmp_path: Path) -> None:
        """A missing path and a directory are unreadable input, exit 2."""
        missing = run_cli("check", str(tmp_path / "missing.json"))
        directory = run_cli("check", str(tmp_path))
        assert (missing.returncode, directory.returncode) == (2, 2)
        assert "missing.json" in missing.stderr and "is a directory" in directory.stderr

    def test_empty_stdin(self) -> None:
        """'-' with nothing on stdin is empty input, named as <stdin>."""
        completed = run_cli("check", "-", stdin=b"")
        assert completed.returncode == 2
        assert "<stdin>: empty input" in completed.stderr

    @pytest.mark.parametrize(
        "args",
        [
            (),
            ("check",),
            ("check", "--embedder", "word2vec", "x.json"),
            ("check", "--fail-on", "sometimes", "x.json"),
            ("frobnicate",),
        ],
    )
    def test_usage_errors_exit_2(self, args: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
        """Missing or invalid arguments and unknown commands exit 2 with argparse's usage message."""
        assert main(list(args)) == 2
        assert "usage: otel-shapecheck" in capsys.readouterr().err

    def test_usage_error_from_the_console_script(self) -> None:
        """The console script itself exits 2 on a usage error."""
        completed = run_cli("check", "--fail-on", "sometimes", "x.json")
        assert completed.returncode == 2
        assert "invalid choice: 'sometimes'" in completed.stderr


class TestHelpAndVersion:
    def test_version(self) -> None:
        """--version prints the installed version."""
        completed = run_cli("--version")
        assert completed.returncode == 0
        assert completed.stdout.strip() == f"otel-shapecheck {__version__}"

    @pytest.mark.parametrize("command", [(), ("check",), ("demo",), ("lint-tools",), ("serve",)])
    def test_help_on_every_command(
        self, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Every command answers --help with its usage and exit 0 (main in-process)."""
        assert main([*command, "--help"]) == 0
        assert capsys.readouterr().out.startswith("usage: otel-shapecheck")

    def test_help_from_the_console_script(self) -> None:
        """The console script answers --help."""
        completed = run_cli("check", "--help")
        assert completed.returncode == 0
        assert completed.stdout.startswith("usage: otel-shapecheck check")

    def test_python_dash_m(self) -> None:
        """python -m otel_shapecheck runs the same command."""
        completed = subprocess.run(
            [sys.executable, "-m", "otel_shapecheck", "--version"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert completed.returncode == 0
        assert __version__ in completed.stdout

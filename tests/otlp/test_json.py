"""Reading exported traces into SDK spans and writing spans back as OTLP/JSON."""

from __future__ import annotations

import base64
import gzip
import io
import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from otel_shapecheck.otlp._convert import spans_to_otlp_json
from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._files import load_spans, parse_spans, parse_telemetry
from otel_shapecheck.otlp._jsonl import write_spans_jsonl

REMOTE_PARENT = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
)


@pytest.fixture(name="sdk_spans")
def _sdk_spans() -> Iterator[Sequence[ReadableSpan]]:
    """Spans from a real TracerProvider covering every field the loader rebuilds."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "agent", "deployment.environment": "test"}),
        shutdown_on_exit=False,
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent.scope", "1.2.3", schema_url="https://opentelemetry.io/schemas/1.37.0")
    other_tracer = provider.get_tracer("other.scope")
    parent_context = trace.set_span_in_context(NonRecordingSpan(REMOTE_PARENT))
    with tracer.start_as_current_span(
        "invoke_agent planner",
        context=parent_context,
        kind=SpanKind.SERVER,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "count": 3,
            "ratio": 0.25,
            "ok": True,
            "names": ["a", "b"],
            "sizes": [1, 2, 3],
            "weights": [0.5, 1.5],
            "flags": [True, False],
        },
    ) as root:
        root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "x", "score": 0.5})
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            links=[trace.Link(REMOTE_PARENT, {"link.kind": "follows"})],
        ) as chat:
            chat.set_status(Status(StatusCode.ERROR, "upstream failed"))
        with other_tracer.start_as_current_span("execute_tool lookup") as tool:
            tool.set_status(Status(StatusCode.OK))
    yield exporter.get_finished_spans()
    provider.shutdown()


def _round_trip(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    stream = io.StringIO()
    write_spans_jsonl(spans, stream)
    return parse_spans(stream.getvalue().encode(), "round-trip.jsonl")


def _fields(span: ReadableSpan) -> dict[str, Any]:
    assert span.context is not None
    return {
        "name": span.name,
        "trace_id": span.context.trace_id,
        "span_id": span.context.span_id,
        "parent": (span.parent.span_id, span.parent.is_remote) if span.parent else None,
        "kind": span.kind,
        "status": (span.status.status_code, span.status.description),
        "start": span.start_time,
        "end": span.end_time,
        "attributes": dict(span.attributes or {}),
        "events": [(e.name, dict(e.attributes or {}), e.timestamp) for e in span.events],
        "links": [
            (link.context.trace_id, link.context.span_id, link.context.is_remote, dict(link.attributes or {}))
            for link in span.links
        ],
        "resource": (dict(span.resource.attributes), span.resource.schema_url),
        "scope": span.instrumentation_scope,
        "dropped": (span.dropped_attributes, span.dropped_events, span.dropped_links),
    }


class TestRoundTrip:
    def test_every_field_survives_writer_then_loader(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """SDK spans written as OTLP/JSON and read back keep every field the OTLP encoder carries."""
        loaded = _round_trip(sdk_spans)
        by_id = sorted(sdk_spans, key=lambda span: span.context.span_id if span.context else 0)
        loaded_by_id = sorted(loaded, key=lambda span: span.context.span_id if span.context else 0)
        assert [_fields(span) for span in loaded_by_id] == [_fields(span) for span in by_id]

    def test_attribute_types_are_kept(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Ints stay ints, doubles stay floats, booleans stay booleans and arrays become tuples."""
        root = next(span for span in _round_trip(sdk_spans) if span.name == "invoke_agent planner")
        attributes = root.attributes or {}
        assert type(attributes["count"]) is int
        assert type(attributes["ratio"]) is float
        assert attributes["ok"] is True
        assert attributes["names"] == ("a", "b")
        assert attributes["sizes"] == (1, 2, 3)
        assert attributes["weights"] == (0.5, 1.5)
        assert attributes["flags"] == (True, False)

    def test_remote_parent_flag_is_kept(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """A root whose parent came over the wire keeps a remote parent; local children keep local ones."""
        by_name = {span.name: span for span in _round_trip(sdk_spans)}
        root_parent = by_name["invoke_agent planner"].parent
        chat_parent = by_name["chat gpt-4o-mini"].parent
        assert root_parent is not None and root_parent.is_remote
        assert root_parent.span_id == REMOTE_PARENT.span_id
        assert chat_parent is not None and not chat_parent.is_remote

    def test_loaded_spans_count_as_sampled(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Exported spans were recorded, so SDK processors must not drop them as unsampled."""
        assert all(span.context and span.context.trace_flags.sampled for span in _round_trip(sdk_spans))

    def test_writer_uses_lowercase_hex_ids(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """OTLP/JSON carries ids as hex, not protobuf's base64."""
        document = spans_to_otlp_json(sdk_spans)
        spans = [s for rs in document["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]]
        root = next(span for span in spans if span["name"] == "invoke_agent planner")
        assert root["traceId"] == "0af7651916cd43dd8448eb211c80319c"
        assert root["parentSpanId"] == "b7ad6b7169203331"
        assert all(len(span["spanId"]) == 16 and span["spanId"] == span["spanId"].lower() for span in spans)
        assert {span["kind"] for span in spans} == {1, 2, 3}, "OTLP/JSON encodes enums as integers"

    def test_file_and_gzip_are_read(self, sdk_spans: Sequence[ReadableSpan], tmp_path: Any) -> None:
        """A file path is read, gzip-compressed or not."""
        stream = io.StringIO()
        write_spans_jsonl(sdk_spans, stream)
        plain = tmp_path / "traces.jsonl"
        plain.write_text(stream.getvalue())
        packed = tmp_path / "traces.jsonl.gz"
        packed.write_bytes(gzip.compress(stream.getvalue().encode()))
        assert [s.name for s in load_spans(str(plain))] == [s.name for s in load_spans(str(packed))]
        assert len(load_spans(str(plain))) == len(sdk_spans)


def _document(sdk_spans: Sequence[ReadableSpan]) -> dict[str, Any]:
    return spans_to_otlp_json(sdk_spans)


def _base64_ids(node: Any) -> Any:
    """The document with ids in protobuf's base64 JSON form, as Tempo's trace API prints them."""
    if isinstance(node, dict):
        return {
            key: base64.b64encode(bytes.fromhex(value)).decode()
            if key in ("traceId", "spanId", "parentSpanId") and isinstance(value, str)
            else _base64_ids(value)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_base64_ids(item) for item in node]
    return node


class TestBackendShapes:
    def test_json_lines_of_several_documents(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """The Collector's file exporter writes one document per line; every line is read."""
        lines = "\n".join(json.dumps(_document([span])) for span in sdk_spans) + "\n"
        assert [s.name for s in parse_spans(lines.encode(), "f")] == [s.name for s in sdk_spans]

    def test_pretty_printed_single_document(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """One indented document spanning many lines is read as one document."""
        text = json.dumps(_document(sdk_spans), indent=2)
        assert len(parse_spans(text.encode(), "f")) == len(sdk_spans)

    def test_tempo_batches_with_base64_ids(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Tempo's trace API answers {"batches": [...]} with base64 ids; ids come out the same."""
        batches = _base64_ids(_document(sdk_spans)["resourceSpans"])
        loaded = parse_spans(json.dumps({"batches": batches}).encode(), "tempo.json")
        assert sorted((s.context.trace_id, s.context.span_id) for s in loaded if s.context) == sorted(
            (s.context.trace_id, s.context.span_id) for s in sdk_spans if s.context
        )

    def test_tempo_instrumentation_library_spans(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Older Tempo responses name scope spans instrumentationLibrarySpans; they are read as scopes."""
        batches = _document(sdk_spans)["resourceSpans"]
        for batch in batches:
            batch["instrumentationLibrarySpans"] = [
                {"instrumentationLibrary": ss["scope"], "spans": ss["spans"]}
                for ss in batch.pop("scopeSpans")
            ]
        loaded = parse_spans(json.dumps({"batches": batches}).encode(), "tempo.json")
        assert {s.instrumentation_scope.name for s in loaded if s.instrumentation_scope} == {
            "agent.scope",
            "other.scope",
        }

    def test_tempo_v2_trace_envelope_with_uppercase_hex(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Tempo's v2 API wraps the trace in {"trace": ...}; uppercase hex ids read like lowercase ones."""
        resource_spans = _document(sdk_spans)["resourceSpans"]
        for rs in resource_spans:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["traceId"], span["spanId"] = span["traceId"].upper(), span["spanId"].upper()
        loaded = parse_spans(json.dumps({"trace": {"resourceSpans": resource_spans}}).encode(), "tempo.json")
        assert sorted((s.context.trace_id, s.context.span_id) for s in loaded if s.context) == sorted(
            (s.context.trace_id, s.context.span_id) for s in sdk_spans if s.context
        )

    def test_jaeger_result_envelope(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Jaeger's OTLP API wraps the document in {"result": ...}; spans are read from inside it."""
        text = json.dumps({"result": _document(sdk_spans)})
        assert sorted(s.name for s in parse_spans(text.encode(), "jaeger.json")) == sorted(
            s.name for s in sdk_spans
        )

    def test_span_kind_by_enum_name(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """Backends that print kinds as SPAN_KIND_* names are read like numeric kinds."""
        document = _document(sdk_spans)
        for rs in document["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["kind"] = ("SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT")[
                        span["kind"] - 1
                    ]
        kinds = {s.name: s.kind for s in parse_spans(json.dumps(document).encode(), "f")}
        assert kinds["invoke_agent planner"] is SpanKind.SERVER
        assert kinds["chat gpt-4o-mini"] is SpanKind.CLIENT


class TestUnreadableInput:
    @pytest.mark.parametrize(
        ("data", "problem"),
        [
            (b"", "empty input"),
            (b"  \n\t ", "empty input"),
            (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe", "binary content"),
            (b'{"resourceSpans": [{"scopeSpans": [', "truncated JSON"),
            (b'{"resourceSpans": }', "malformed JSON"),
            (b'{"data": [{"traceID": "abc"}]}', "is not exported traces"),
            (b"[1, 2, 3]", "is not exported traces"),
            (b'{"resourceSpans": {"a": 1}}', "'resourceSpans' is not a list"),
            (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "xyz", "spanId": "01"}]}]}]}', "id"),
            (
                b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5, "kind": {}}]}]}]}',
                "not valid OTLP",
            ),
            (
                '{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "\u00e9"}]}]}]}'.encode(),
                "8-byte id",
            ),
            (b"\x1f\x8b\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x06", "damaged gzip data"),
            (b"[" * 100_000, "nested too deeply"),
            (
                # Deep enough for every supported Python: 3.13's JSON scanner recurses further than 3.12's.
                b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"attributes": ' + b"[" * 100_000,
                "nested too deeply",
            ),
            (b'{"resourceLogs": [null]}', "resourceLogs entry is not an object"),
            (b'{"resourceLogs": [5]}', "resourceLogs entry is not an object"),
            (
                b'{"resourceLogs": [{"scopeLogs": [{"logRecords": [{"timeUnixNano": []}]}]}]}',
                "not valid OTLP",
            ),
        ],
    )
    def test_bad_input_names_the_file_and_the_problem(self, data: bytes, problem: str) -> None:
        """Each kind of bad input raises a ValueError naming the input and saying what is wrong."""
        with pytest.raises(UnreadableTraceFile) as raised:
            parse_spans(data, "exports/bad.json")
        assert isinstance(raised.value, ValueError)
        assert str(raised.value).startswith("exports/bad.json: ")
        assert problem in str(raised.value)

    def test_missing_file(self, tmp_path: Any) -> None:
        """A path that does not exist is unreadable input naming the path."""
        with pytest.raises(UnreadableTraceFile, match="nowhere.json: cannot be read"):
            load_spans(str(tmp_path / "nowhere.json"))

    def test_second_document_is_named(self, sdk_spans: Sequence[ReadableSpan]) -> None:
        """In JSON Lines, the error says which document is wrong."""
        text = json.dumps(_document(sdk_spans)) + "\n" + json.dumps({"logs": []}) + "\n"
        with pytest.raises(UnreadableTraceFile, match="document 2 is not exported traces"):
            parse_spans(text.encode(), "f")


class TestLogRecords:
    def test_resource_logs_documents_become_log_records_parented_to_their_span(self) -> None:
        """A {"resourceLogs": ...} line becomes SDK log records with trace and span ids, name and body."""
        document = {
            "resourceLogs": [
                {
                    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]},
                    "scopeLogs": [
                        {
                            "scope": {"name": "genai"},
                            "logRecords": [
                                {
                                    "timeUnixNano": "5",
                                    "traceId": "0af7651916cd43dd8448eb211c80319c",
                                    "spanId": "b7ad6b7169203331",
                                    "eventName": "gen_ai.client.inference.operation.details",
                                    "body": {
                                        "kvlistValue": {"values": [{"key": "k", "value": {"intValue": "3"}}]}
                                    },
                                    "attributes": [
                                        {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}
                                    ],
                                }
                            ],
                        }
                    ],
                }
            ]
        }
        telemetry = parse_telemetry(json.dumps(document).encode(), "logs.jsonl")
        assert telemetry.spans == []
        (record,) = telemetry.log_records
        assert record.log_record.trace_id == REMOTE_PARENT.trace_id
        assert record.log_record.span_id == REMOTE_PARENT.span_id
        assert record.log_record.event_name == "gen_ai.client.inference.operation.details"
        assert record.log_record.body == {"k": 3}
        assert record.resource is not None and record.resource.attributes["service.name"] == "agent"

    def test_a_record_with_an_unknown_severity_is_skipped_not_fatal(self) -> None:
        """Only content matters offline: one record the SDK cannot represent is left out, the rest kept."""
        records = [{"severityNumber": 99, "body": {"stringValue": "odd"}}, {"severityNumber": 9}]
        document = {"resourceLogs": [{"scopeLogs": [{"logRecords": records}]}]}
        assert len(parse_telemetry(json.dumps(document).encode(), "logs.jsonl").log_records) == 1

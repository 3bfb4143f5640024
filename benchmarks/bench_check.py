"""Offline ``check`` throughput: exported agent traces per minute, hashing embedder and default MiniLM.

The traces are the demo's four scenarios (real ``openai`` instrumentation telemetry), copied with fresh
ids and a distinct user question per copy so every copy needs its own embeddings. Each row times reading
the OTLP/JSON Lines bytes and checking every span through the span processor, and compares it with a
baseline measured in the same run: reading the same bytes into spans without checking them, the least
any offline pass must pay (the ratio is the share of that read-only rate the full check keeps). Run
alone with ``python -m benchmarks.bench_check``.

The ``check.read`` rows time reading alone: the OTLP/JSON reader (``parse_spans``) and the path it
replaced (ids rewritten to base64, ``json_format.ParseDict``, the proto conversion), each against the
least any reader of these files pays, measured in the same run: ``json.loads`` of every line plus
building the same SDK spans from the decoded dicts with no checking at all. The ratio is that floor's
time over the reader's (the target is ≥ 0.8).
"""

from __future__ import annotations

import io
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags
from opentelemetry.trace.status import Status, StatusCode
from rich.console import Console

from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli._report import summary
from otel_shapecheck.cli.demo._demo import TRACES_FILE, demo_output, run_demo
from otel_shapecheck.otlp._convert import spans_from_message
from otel_shapecheck.otlp._files import parse_spans
from otel_shapecheck.otlp._ids import ids_as_base64
from otel_shapecheck.pipeline._offline import check_spans

_SCENARIOS_PER_COPY = 4
_TARGET_TRACES_PER_MINUTE = 2000
_READ_TARGET = 0.8
_KINDS = [SpanKind.INTERNAL, SpanKind.INTERNAL, SpanKind.SERVER, SpanKind.CLIENT, SpanKind.PRODUCER]
_KINDS.append(SpanKind.CONSUMER)
_SAMPLED = TraceFlags(TraceFlags.SAMPLED)


def demo_documents() -> list[dict[str, Any]]:
    """The OTLP/JSON documents of one demo run with the hashing embedder."""
    with tempfile.TemporaryDirectory() as directory:
        output = demo_output(Path(directory), None)
        run_demo(output, embedder="hashing", console=Console(file=io.StringIO()))
        text = (Path(directory) / TRACES_FILE).read_text()
    return [json.loads(line) for line in text.splitlines()]


def copied_traces(documents: list[dict[str, Any]], copies: int, seed: int = 11) -> bytes:
    """``copies`` copies of ``documents`` as OTLP/JSON Lines, with new ids and a numbered user question."""
    generator = random.Random(seed)
    template = json.dumps(documents)
    lines = []
    for copy in range(copies):
        ids: dict[str, str] = {}

        def fresh(old: str, length: int, ids: dict[str, str] = ids) -> str:
            return ids.setdefault(old, f"{generator.getrandbits(length * 4):0{length}x}")

        documents_copy = json.loads(template)
        for document in documents_copy:
            _rewrite(document, fresh, copy)
            lines.append(json.dumps(document, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


def _rewrite(node: Any, fresh: Callable[[str, int], str], copy: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "traceId" and value:
                node[key] = fresh(value, 32)
            elif key in ("spanId", "parentSpanId") and value:
                node[key] = fresh(value, 16)
            elif key == "stringValue" and isinstance(value, str) and '"role":"user"' in value:
                node[key] = value.replace('?"', f' (ticket {copy})?"')
            else:
                _rewrite(value, fresh, copy)
    elif isinstance(node, list):
        for item in node:
            _rewrite(item, fresh, copy)


def _plain(value: dict[str, Any]) -> Any:
    """An AnyValue's value, trusting its shape (the floor does no checking)."""
    ((kind, item),) = value.items()
    if kind == "intValue":
        return int(item)
    if kind == "arrayValue":
        return tuple(_plain(element) for element in item.get("values", ()))
    if kind == "kvlistValue":
        return {pair["key"]: _plain(pair["value"]) for pair in item.get("values", ())}
    return item


def _attributes(key_values: list[dict[str, Any]]) -> dict[str, Any]:
    return {pair["key"]: _plain(pair["value"]) for pair in key_values}


def floor_read(data: bytes) -> list[ReadableSpan]:
    """``json.loads`` of each line, then the same SDK spans built from the dicts without any checking."""
    spans: list[ReadableSpan] = []
    for line in data.splitlines():
        for resource_spans in json.loads(line)["resourceSpans"]:
            resource = Resource(_attributes(resource_spans.get("resource", {}).get("attributes", [])))
            for scope_spans in resource_spans.get("scopeSpans", ()):
                scope_json = scope_spans.get("scope", {})
                scope = InstrumentationScope(scope_json.get("name", ""), scope_json.get("version", ""))
                for span in scope_spans.get("spans", ()):
                    trace_id = int(span["traceId"], 16)
                    parent = span.get("parentSpanId")
                    status = span.get("status", {})
                    spans.append(
                        ReadableSpan(
                            name=span["name"],
                            context=SpanContext(trace_id, int(span["spanId"], 16), False, _SAMPLED),
                            parent=SpanContext(trace_id, int(parent, 16), False, _SAMPLED)
                            if parent
                            else None,
                            resource=resource,
                            attributes=BoundedAttributes(
                                attributes=_attributes(span.get("attributes", [])), immutable=True
                            ),
                            events=tuple(
                                Event(
                                    event["name"],
                                    BoundedAttributes(
                                        attributes=_attributes(event.get("attributes", [])), immutable=True
                                    ),
                                    int(event.get("timeUnixNano", 0)),
                                )
                                for event in span.get("events", ())
                            ),
                            kind=_KINDS[span.get("kind", 0)],
                            status=Status(StatusCode(status.get("code", 0)), status.get("message")),
                            start_time=int(span["startTimeUnixNano"]),
                            end_time=int(span["endTimeUnixNano"]),
                            instrumentation_scope=scope,
                        )
                    )
    return spans


def json_format_read(data: bytes) -> list[ReadableSpan]:
    """The reader ``check`` had before: ids to base64, ``json_format.ParseDict``, the proto conversion."""
    spans: list[ReadableSpan] = []
    for number, line in enumerate(data.splitlines(), start=1):
        for resource_spans in json.loads(line)["resourceSpans"]:
            message = ResourceSpans()
            json_format.ParseDict(ids_as_base64(resource_spans), message, ignore_unknown_fields=True)
            spans.extend(spans_from_message(message, "bench", number))
    return spans


def measure_reading(data: bytes, label: str) -> list[dict[str, Any]]:
    """Reading alone: the reader and the json_format path, each against the floor, best of 3."""
    spans = len(parse_spans(data, "bench"))
    assert len(floor_read(data)) == len(json_format_read(data)) == spans
    timings: dict[str, list[float]] = {"floor": [], "reader": [], "json_format": []}
    for _ in range(3):  # alternating, so load on the machine falls on every reader alike
        timings["floor"].append(_seconds(lambda: floor_read(data)))
        timings["reader"].append(_seconds(lambda: parse_spans(data, "bench")))
        timings["json_format"].append(_seconds(lambda: json_format_read(data)))
    floor = min(timings["floor"])
    rows = []
    for name in ("reader", "json_format"):
        value = min(timings[name])
        rows.append(
            {
                "name": f"check.read.{name}: {label} ({spans} spans, {len(data) / 1e6:.1f} MB)",
                "value": round(value, 3),
                "unit": "s",
                "baseline": round(floor, 3),
                "ratio": round(floor / value, 3),
                "target": f">= {_READ_TARGET}x the floor (json.loads + building the spans)"
                if name == "reader"
                else "before: report",
                "spans_per_second": round(spans / value),
            }
        )
    return rows


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _measure(
    documents: list[dict[str, Any]], copies: int, evaluated_per_copy: int, embedder: str = "hashing"
) -> dict[str, Any]:
    data = copied_traces(documents, copies)
    traces = copies * _SCENARIOS_PER_COPY
    spans = parse_spans(data, "bench")
    baseline = min(_seconds(lambda: parse_spans(data, "bench")) for _ in range(3))
    checks = build_checks(embedder)
    checked: list[Any] = []
    elapsed = _seconds(lambda: checked.extend(check_spans(parse_spans(data, "bench"), checks)))
    assert len(checked) == len(spans)
    counts = summary(checked)
    assert counts["evaluated"] == copies * evaluated_per_copy, counts
    return {
        "name": f"check: {traces} traces ({len(spans)} spans), {embedder} embedder",
        "value": round(traces / elapsed * 60),
        "unit": "traces/min",
        "baseline": round(traces / baseline * 60),
        "ratio": round(baseline / elapsed, 2),
        "target": f"> {_TARGET_TRACES_PER_MINUTE} traces/min",
        "seconds": round(elapsed, 2),
        "flagged": counts["flagged"],
    }


def run() -> list[dict[str, Any]]:
    """The benchmark rows: 400 and 2 000 traces with the hashing embedder, 400 with MiniLM."""
    documents = demo_documents()
    one = summary(check_spans(parse_spans(copied_traces(documents, 1), "bench"), build_checks("hashing")))
    return [
        *measure_reading(copied_traces(documents, 500), "2 000 demo traces"),
        _measure(documents, 100, one["evaluated"]),
        _measure(documents, 500, one["evaluated"]),
        _measure(documents, 100, one["evaluated"], embedder="minilm"),
    ]


def main() -> None:
    """Print the rows as a table."""
    for row in run():
        print(
            f"{row['name']:<52} {row['value']:>8} {row['unit']} in {row['seconds']:.2f} s"
            f"  baseline read-only {row['baseline']:>8} {row['unit']}  ratio {row['ratio']:>6.2f}x"
            f"  target {row['target']}  (flagged {row['flagged']})"
        )


if __name__ == "__main__":
    main()

"""Fuzzing what the other suites do not: the OTLP/JSON loader, and the span processor end to end.

The readers (``tests/readers/test_hostile_input.py``), the figures extractor and basis fold
(``tests/checks/figures/test_properties.py``), the tool index and the conformance check already have their own
hypothesis tests. Here:

- the loader gets arbitrary bytes, arbitrary JSON and mutated valid exports, and must either read spans
  or raise its documented :class:`UnreadableTraceFile` (a ``ValueError`` naming the input), nothing else;
- the span processor, with every built-in check, gets spans of arbitrary names, attributes and parent
  links drawn from every convention's keys, and must forward each exactly once without a failed reader
  or check.
"""

from __future__ import annotations

import copy
import gzip
import json
import time
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext, TraceFlags

from otel_shapecheck import (
    ConformanceCheck,
    FiguresCheck,
    HashingEmbedder,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck.otlp._convert import spans_to_otlp_json
from otel_shapecheck.otlp._errors import UnreadableTraceFile
from otel_shapecheck.otlp._files import parse_spans
from otel_shapecheck.pipeline._options import ProcessorOptions

from .telemetry import IdRecorder, agent_turn

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.sampled_from(["", "0" * 32, "0" * 16, "AAAA", "ff" * 16, "SPAN_KIND_CLIENT", "1e308", "NaN", "-0"]),
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=25,
)
OTLP_KEYS = [
    "resourceSpans",
    "scopeSpans",
    "spans",
    "resource",
    "attributes",
    "key",
    "value",
    "stringValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "events",
    "links",
    "status",
    "flags",
    "batches",
    "instrumentationLibrarySpans",
    "result",
    "trace",
    "resourceLogs",
]
otlp_shaped = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(OTLP_KEYS), children, max_size=4)
    ),
    max_leaves=30,
)


ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})


def _read(data: bytes) -> list[ReadableSpan] | UnreadableTraceFile:
    """The loader's answer: spans, or its documented error (anything else propagates and fails the test)."""
    try:
        spans = parse_spans(data, "fuzz.json")
    except UnreadableTraceFile as error:
        assert "fuzz.json" in str(error)
        return error
    assert all(isinstance(span, ReadableSpan) for span in spans)
    for span in spans:
        assert span.context is not None and span.context.trace_id and span.context.span_id
    return spans


@FUZZ
@given(data=st.binary(max_size=300))
def test_loader_on_arbitrary_bytes(data: bytes) -> None:
    """Arbitrary bytes (and the same bytes gzipped) read as spans or raise UnreadableTraceFile."""
    _read(data)
    _read(gzip.compress(data))
    _read(b"\x1f\x8b" + data)


def test_damaged_deflate_stream_behind_a_gzip_header_is_an_unreadable_trace_file() -> None:
    """Bytes after a gzip header that are not a valid deflate stream are reported as UnreadableTraceFile."""
    with pytest.raises(UnreadableTraceFile, match="fuzz.json"):
        parse_spans(b"\x1f\x8b\x08\x02\x00\x00\x00\x00\x00\x00\x00\x00\x06", "fuzz.json")


@FUZZ
@given(document=st.one_of(json_values, otlp_shaped), lines=st.integers(min_value=1, max_value=3))
def test_loader_on_arbitrary_json(document: Any, lines: int) -> None:
    """Arbitrary JSON, one document or several as JSON Lines, reads as spans or raises UnreadableTraceFile."""
    text = "\n".join([json.dumps(document)] * lines)
    _read(text.encode())


def _valid_export() -> dict[str, Any]:
    """An OTLP/JSON export of one real agent turn (with a resource, attributes and a parent chain)."""
    recorder = IdRecorder(keep=lambda span: True)
    provider = TracerProvider(resource=Resource({"service.name": "fuzz"}), shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    agent_turn(provider.get_tracer("tests.fuzz"))
    provider.shutdown()
    return spans_to_otlp_json(recorder.kept)


VALID_EXPORT = _valid_export()


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON tree (dict keys and list indexes), the root included."""
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found.extend(_paths(child, (*prefix, index)))
    return found


VALID_PATHS = _paths(VALID_EXPORT)


def _mutated(document: Any, path: Sequence[Any], mutation: str, value: Any) -> Any:
    """``document`` with the node at ``path`` replaced, deleted, duplicated or wrapped."""
    result = copy.deepcopy(document)
    if not path:
        return value if mutation == "replace" else [result, result]
    parent = result
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if mutation == "delete":
        del parent[last]
    elif mutation == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    elif mutation == "wrap":
        parent[last] = [parent[last]]
    elif mutation == "stringify":
        parent[last] = json.dumps(parent[last])
    else:
        parent[last] = value
    return result


@FUZZ
@given(
    path=st.sampled_from(VALID_PATHS),
    mutation=st.sampled_from(["replace", "delete", "duplicate", "wrap", "stringify"]),
    value=st.one_of(json_values, otlp_shaped),
    cut=st.integers(min_value=0, max_value=40),
)
def test_loader_on_mutated_valid_exports(path: tuple[Any, ...], mutation: str, value: Any, cut: int) -> None:
    """A real export with one node replaced, deleted, duplicated, wrapped or stringified, whole or cut."""
    text = json.dumps(_mutated(VALID_EXPORT, path, mutation, value))
    _read(text.encode())
    _read(text[: len(text) - cut].encode())


@pytest.mark.parametrize("key", sorted(ID_KEYS))
def test_non_ascii_id_is_an_unreadable_trace_file(key: str) -> None:
    """An id with non-ASCII characters is reported as UnreadableTraceFile naming the input."""
    document = copy.deepcopy(VALID_EXPORT)
    document["resourceSpans"][0]["scopeSpans"][0]["spans"][1][key] = "\x80" * 32
    with pytest.raises(UnreadableTraceFile, match="fuzz.json"):
        parse_spans(json.dumps(document).encode(), "fuzz.json")


@pytest.mark.parametrize("entry", [None, 5, True])
def test_scalar_resource_logs_entry_is_an_unreadable_trace_file(entry: Any) -> None:
    """A ``resourceLogs`` entry that is not an object is reported as UnreadableTraceFile naming the input."""
    with pytest.raises(UnreadableTraceFile, match="fuzz.json"):
        parse_spans(json.dumps({"resourceLogs": [entry]}).encode(), "fuzz.json")


def test_the_unmutated_export_reads_back() -> None:
    """Control for the mutation fuzzer: the export it starts from is read as the four spans it holds."""
    spans = _read(json.dumps(VALID_EXPORT).encode())
    assert isinstance(spans, list) and len(spans) == 4


# The span processor.

GENAI_KEYS = [
    "gen_ai.operation.name",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.definitions",
    "gen_ai.tool.name",
    "gen_ai.tool.call.id",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "gen_ai.response.finish_reasons",
    "gen_ai.response.id",
    "llm.request.type",
    "llm.request.functions.0.name",
    "llm.request.functions.0.description",
    "gen_ai.prompt.0.role",
    "gen_ai.prompt.0.content",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.finish_reason",
    "gen_ai.completion.0.tool_calls.0.name",
    "traceloop.span.kind",
    "traceloop.entity.output",
    "openinference.span.kind",
    "llm.tools.0.tool.json_schema",
    "llm.input_messages.0.message.role",
    "llm.input_messages.0.message.content",
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.name",
    "output.value",
    "mcp.method.name",
    "shapecheck.analyst.id",
    "shapecheck.analyst.attempt",
    "shapecheck.rows.emitted",
    "shapecheck.rows.accepted",
]
KIND_VALUES = ["chat", "text_completion", "execute_tool", "invoke_agent", "LLM", "TOOL", "tool", "tools/call"]
attribute_values = st.one_of(
    st.sampled_from(KIND_VALUES),
    st.text(max_size=40),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(),
    st.booleans(),
    json_values.map(json.dumps),
    st.lists(st.text(max_size=10), max_size=3).map(tuple),
)
span_names = st.one_of(
    st.sampled_from(
        ["chat gpt-4o-mini", "execute_tool get_capacity", "tools/call lookup", "invoke_agent", ""]
    ),
    st.text(max_size=30),
)
span_specs = st.tuples(
    span_names,
    st.dictionaries(st.sampled_from(GENAI_KEYS), attribute_values, max_size=8),
    st.integers(min_value=0, max_value=6),  # parent: an earlier span of the example, or none
    st.booleans(),  # remote parent
)


def _spans_of(
    specs: list[tuple[str, dict[str, Any], int, bool]], trace_id: int, first_id: int
) -> list[ReadableSpan]:
    spans = []
    now = time.time_ns()
    for offset, (name, attributes, parent_index, remote) in enumerate(specs):
        span_id = first_id + offset
        parent = None
        if parent_index:
            parent_id = first_id + (parent_index - 1) % len(specs)
            parent = SpanContext(
                trace_id, parent_id, is_remote=remote, trace_flags=TraceFlags(TraceFlags.SAMPLED)
            )
        spans.append(
            ReadableSpan(
                name=name,
                context=SpanContext(
                    trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
                ),
                parent=parent,
                attributes=attributes,
                start_time=now + offset,
                end_time=now + offset + 1,
            )
        )
    return spans


def test_processor_forwards_every_fuzzed_span_once_without_a_failed_check() -> None:
    """Arbitrary GenAI-looking spans and parent shapes: each forwarded once, no reader or check fails."""
    forwarded = IdRecorder()
    processor = ShapecheckSpanProcessor(
        forwarded,
        checks=[ToolChoiceCheck(HashingEmbedder()), ConformanceCheck(), FiguresCheck()],
        options=ProcessorOptions(max_wait_millis=50, schedule_delay_millis=10),
    )
    fed: list[int] = []

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(specs=st.lists(span_specs, min_size=1, max_size=6))
    def feed(specs: list[tuple[str, dict[str, Any], int, bool]]) -> None:
        trace_id = len(fed) + 1
        for span in _spans_of(specs, trace_id, first_id=(trace_id << 8)):
            processor.on_end(span)
            assert span.context is not None
            fed.append(span.context.span_id)

    try:
        feed()
        time.sleep(0.1)  # past max_wait: spans waiting for parents that never end are released
        assert processor.force_flush(60_000)
    finally:
        processor.shutdown()
    counts = processor.counts()
    assert counts.errors == ()
    assert counts.seen == len(fed)
    # Fuzzed spans may record one call twice (equal response ids in one trace): evaluated once.
    assert counts.held > 0 and counts.evaluated + counts.duplicates == counts.held
    assert forwarded.duplicates() == {}
    assert forwarded.ids() == set(fed)

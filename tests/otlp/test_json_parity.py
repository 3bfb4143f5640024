"""The OTLP/JSON reader gives the same telemetry as the json_format path it replaced, and refuses the same.

The reference (``json_format_reference.py``) rewrites ids to base64, parses with ``json_format.ParseDict``
and converts the protobuf messages; the reader reads the decoded JSON directly. They are compared on
every fixture, on generated documents that use every corner of protobuf's JSON mapping, and on real
exports with one node replaced, deleted, wrapped, nulled or stringified.
"""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .json_format_reference import read_both

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PARITY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _fixture_files() -> list[Path]:
    return sorted(path for pattern in ("*.spans.json", "*.logs.json") for path in FIXTURES.rglob(pattern))


@pytest.mark.parametrize("path", _fixture_files(), ids=lambda path: str(path.relative_to(FIXTURES)))
def test_every_fixture_reads_the_same(path: Path) -> None:
    """Each recorded export (framework captures, openai-v2 spans and logs) reads as before."""
    new, old = read_both(path.read_bytes())
    assert new == old
    assert new != "refused"


def test_the_fixtures_hold_telemetry() -> None:
    """The fixture comparison above compares something: dozens of files, spans and log records."""
    assert len(_fixture_files()) > 20


# Generated documents: every AnyValue kind, numbers as JSON numbers or text, enums as numbers or names,
# ids as hex (either case) or base64, field names in either spelling, unknown fields, and nulls.

_TEXT = st.text(max_size=12)
_INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_UINT64 = st.integers(min_value=0, max_value=2**64 - 1)


def _int_json(numbers: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    return numbers.flatmap(lambda n: st.sampled_from([n, str(n), float(n) if abs(n) < 2**52 else n]))


def _name(camel: str, snake: str) -> st.SearchStrategy[str]:
    return st.sampled_from([camel, camel, camel, snake])


_scalar_any = st.one_of(
    st.builds(lambda v: {"stringValue": v}, _TEXT),
    st.builds(lambda v: {"boolValue": v}, st.booleans()),
    st.builds(lambda v: {"intValue": v}, _int_json(_INT64)),
    st.builds(lambda v: {"doubleValue": v}, st.floats(allow_nan=False, allow_infinity=False)),
    st.builds(lambda v: {"doubleValue": v}, st.sampled_from(["NaN", "Infinity", "-Infinity", "1.5", "2"])),
    st.builds(lambda v: {"bytesValue": base64.b64encode(v).decode()}, st.binary(max_size=8)),
    st.builds(lambda v: {"string_value": v}, _TEXT),
    st.just({}),
    st.builds(lambda v: {"stringValue": None, "intValue": v}, _int_json(_INT64)),
)
_any_value = st.recursive(
    _scalar_any,
    lambda children: st.one_of(
        st.builds(lambda vs: {"arrayValue": {"values": vs}}, st.lists(children, max_size=3)),
        st.builds(
            lambda kvs: {"kvlistValue": {"values": kvs}},
            st.lists(st.builds(lambda k, v: {"key": k, "value": v}, _TEXT, children), max_size=3),
        ),
    ),
    max_leaves=8,
)
_key_value = st.one_of(
    st.builds(lambda k, v: {"key": k, "value": v}, _TEXT, _any_value),
    st.builds(lambda k: {"key": k}, _TEXT),
)
_attributes = st.lists(_key_value, max_size=5)


def _hex_or_base64(size: int) -> st.SearchStrategy[str]:
    raw = st.binary(min_size=size, max_size=size)
    return st.one_of(
        raw.map(bytes.hex),
        raw.map(lambda b: b.hex().upper()),
        raw.map(lambda b: base64.b64encode(b).decode()),
    )


_kind = st.one_of(st.integers(0, 6), st.sampled_from(["SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_X"]))
_status = st.fixed_dictionaries(
    {},
    optional={
        "code": st.one_of(st.integers(0, 3), st.sampled_from(["STATUS_CODE_ERROR", "STATUS_CODE_OK"])),
        "message": _TEXT,
    },
)
_event = st.fixed_dictionaries(
    {"name": _TEXT},
    optional={
        "timeUnixNano": _int_json(_UINT64),
        "attributes": _attributes,
        "droppedAttributesCount": st.integers(0, 3),
    },
)
_link = st.fixed_dictionaries(
    {"traceId": _hex_or_base64(16), "spanId": _hex_or_base64(8)},
    optional={"attributes": _attributes, "flags": st.integers(0, 2**10), "traceState": st.just("a=1")},
)


@st.composite
def _span(draw: st.DrawFn) -> dict[str, Any]:
    span: dict[str, Any] = {
        draw(_name("traceId", "trace_id")): draw(_hex_or_base64(16)),
        draw(_name("spanId", "span_id")): draw(_hex_or_base64(8)),
        "name": draw(_TEXT),
    }
    optional: dict[str, st.SearchStrategy[Any]] = {
        "parentSpanId": st.one_of(_hex_or_base64(8), st.just("")),
        "kind": _kind,
        "startTimeUnixNano": _int_json(_UINT64),
        "endTimeUnixNano": _int_json(_UINT64),
        "attributes": _attributes,
        "events": st.lists(_event, max_size=2),
        "links": st.lists(_link, max_size=2),
        "status": _status,
        "flags": st.integers(0, 2**10),
        "droppedAttributesCount": st.integers(0, 5),
        "traceState": st.sampled_from(["", "vendor=x", "a=1,b=2"]),
        "unknownField": st.one_of(_TEXT, st.just({"deep": [1, 2]})),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True)):
        span[key] = draw(optional[key])
    if draw(st.booleans()):
        span[draw(st.sampled_from(sorted(span)))] = None
    return span


_resource_spans = st.fixed_dictionaries(
    {
        "scopeSpans": st.lists(
            st.fixed_dictionaries(
                {"spans": st.lists(_span(), max_size=3)},
                optional={
                    "scope": st.fixed_dictionaries(
                        {"name": _TEXT}, optional={"version": _TEXT, "attributes": _attributes}
                    ),
                    "schemaUrl": _TEXT,
                },
            ),
            max_size=2,
        )
    },
    optional={"resource": st.fixed_dictionaries({"attributes": _attributes}), "schemaUrl": _TEXT},
)
_log_record = st.fixed_dictionaries(
    {},
    optional={
        "timeUnixNano": _int_json(_UINT64),
        "observedTimeUnixNano": _int_json(_UINT64),
        "severityNumber": st.one_of(st.integers(0, 30), st.sampled_from(["SEVERITY_NUMBER_INFO", "X"])),
        "severityText": _TEXT,
        "body": _any_value,
        "attributes": _attributes,
        "traceId": _hex_or_base64(16),
        "spanId": _hex_or_base64(8),
        "flags": st.integers(0, 300),
        "eventName": _TEXT,
    },
)
_resource_logs = st.fixed_dictionaries(
    {
        "scopeLogs": st.lists(
            st.fixed_dictionaries({"logRecords": st.lists(_log_record, max_size=3)}), max_size=2
        )
    },
    optional={"resource": st.fixed_dictionaries({"attributes": _attributes})},
)


@PARITY
@given(st.lists(_resource_spans, min_size=1, max_size=2), st.lists(_resource_logs, max_size=2))
def test_generated_documents_read_the_same(resource_spans: list[Any], resource_logs: list[Any]) -> None:
    """Documents using every corner of the mapping read to the same spans and log records."""
    lines = [json.dumps({"resourceSpans": resource_spans})]
    if resource_logs:
        lines.append(json.dumps({"resourceLogs": resource_logs}))
    new, old = read_both("\n".join(lines).encode())
    assert new == old


_json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**65), max_value=2**65),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(
        ["", "0" * 32, "ff" * 8, "AAAA", "SPAN_KIND_CLIENT", "1e3", "NaN", " 3", "[x]", "\ud800"]
    ),
)
_json_values = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=10,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, child in node.items():
            found.extend(_paths(child, (*prefix, key)))
    elif isinstance(node, list):
        for index, child in enumerate(node):
            found.extend(_paths(child, (*prefix, index)))
    return found


def _mutated(document: Any, path: tuple[Any, ...], mutation: str, value: Any) -> Any:
    result = copy.deepcopy(document)
    if not path:
        return value
    parent = result
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if mutation == "delete":
        del parent[last]
    elif mutation == "wrap":
        parent[last] = [parent[last]]
    elif mutation == "stringify":
        parent[last] = json.dumps(parent[last])
    elif mutation == "null":
        parent[last] = None
    elif mutation == "rename" and isinstance(parent, dict) and isinstance(last, str):
        snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in last)
        parent[snake] = parent.pop(last) if snake != last else parent[last]
    else:
        parent[last] = value
    return result


@PARITY
@given(st.data())
def test_mutated_documents_are_refused_or_read_alike(data: st.DataObject) -> None:
    """A generated document with one node replaced, deleted, wrapped, nulled, stringified or renamed
    is refused by both readers or read to the same telemetry by both."""
    document = {"resourceSpans": data.draw(st.lists(_resource_spans, min_size=1, max_size=1))}
    if data.draw(st.booleans()):
        document = {"resourceLogs": data.draw(st.lists(_resource_logs, min_size=1, max_size=1))}
    path = data.draw(st.sampled_from(_paths(document)))
    mutation = data.draw(st.sampled_from(["replace", "delete", "wrap", "stringify", "null", "rename"]))
    value = data.draw(_json_values)
    mutated = _mutated(document, path, mutation, value)
    new, old = read_both(json.dumps(mutated).encode())
    assert new == old


def test_a_character_beyond_the_bmp_beside_an_unpaired_surrogate_reads_alike() -> None:
    """json.dumps writes 𐀀 as an escaped surrogate pair: only the unpaired one beside it is refused."""
    record = {"timeUnixNano": 0, "eventName": "\U00010000", "attributes": ["\ud800"]}
    document = {"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}
    new, old = read_both(json.dumps(document).encode())
    assert new == old
    assert "\U00010000" in repr(new)


_OTLP_KEYS = [
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
    "boolValue",
    "bytesValue",
    "arrayValue",
    "kvlistValue",
    "values",
    "traceId",
    "spanId",
    "parentSpanId",
    "trace_id",
    "name",
    "kind",
    "startTimeUnixNano",
    "events",
    "links",
    "status",
    "code",
    "message",
    "flags",
    "scope",
    "resourceLogs",
    "scopeLogs",
    "logRecords",
    "body",
    "severityNumber",
]
_otlp_shaped = st.recursive(
    _json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.sampled_from(_OTLP_KEYS), children, max_size=4)
    ),
    max_leaves=30,
)


@PARITY
@given(st.one_of(_otlp_shaped, st.builds(lambda v: {"resourceSpans": [v]}, _otlp_shaped)))
def test_odd_shapes_are_refused_or_read_alike(document: Any) -> None:
    """Arbitrary JSON built from OTLP's field names: refused by both readers or read alike."""
    new, old = read_both(json.dumps(document).encode())
    assert new == old

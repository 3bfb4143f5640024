"""Decoded OTLP/JSON ``resourceSpans`` entries into SDK spans, and the reading of the resource and
scope groups that ``resourceLogs`` entries share (log records: :mod:`._json_logs`).

Each entry is read field by field from the ``json.loads`` output, by protobuf's JSON mapping as
:mod:`._json_values` describes it, and built by the same function that builds spans from protobuf
messages (:func:`~._convert.build_span`), so an entry becomes the same telemetry as through
``json_format.ParseDict`` and the proto conversion.

Ids are read by the one id codec (:func:`~._ids.id_bytes`): hex or base64 of exactly their size, in
every place OTLP has them and in unknown fields too, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeAlias, TypeVar

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AnyValue as SdkAnyValue

from otel_shapecheck.otlp._convert import EventFields, LinkFields, build_span
from otel_shapecheck.otlp._ids import id_bytes
from otel_shapecheck.otlp._json_values import (
    UINT32,
    UINT64,
    attributes,
    enum,
    integer,
    message_items,
    raw_bytes,
    repeated,
    string,
    strings,
    unknown_field,
)

_Item = TypeVar("_Item")


def field_names(*pairs: str) -> dict[str, str]:
    """Field names as JSON writes them and as the ``.proto`` does (both accepted), to the latter."""
    return {name: proto for proto in pairs for name in (proto, _camel(proto))}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_RESOURCE_SPANS = field_names("resource", "scope_spans", "schema_url")
_RESOURCE = field_names("attributes", "dropped_attributes_count", "entity_refs")
_ENTITY_REF = field_names("schema_url", "type", "id_keys", "description_keys")
_SCOPE_SPANS = field_names("scope", "spans", "schema_url")
_SCOPE = field_names("name", "version", "attributes", "dropped_attributes_count")
_SPAN = field_names(
    "trace_id",
    "span_id",
    "trace_state",
    "parent_span_id",
    "flags",
    "name",
    "kind",
    "start_time_unix_nano",
    "end_time_unix_nano",
    "attributes",
    "dropped_attributes_count",
    "events",
    "dropped_events_count",
    "links",
    "dropped_links_count",
    "status",
)
_EVENT = field_names("time_unix_nano", "name", "attributes", "dropped_attributes_count")
_LINK = field_names("trace_id", "span_id", "trace_state", "attributes", "dropped_attributes_count", "flags")
_STATUS = field_names("message", "code")
_IDS = frozenset({"traceId", "spanId", "parentSpanId"})
"""Id fields by their JSON names: read by the id codec. By their ``.proto`` names they are plain bytes."""

_SPAN_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_NULL_AS: dict[str, Any] = {
    **dict.fromkeys(
        ("attributes", "events", "links", "spans", "scope_spans", "scope_logs", "log_records"), ()
    ),
    **dict.fromkeys(("entity_refs", "id_keys", "description_keys"), ()),
    **dict.fromkeys(("trace_id", "span_id", "parent_span_id", "trace_state", "name", "version"), ""),
    **dict.fromkeys(("schema_url", "type", "message", "severity_text", "event_name"), ""),
    **dict.fromkeys(("flags", "kind", "code", "severity_number", "dropped_attributes_count"), 0),
    **dict.fromkeys(("dropped_events_count", "dropped_links_count"), 0),
    **dict.fromkeys(("time_unix_nano", "observed_time_unix_nano"), 0),
    **dict.fromkeys(("start_time_unix_nano", "end_time_unix_nano"), 0),
    **dict.fromkeys(("resource", "scope", "status", "body"), {}),
}
"""What a field set to ``null`` reads as: the JSON of its default (protobuf clears the field)."""


def known_fields(value: Any, names: dict[str, str], where: str, depth: int) -> Iterator[tuple[str, str, Any]]:
    """``(field, JSON name, value)`` for each known field of a message, in order (``null`` as the
    default, so a later name of a field overrides an earlier one as protobuf does); unknown fields are
    checked and skipped."""
    for name, item in message_items(value, names, where, depth):
        field = names.get(name)
        if field is None:
            unknown_field(name, item, where)
        else:
            yield field, name, (_NULL_AS[field] if item is None else item)


def _list(value: Any, where: str) -> list[Any]:
    return [] if value == () else repeated(value, where)


def read_id(name: str, value: Any, where: str) -> bytes:
    """An id field by the id codec under its JSON name; under its ``.proto`` name, plain bytes."""
    return id_bytes(name, value) if name in _IDS else raw_bytes(value, where)


def spans_from_json(value: Any, source: str, number: int) -> list[ReadableSpan]:
    """The SDK spans of one decoded ``ResourceSpans`` entry.

    The whole entry is read before any span is built, as protobuf parses a message before it is
    converted: a span without ids is reported only when nothing else in the entry is wrong.

    Raises:
        InvalidOtlp: the entry is not what protobuf's JSON mapping reads as ``ResourceSpans``.
        InvalidId: an id that is not hex or base64 of its size.
        UnreadableTraceFile: a span without a trace id or span id.
    """
    sdk_resource, scopes = resource_group(value, _RESOURCE_SPANS, "resourceSpans", "scopeSpans", _scope_spans)
    return [
        build_span(*fields, sdk_resource, scope, source, number)
        for scope, spans in scopes
        for fields in spans
    ]


def _resource(value: Any, where: str) -> dict[str, SdkAnyValue]:
    read: dict[str, SdkAnyValue] = {}
    for field, _, item in known_fields(value, _RESOURCE, where, 2):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 3) if item != () else {}
        elif field == "dropped_attributes_count":
            integer(item, UINT32, f"{where}.droppedAttributesCount")
        else:
            for ref in _list(item, f"{where}.entityRefs"):
                for ref_field, _, ref_item in known_fields(ref, _ENTITY_REF, f"{where}.entityRefs", 3):
                    if ref_field in ("schema_url", "type"):
                        string(ref_item, f"{where}.entityRefs.{ref_field}")
                    elif ref_item != ():
                        strings(ref_item, f"{where}.entityRefs.{ref_field}")
    return read


def resource_group(
    value: Any,
    names: dict[str, str],
    where: str,
    scopes_field: str,
    read_scope: Callable[[Any], tuple[InstrumentationScope, list[_Item]]],
) -> tuple[Resource, list[tuple[InstrumentationScope, list[_Item]]]]:
    """A ``ResourceSpans`` / ``ResourceLogs`` entry: its resource, each scope group read by ``read_scope``."""
    resource: dict[str, SdkAnyValue] = {}
    schema_url = ""
    scopes: list[tuple[InstrumentationScope, list[_Item]]] = []
    for field, _, item in known_fields(value, names, where, 1):
        if field == "resource":
            resource = _resource(item, f"{where}.resource")
        elif field == "schema_url":
            schema_url = string(item, f"{where}.schemaUrl")
        else:
            scopes = [read_scope(group) for group in _list(item, f"{where}.{scopes_field}")]
    return Resource(resource, schema_url), scopes


def scope_group(
    value: Any, names: dict[str, str], where: str, items_field: str, read_item: Callable[[Any], _Item]
) -> tuple[InstrumentationScope, list[_Item]]:
    """A ``ScopeSpans`` / ``ScopeLogs`` entry: its scope, and each item read by ``read_item``."""
    scope: tuple[str, str, dict[str, SdkAnyValue]] = ("", "", {})
    schema_url = ""
    items: list[_Item] = []
    for field, _, item in known_fields(value, names, where, 2):
        if field == "scope":
            scope = _scope(item, f"{where}.scope")
        elif field == "schema_url":
            schema_url = string(item, f"{where}.schemaUrl")
        else:
            items = [read_item(entry) for entry in _list(item, f"{where}.{items_field}")]
    name, version, read = scope
    return InstrumentationScope(name, version, schema_url, read or None), items


def _scope_spans(value: Any) -> tuple[InstrumentationScope, list[SpanFields]]:
    return scope_group(value, _SCOPE_SPANS, "resourceSpans.scopeSpans", "spans", _span)


def _scope(value: Any, where: str) -> tuple[str, str, dict[str, SdkAnyValue]]:
    name = version = ""
    read: dict[str, SdkAnyValue] = {}
    for field, _, item in known_fields(value, _SCOPE, where, 3):
        if field == "name":
            name = string(item, f"{where}.name")
        elif field == "version":
            version = string(item, f"{where}.version")
        elif field == "attributes":
            read = attributes(item, f"{where}.attributes", 4) if item != () else {}
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return name, version, read


def _span(value: Any) -> SpanFields:
    """One span's fields, as :func:`~._convert.build_span` takes them (up to the resource)."""
    where = "span"
    trace_id = span_id = parent_span_id = b""
    trace_state = name = status_message = ""
    flags = kind = start = end = status_code = 0
    dropped = [0, 0, 0]
    read: dict[str, SdkAnyValue] = {}
    events: list[EventFields] = []
    links: list[LinkFields] = []
    for json_name, given in message_items(value, _SPAN, where, 3):  # known_fields, inlined for the hot loop
        field = _SPAN.get(json_name)
        if field is None:
            unknown_field(json_name, given, where)
            continue
        item = _NULL_AS[field] if given is None else given
        if field == "attributes":
            read = attributes(item, "span.attributes", 4) if item != () else {}
        elif field == "trace_id":
            trace_id = read_id(json_name, item, "span.traceId")
        elif field == "span_id":
            span_id = read_id(json_name, item, "span.spanId")
        elif field == "parent_span_id":
            parent_span_id = read_id(json_name, item, "span.parentSpanId")
        elif field == "name":
            name = string(item, "span.name")
        elif field == "kind":
            known = enum(item, _SPAN_KINDS, "span.kind")
            if known is not None:
                kind = known
        elif field == "start_time_unix_nano":
            start = integer(item, UINT64, "span.startTimeUnixNano")
        elif field == "end_time_unix_nano":
            end = integer(item, UINT64, "span.endTimeUnixNano")
        elif field == "flags":
            flags = integer(item, UINT32, "span.flags")
        elif field == "trace_state":
            trace_state = string(item, "span.traceState")
        elif field == "events":
            events = [_event(event) for event in _list(item, "span.events")]
        elif field == "links":
            links = [_link(link) for link in _list(item, "span.links")]
        elif field == "status":
            status_code, status_message = _status(item)
        else:  # the three dropped counts
            index = _DROPPED.index(field)
            dropped[index] = integer(item, UINT32, f"span.{json_name}")
    return (
        name,
        trace_id,
        span_id,
        trace_state,
        parent_span_id,
        flags,
        kind,
        start,
        end,
        read,
        (dropped[0], dropped[1], dropped[2]),
        events,
        links,
        status_code,
        status_message,
    )


_DROPPED = ("dropped_attributes_count", "dropped_events_count", "dropped_links_count")

SpanFields: TypeAlias = (
    "tuple[str, bytes, bytes, str, bytes, int, int, int, int, dict[str, SdkAnyValue], tuple[int, int, int],"
    " list[EventFields], list[LinkFields], int, str]"
)
"""A span's fields in :func:`~._convert.build_span`'s order, up to the resource."""


def _event(value: Any) -> EventFields:
    where = "span.events"
    name = ""
    time = 0
    read: dict[str, SdkAnyValue] = {}
    for field, _, item in known_fields(value, _EVENT, where, 4):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 5) if item != () else {}
        elif field == "name":
            name = string(item, f"{where}.name")
        elif field == "time_unix_nano":
            time = integer(item, UINT64, f"{where}.timeUnixNano")
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return name, read, time


def _link(value: Any) -> LinkFields:
    where = "span.links"
    trace_id = span_id = b""
    trace_state = ""
    flags = 0
    read: dict[str, SdkAnyValue] = {}
    for field, json_name, item in known_fields(value, _LINK, where, 4):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 5) if item != () else {}
        elif field == "trace_id":
            trace_id = read_id(json_name, item, f"{where}.traceId")
        elif field == "span_id":
            span_id = read_id(json_name, item, f"{where}.spanId")
        elif field == "trace_state":
            trace_state = string(item, f"{where}.traceState")
        elif field == "flags":
            flags = integer(item, UINT32, f"{where}.flags")
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return trace_id, span_id, trace_state, flags, read


def _status(value: Any) -> tuple[int, str]:
    code, message = 0, ""
    for field, _, item in known_fields(value, _STATUS, "span.status", 4):
        if field == "message":
            message = string(item, "span.status.message")
        else:
            known = enum(item, _STATUS_CODES, "span.status.code")
            if known is not None:
                code = known
    return code, message

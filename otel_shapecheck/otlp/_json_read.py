"""Decoded OTLP/JSON ``resourceSpans`` and ``resourceLogs`` entries into SDK spans and log records.

Each entry is read field by field from the ``json.loads`` output, by protobuf's JSON mapping as
:mod:`._json_values` describes it, and built by the same functions that build spans and log records
from protobuf messages (:func:`~._convert.build_span`, :func:`~._convert.build_log_record`), so an
entry becomes the same telemetry as through ``json_format.ParseDict`` and the proto conversion.

Ids are read by the one id codec (:func:`~._ids.id_bytes`): hex or base64 of exactly their size, in
every place OTLP has them and in unknown fields too, as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeAlias, TypeVar

from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AnyValue as SdkAnyValue

from otel_shapecheck.otlp._convert import EventFields, LinkFields, build_log_record, build_span
from otel_shapecheck.otlp._ids import id_bytes
from otel_shapecheck.otlp._json_values import (
    UINT32,
    UINT64,
    any_value,
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


def _names(*pairs: str) -> dict[str, str]:
    """Field names as JSON writes them and as the ``.proto`` does (both accepted), to the latter."""
    return {name: proto for proto in pairs for name in (proto, _camel(proto))}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


_RESOURCE_SPANS = _names("resource", "scope_spans", "schema_url")
_RESOURCE_LOGS = _names("resource", "scope_logs", "schema_url")
_RESOURCE = _names("attributes", "dropped_attributes_count", "entity_refs")
_ENTITY_REF = _names("schema_url", "type", "id_keys", "description_keys")
_SCOPE_SPANS = _names("scope", "spans", "schema_url")
_SCOPE_LOGS = _names("scope", "log_records", "schema_url")
_SCOPE = _names("name", "version", "attributes", "dropped_attributes_count")
_SPAN = _names("trace_id", "span_id", "trace_state", "parent_span_id", "flags", "name", "kind") | _names(
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
_EVENT = _names("time_unix_nano", "name", "attributes", "dropped_attributes_count")
_LINK = _names("trace_id", "span_id", "trace_state", "attributes", "dropped_attributes_count", "flags")
_STATUS = _names("message", "code")
_LOG_RECORD = _names(
    "time_unix_nano", "observed_time_unix_nano", "severity_number", "severity_text"
) | _names("body", "attributes", "dropped_attributes_count", "flags", "trace_id", "span_id", "event_name")
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
_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_SEVERITIES = {"SEVERITY_NUMBER_UNSPECIFIED": 0} | {
    f"SEVERITY_NUMBER_{level}{'' if step == 1 else step}": 4 * index + step
    for index, level in enumerate(_LEVELS)
    for step in range(1, 5)
}


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


def _fields(value: Any, names: dict[str, str], where: str, depth: int) -> Iterator[tuple[str, str, Any]]:
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


def _id(name: str, value: Any, where: str) -> bytes:
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
    sdk_resource, scopes = _resource_group(
        value, _RESOURCE_SPANS, "resourceSpans", "scopeSpans", _scope_spans
    )
    return [
        build_span(*fields, sdk_resource, scope, source, number)
        for scope, spans in scopes
        for fields in spans
    ]


def _resource(value: Any, where: str) -> dict[str, SdkAnyValue]:
    read: dict[str, SdkAnyValue] = {}
    for field, _, item in _fields(value, _RESOURCE, where, 2):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 3) if item != () else {}
        elif field == "dropped_attributes_count":
            integer(item, UINT32, f"{where}.droppedAttributesCount")
        else:
            for ref in _list(item, f"{where}.entityRefs"):
                for ref_field, _, ref_item in _fields(ref, _ENTITY_REF, f"{where}.entityRefs", 3):
                    if ref_field in ("schema_url", "type"):
                        string(ref_item, f"{where}.entityRefs.{ref_field}")
                    elif ref_item != ():
                        strings(ref_item, f"{where}.entityRefs.{ref_field}")
    return read


def _resource_group(
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
    for field, _, item in _fields(value, names, where, 1):
        if field == "resource":
            resource = _resource(item, f"{where}.resource")
        elif field == "schema_url":
            schema_url = string(item, f"{where}.schemaUrl")
        else:
            scopes = [read_scope(group) for group in _list(item, f"{where}.{scopes_field}")]
    return Resource(resource, schema_url), scopes


def _scope_group(
    value: Any, names: dict[str, str], where: str, items_field: str, read_item: Callable[[Any], _Item]
) -> tuple[InstrumentationScope, list[_Item]]:
    """A ``ScopeSpans`` / ``ScopeLogs`` entry: its scope, and each item read by ``read_item``."""
    scope: tuple[str, str, dict[str, SdkAnyValue]] = ("", "", {})
    schema_url = ""
    items: list[_Item] = []
    for field, _, item in _fields(value, names, where, 2):
        if field == "scope":
            scope = _scope(item, f"{where}.scope")
        elif field == "schema_url":
            schema_url = string(item, f"{where}.schemaUrl")
        else:
            items = [read_item(entry) for entry in _list(item, f"{where}.{items_field}")]
    name, version, read = scope
    return InstrumentationScope(name, version, schema_url, read or None), items


def _scope_spans(value: Any) -> tuple[InstrumentationScope, list[SpanFields]]:
    return _scope_group(value, _SCOPE_SPANS, "resourceSpans.scopeSpans", "spans", _span)


def _scope(value: Any, where: str) -> tuple[str, str, dict[str, SdkAnyValue]]:
    name = version = ""
    read: dict[str, SdkAnyValue] = {}
    for field, _, item in _fields(value, _SCOPE, where, 3):
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
    for json_name, given in message_items(value, _SPAN, where, 3):  # _fields, inlined for the hot loop
        field = _SPAN.get(json_name)
        if field is None:
            unknown_field(json_name, given, where)
            continue
        item = _NULL_AS[field] if given is None else given
        if field == "attributes":
            read = attributes(item, "span.attributes", 4) if item != () else {}
        elif field == "trace_id":
            trace_id = _id(json_name, item, "span.traceId")
        elif field == "span_id":
            span_id = _id(json_name, item, "span.spanId")
        elif field == "parent_span_id":
            parent_span_id = _id(json_name, item, "span.parentSpanId")
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
    for field, _, item in _fields(value, _EVENT, where, 4):
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
    for field, json_name, item in _fields(value, _LINK, where, 4):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 5) if item != () else {}
        elif field == "trace_id":
            trace_id = _id(json_name, item, f"{where}.traceId")
        elif field == "span_id":
            span_id = _id(json_name, item, f"{where}.spanId")
        elif field == "trace_state":
            trace_state = string(item, f"{where}.traceState")
        elif field == "flags":
            flags = integer(item, UINT32, f"{where}.flags")
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return trace_id, span_id, trace_state, flags, read


def _status(value: Any) -> tuple[int, str]:
    code, message = 0, ""
    for field, _, item in _fields(value, _STATUS, "span.status", 4):
        if field == "message":
            message = string(item, "span.status.message")
        else:
            known = enum(item, _STATUS_CODES, "span.status.code")
            if known is not None:
                code = known
    return code, message


def log_records_from_json(
    value: Any, rejected: Callable[[str], None] | None = None
) -> list[ReadWriteLogRecord]:
    """The SDK log records of one decoded ``ResourceLogs`` entry, with resource, scope and parent span.

    A record the SDK cannot represent (an unknown severity number) raises ``ValueError``; with
    ``rejected`` given, the problem is handed to it instead and the record skipped.

    Raises:
        InvalidOtlp: the entry is not what protobuf's JSON mapping reads as ``ResourceLogs``.
        InvalidId: an id that is not hex or base64 of its size.
    """
    sdk_resource, scopes = _resource_group(value, _RESOURCE_LOGS, "resourceLogs", "scopeLogs", _scope_logs)
    built: list[ReadWriteLogRecord] = []
    for scope, records in scopes:
        for record in records:
            try:
                api_record = build_log_record(*record)
            except ValueError as error:
                if rejected is None:
                    raise
                rejected(f"log record not readable ({error})")
                continue
            built.append(ReadWriteLogRecord(api_record, resource=sdk_resource, instrumentation_scope=scope))
    return built


def _scope_logs(value: Any) -> tuple[InstrumentationScope, list[tuple[Any, ...]]]:
    return _scope_group(value, _SCOPE_LOGS, "resourceLogs.scopeLogs", "logRecords", _log_record)


def _log_record(value: Any) -> tuple[Any, ...]:
    where = "logRecord"
    time = observed = flags = severity = 0
    trace_id = span_id = b""
    severity_text = event_name = ""
    body: SdkAnyValue = None
    read: dict[str, SdkAnyValue] = {}
    for field, json_name, item in _fields(value, _LOG_RECORD, where, 3):
        if field == "attributes":
            read = attributes(item, f"{where}.attributes", 4) if item != () else {}
        elif field == "body":
            body = any_value(item, f"{where}.body", 4)
        elif field == "time_unix_nano":
            time = integer(item, UINT64, f"{where}.timeUnixNano")
        elif field == "observed_time_unix_nano":
            observed = integer(item, UINT64, f"{where}.observedTimeUnixNano")
        elif field == "severity_number":
            known = enum(item, _SEVERITIES, f"{where}.severityNumber")
            if known is not None:
                severity = known
        elif field == "severity_text":
            severity_text = string(item, f"{where}.severityText")
        elif field == "event_name":
            event_name = string(item, f"{where}.eventName")
        elif field == "flags":
            flags = integer(item, UINT32, f"{where}.flags")
        elif field == "trace_id":
            trace_id = _id(json_name, item, f"{where}.traceId")
        elif field == "span_id":
            span_id = _id(json_name, item, f"{where}.spanId")
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return time, observed, trace_id, span_id, flags, severity, severity_text, body, read, event_name

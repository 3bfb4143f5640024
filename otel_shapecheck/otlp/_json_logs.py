"""Decoded OTLP/JSON ``resourceLogs`` entries into SDK log records.

Read field by field as :mod:`._json_read` reads spans, through the same resource and scope groups, and
built by the same function that builds log records from protobuf messages
(:func:`~._convert.build_log_record`), so an entry becomes the same records as through
``json_format.ParseDict`` and the proto conversion.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.util.types import AnyValue as SdkAnyValue

from otel_shapecheck.otlp._convert import build_log_record
from otel_shapecheck.otlp._json_read import field_names, known_fields, read_id, resource_group, scope_group
from otel_shapecheck.otlp._json_values import UINT32, UINT64, any_value, attributes, enum, integer, string

_RESOURCE_LOGS = field_names("resource", "scope_logs", "schema_url")
_SCOPE_LOGS = field_names("scope", "log_records", "schema_url")
_LOG_RECORD = field_names(
    "time_unix_nano", "observed_time_unix_nano", "severity_number", "severity_text"
) | field_names(
    "body", "attributes", "dropped_attributes_count", "flags", "trace_id", "span_id", "event_name"
)
_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_SEVERITIES = {"SEVERITY_NUMBER_UNSPECIFIED": 0} | {
    f"SEVERITY_NUMBER_{level}{'' if step == 1 else step}": 4 * index + step
    for index, level in enumerate(_LEVELS)
    for step in range(1, 5)
}


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
    sdk_resource, scopes = resource_group(value, _RESOURCE_LOGS, "resourceLogs", "scopeLogs", _scope_logs)
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
    return scope_group(value, _SCOPE_LOGS, "resourceLogs.scopeLogs", "logRecords", _log_record)


def _log_record(value: Any) -> tuple[Any, ...]:
    where = "logRecord"
    time = observed = flags = severity = 0
    trace_id = span_id = b""
    severity_text = event_name = ""
    body: SdkAnyValue = None
    read: dict[str, SdkAnyValue] = {}
    for field, json_name, item in known_fields(value, _LOG_RECORD, where, 3):
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
            trace_id = read_id(json_name, item, f"{where}.traceId")
        elif field == "span_id":
            span_id = read_id(json_name, item, f"{where}.spanId")
        else:
            integer(item, UINT32, f"{where}.droppedAttributesCount")
    return time, observed, trace_id, span_id, flags, severity, severity_text, body, read, event_name

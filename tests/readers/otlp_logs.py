"""OTLP/JSON log records back into ``opentelemetry._logs.LogRecord`` objects, for fixture-based tests.

The fixtures are written with the SDK's OTLP protobuf encoder and protobuf's JSON mapping, so they are
read back through the same ``opentelemetry.proto`` messages. Arrays become tuples, as the SDK stores
them on live log records.
"""

from __future__ import annotations

import json
from pathlib import Path

from google.protobuf import json_format
from opentelemetry._logs import LogRecord
from opentelemetry.context import Context
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context
from opentelemetry.util.types import AnyValue as PythonValue


def load_log_records(path: Path) -> list[LogRecord]:
    """Every log record of an OTLP/JSON logs export, in file order."""
    request = json_format.ParseDict(json.loads(path.read_text(encoding="utf-8")), ExportLogsServiceRequest())
    records: list[LogRecord] = []
    for resource_logs in request.resource_logs:
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                records.append(
                    LogRecord(
                        timestamp=record.time_unix_nano or None,
                        observed_timestamp=record.observed_time_unix_nano or None,
                        context=_context(record.trace_id, record.span_id),
                        body=_value(record.body) if record.HasField("body") else None,
                        attributes=_attributes(record.attributes),
                        event_name=record.event_name or None,
                    )
                )
    return records


def _context(trace_id: bytes, span_id: bytes) -> Context:
    span_context = SpanContext(
        trace_id=int.from_bytes(trace_id, "big"),
        span_id=int.from_bytes(span_id, "big"),
        is_remote=False,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    return set_span_in_context(NonRecordingSpan(span_context))


def _attributes(key_values: list[KeyValue]) -> dict[str, PythonValue]:
    return {kv.key: _value(kv.value) for kv in key_values}


def _value(value: AnyValue) -> PythonValue:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return _attributes(list(value.kvlist_value.values))
    if kind is None:
        return None
    scalar: PythonValue = getattr(value, kind)
    return scalar

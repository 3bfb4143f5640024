"""A real OTLP receiver on loopback for tests: the official gRPC services and an HTTP/protobuf endpoint.

Both listen on 127.0.0.1 with ports chosen by the OS. The receiver keeps what it was sent, flattened
into plain records (hex ids, Python attribute values), and ``wait_for`` blocks on a condition variable
until a predicate over them holds. It can be told to answer slowly or with an error, and
:func:`unused_endpoint` gives an address where nothing listens (a receiver that is down).

Usage::

    with OTLPReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True)
        ...
        assert receiver.wait_for(lambda r: len(r.spans) >= 2)
"""

from __future__ import annotations

import gzip
import socket
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2, metrics_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

_HTTP_TO_GRPC_STATUS = {
    400: grpc.StatusCode.INVALID_ARGUMENT,
    429: grpc.StatusCode.RESOURCE_EXHAUSTED,
    500: grpc.StatusCode.INTERNAL,
    503: grpc.StatusCode.UNAVAILABLE,
}


@dataclass(frozen=True)
class ReceivedSpan:
    """One span as it arrived, with ids as lowercase hex."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    attributes: dict[str, Any]
    events: tuple[tuple[str, dict[str, Any]], ...]
    resource: dict[str, Any]
    scope: str
    transport: str


@dataclass(frozen=True)
class ReceivedLogRecord:
    """One log record as it arrived, with ids as lowercase hex."""

    trace_id: str
    span_id: str
    event_name: str
    severity_number: int
    attributes: dict[str, Any]
    body: Any
    resource: dict[str, Any]
    scope: str
    transport: str


@dataclass(frozen=True)
class ReceivedMetricPoint:
    """One data point of a metric as it arrived: a sum's value, or a histogram's count and sum."""

    name: str
    unit: str
    attributes: dict[str, Any]
    value: float
    """A sum's value; for a histogram, its count."""
    total: float | None
    """For a histogram, the sum of its values; ``None`` for a sum."""
    resource: dict[str, Any]
    transport: str


@dataclass
class _Behaviour:
    delay_seconds: float = 0.0
    error_status: int | None = None


@dataclass
class _Received:
    spans: list[ReceivedSpan] = field(default_factory=list)
    log_records: list[ReceivedLogRecord] = field(default_factory=list)
    metric_points: list[ReceivedMetricPoint] = field(default_factory=list)
    requests: int = 0
    """Trace and log export requests (metric exports are not counted: they come on their own schedule)."""


def any_value(value: AnyValue) -> Any:
    """The Python value of an OTLP ``AnyValue`` (arrays as tuples, kvlists as dicts)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return tuple(any_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return key_values(value.kvlist_value.values)
    return getattr(value, kind)


def key_values(pairs: Iterable[KeyValue]) -> dict[str, Any]:
    """OTLP attributes as a dict."""
    return {pair.key: any_value(pair.value) for pair in pairs}


def unused_endpoint() -> tuple[str, str]:
    """A ``(grpc_endpoint, http_base_url)`` pair on a loopback port where nothing listens."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"127.0.0.1:{port}", f"http://127.0.0.1:{port}"


class OTLPReceiver:
    """A loopback OTLP receiver (traces, logs, metrics; gRPC and HTTP/protobuf) that records what it gets."""

    def __init__(self, *, delay_seconds: float = 0.0, error_status: int | None = None) -> None:
        self._behaviour = _Behaviour(delay_seconds, error_status)
        self._received = _Received()
        self._condition = threading.Condition()
        self._stopping = threading.Event()
        self._grpc_server: grpc.Server | None = None
        self._http_server: ThreadingHTTPServer | None = None
        self._http_thread: threading.Thread | None = None
        self.grpc_port = 0
        self.http_port = 0

    # Lifecycle ------------------------------------------------------------------------------------

    def start(self) -> OTLPReceiver:
        """Start both servers on free loopback ports."""
        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(_TraceService(self), server)
        logs_service_pb2_grpc.add_LogsServiceServicer_to_server(_LogsService(self), server)
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(_MetricsService(self), server)
        self.grpc_port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        self._grpc_server = server
        self._http_server = ThreadingHTTPServer(("127.0.0.1", 0), _http_handler(self))
        self._http_server.daemon_threads = True
        self.http_port = self._http_server.server_address[1]
        self._http_thread = threading.Thread(
            target=self._http_server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._http_thread.start()
        return self

    def stop(self) -> None:
        """Stop both servers, releasing any request held by ``delay_seconds``."""
        self._stopping.set()
        if self._grpc_server is not None:
            self._grpc_server.stop(grace=None).wait()
            self._grpc_server = None
        if self._http_server is not None:
            self._http_server.shutdown()
            self._http_server.server_close()
            self._http_server = None

    def __enter__(self) -> OTLPReceiver:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # Addresses ------------------------------------------------------------------------------------

    @property
    def grpc_endpoint(self) -> str:
        """``host:port`` for the gRPC exporters (with ``insecure=True``)."""
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def http_endpoint(self) -> str:
        """Base URL of the HTTP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` style)."""
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def traces_url(self) -> str:
        """Full URL for the HTTP span exporter's ``endpoint=``."""
        return f"{self.http_endpoint}/v1/traces"

    @property
    def logs_url(self) -> str:
        """Full URL for the HTTP log exporter's ``endpoint=``."""
        return f"{self.http_endpoint}/v1/logs"

    # Behaviour ------------------------------------------------------------------------------------

    def behave(self, *, delay_seconds: float = 0.0, error_status: int | None = None) -> None:
        """Change how the receiver answers from now on (slow, failing, or normal)."""
        self._behaviour = _Behaviour(delay_seconds, error_status)

    # What arrived ---------------------------------------------------------------------------------

    @property
    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far."""
        with self._condition:
            return list(self._received.spans)

    @property
    def log_records(self) -> list[ReceivedLogRecord]:
        """Every log record received so far."""
        with self._condition:
            return list(self._received.log_records)

    @property
    def metric_points(self) -> list[ReceivedMetricPoint]:
        """Every metric data point received so far (each export of a cumulative metric repeats it)."""
        with self._condition:
            return list(self._received.metric_points)

    @property
    def requests(self) -> int:
        """Export requests seen, including the ones answered with an error."""
        with self._condition:
            return self._received.requests

    def wait_for(self, predicate: Callable[[OTLPReceiver], bool], timeout: float = 10.0) -> bool:
        """Wait until ``predicate(self)`` holds; False if it still does not after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while not predicate(self):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(remaining)
            return True

    # Handling -------------------------------------------------------------------------------------

    def _take(self, transport: str, request: Any) -> int | None:
        """Record one request and return the error status to answer with, if any."""
        if isinstance(request, metrics_service_pb2.ExportMetricsServiceRequest):
            points = list(_flatten_metrics(request, transport))
            with self._condition:
                self._received.metric_points.extend(points)
                self._condition.notify_all()
            return None
        behaviour = self._behaviour
        with self._condition:
            self._received.requests += 1
            self._condition.notify_all()
        if behaviour.delay_seconds:
            self._stopping.wait(behaviour.delay_seconds)
        if behaviour.error_status is not None:
            return behaviour.error_status
        if isinstance(request, trace_service_pb2.ExportTraceServiceRequest):
            records: list[Any] = list(_flatten_spans(request, transport))
        else:
            records = list(_flatten_logs(request, transport))
        with self._condition:
            target = (
                self._received.spans
                if isinstance(request, trace_service_pb2.ExportTraceServiceRequest)
                else self._received.log_records
            )
            target.extend(records)
            self._condition.notify_all()
        return None


def _flatten_spans(
    request: trace_service_pb2.ExportTraceServiceRequest, transport: str
) -> Iterable[ReceivedSpan]:
    for resource_spans in request.resource_spans:
        resource = key_values(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield ReceivedSpan(
                    trace_id=span.trace_id.hex(),
                    span_id=span.span_id.hex(),
                    parent_span_id=span.parent_span_id.hex(),
                    name=span.name,
                    attributes=key_values(span.attributes),
                    events=tuple((event.name, key_values(event.attributes)) for event in span.events),
                    resource=resource,
                    scope=scope_spans.scope.name,
                    transport=transport,
                )


def _flatten_logs(
    request: logs_service_pb2.ExportLogsServiceRequest, transport: str
) -> Iterable[ReceivedLogRecord]:
    for resource_logs in request.resource_logs:
        resource = key_values(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                yield ReceivedLogRecord(
                    trace_id=record.trace_id.hex(),
                    span_id=record.span_id.hex(),
                    event_name=record.event_name,
                    severity_number=record.severity_number,
                    attributes=key_values(record.attributes),
                    body=any_value(record.body),
                    resource=resource,
                    scope=scope_logs.scope.name,
                    transport=transport,
                )


def _flatten_metrics(
    request: metrics_service_pb2.ExportMetricsServiceRequest, transport: str
) -> Iterable[ReceivedMetricPoint]:
    for resource_metrics in request.resource_metrics:
        resource = key_values(resource_metrics.resource.attributes)
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                kind = metric.WhichOneof("data")
                for point in getattr(metric, kind).data_points if kind else ():
                    histogram = kind == "histogram"
                    value = point.count if histogram else (point.as_int or point.as_double)
                    yield ReceivedMetricPoint(
                        name=metric.name,
                        unit=metric.unit,
                        attributes=key_values(point.attributes),
                        value=float(value),
                        total=float(point.sum) if histogram else None,
                        resource=resource,
                        transport=transport,
                    )


def _abort(context: Any, status: int) -> None:
    context.abort(_HTTP_TO_GRPC_STATUS.get(status, grpc.StatusCode.INTERNAL), f"told to fail ({status})")


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, receiver: OTLPReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - the generated service's name
        status = self._receiver._take("grpc", request)
        if status is not None:
            _abort(context, status)
        return trace_service_pb2.ExportTraceServiceResponse()


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, receiver: OTLPReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - the generated service's name
        status = self._receiver._take("grpc", request)
        if status is not None:
            _abort(context, status)
        return logs_service_pb2.ExportLogsServiceResponse()


class _MetricsService(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self, receiver: OTLPReceiver) -> None:
        self._receiver = receiver

    def Export(self, request: Any, context: Any) -> Any:  # noqa: N802 - the generated service's name
        self._receiver._take("grpc", request)
        return metrics_service_pb2.ExportMetricsServiceResponse()


_HTTP_ROUTES: dict[str, tuple[type[Any], type[Any]]] = {
    "/v1/traces": (trace_service_pb2.ExportTraceServiceRequest, trace_service_pb2.ExportTraceServiceResponse),
    "/v1/logs": (logs_service_pb2.ExportLogsServiceRequest, logs_service_pb2.ExportLogsServiceResponse),
    "/v1/metrics": (
        metrics_service_pb2.ExportMetricsServiceRequest,
        metrics_service_pb2.ExportMetricsServiceResponse,
    ),
}


def _http_handler(receiver: OTLPReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's hook name
            route = _HTTP_ROUTES.get(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if route is None:
                self._reply(404, b"")
                return
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            request_type, response_type = route
            status = receiver._take("http", request_type.FromString(body))
            if status is not None:
                self._reply(status, b"")
                return
            self._reply(200, response_type().SerializeToString())

        def _reply(self, status: int, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
            """Keep test output quiet."""

    return Handler

"""The gateway's OTLP/gRPC transport: the official trace and logs services of ``opentelemetry-proto``.

Answers follow the OTLP specification: success with ``partial_success`` when some items could not be
read, ``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` detail when the queue is full (the sender
retries after the suggested delay), ``INVALID_ARGUMENT`` for a request larger than the whole queue, and
``UNAVAILABLE`` while shutting down. gzip-compressed requests are decompressed by gRPC itself; a message
over the size limit is refused by gRPC with ``RESOURCE_EXHAUSTED`` ("Received message larger than max").
"""

from __future__ import annotations

import logging
from concurrent import futures
from typing import Any

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1 import logs_service_pb2, logs_service_pb2_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._decode import decode_log_records, decode_spans
from otel_shapecheck.gateway._gateway import ExportAnswer, Gateway

logger = logging.getLogger(__name__)

_STATUS_DETAILS_KEY = "grpc-status-details-bin"
# The Python OTLP exporter reads the retry delay from this key; the specification's place is the
# RetryInfo detail of the status, which every other SDK reads. Both are sent.
_RETRY_INFO_KEY = "google.rpc.retryinfo-bin"
_CODES: dict[Admission, tuple[grpc.StatusCode, int]] = {
    Admission.FULL: (grpc.StatusCode.RESOURCE_EXHAUSTED, code_pb2.RESOURCE_EXHAUSTED),
    Admission.TOO_LARGE: (grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    Admission.CLOSING: (grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
}


def start_grpc_server(
    gateway: Gateway, address: str, *, max_request_bytes: int, workers: int = 4
) -> tuple[grpc.Server, int]:
    """Serve both OTLP services on ``address`` (``host:port``, port 0 for any); returns the server and port.

    Raises:
        ValueError: the address cannot be bound.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shapecheck-gateway-grpc"),
        options=[
            ("grpc.max_receive_message_length", max_request_bytes),
            ("grpc.so_reuseport", 0),
        ],
        # Past this gRPC answers RESOURCE_EXHAUSTED itself, without retry information.
        maximum_concurrent_rpcs=workers * 16,
    )
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(  # type: ignore[no-untyped-call]
        _TraceService(gateway), server
    )
    logs_service_pb2_grpc.add_LogsServiceServicer_to_server(  # type: ignore[no-untyped-call]
        _LogsService(gateway), server
    )
    try:
        port = server.add_insecure_port(address)
    except RuntimeError as error:
        raise ValueError(f"--grpc {address!r}: cannot listen there ({error})") from None
    server.start()
    return server, port


class _TraceService(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def Export(  # noqa: N802 - the generated service's name
        self, request: trace_service_pb2.ExportTraceServiceRequest, context: grpc.ServicerContext
    ) -> trace_service_pb2.ExportTraceServiceResponse:
        answer = _handle(self._gateway, context, lambda: self._gateway.export_spans(decode_spans(request)))
        response = trace_service_pb2.ExportTraceServiceResponse()
        if answer.rejected:
            response.partial_success.rejected_spans = answer.rejected
            response.partial_success.error_message = answer.error_message
        return response


class _LogsService(logs_service_pb2_grpc.LogsServiceServicer):
    def __init__(self, gateway: Gateway) -> None:
        self._gateway = gateway

    def Export(  # noqa: N802 - the generated service's name
        self, request: logs_service_pb2.ExportLogsServiceRequest, context: grpc.ServicerContext
    ) -> logs_service_pb2.ExportLogsServiceResponse:
        answer = _handle(
            self._gateway, context, lambda: self._gateway.export_log_records(decode_log_records(request))
        )
        response = logs_service_pb2.ExportLogsServiceResponse()
        if answer.rejected:
            response.partial_success.rejected_log_records = answer.rejected
            response.partial_success.error_message = answer.error_message
        return response


def _handle(gateway: Gateway, context: grpc.ServicerContext, export: Any) -> ExportAnswer:
    """Run one export inside the gateway's request accounting; abort the call when it was refused."""
    if not gateway.budget.begin_request():
        _abort(context, Admission.CLOSING, "the gateway is shutting down; retry later", 1.0)
    try:
        answer: ExportAnswer = export()
    except Exception:  # a bug must not kill the server thread; the sender may retry
        logger.exception("Handling an OTLP/gRPC export request failed")
        context.abort(grpc.StatusCode.INTERNAL, "the gateway failed to handle the request")
    finally:
        gateway.budget.end_request()
    if answer.admission is not Admission.ACCEPTED:
        _abort(context, answer.admission, answer.error_message, answer.retry_after_seconds)
    return answer


def _abort(context: grpc.ServicerContext, admission: Admission, message: str, retry_after: float) -> None:
    code, rpc_code = _CODES[admission]
    status = status_pb2.Status(code=rpc_code, message=message)
    metadata: list[tuple[str, str | bytes]] = []
    if admission is not Admission.TOO_LARGE:
        delay = Duration()
        delay.FromNanoseconds(int(retry_after * 1e9))
        retry_info = error_details_pb2.RetryInfo(retry_delay=delay)
        status.details.add().Pack(retry_info)
        metadata.append((_RETRY_INFO_KEY, retry_info.SerializeToString()))
    metadata.append((_STATUS_DETAILS_KEY, status.SerializeToString()))
    context.set_trailing_metadata(tuple(metadata))
    context.abort(code, message)

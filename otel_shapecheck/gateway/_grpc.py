"""The gateway's OTLP/gRPC transport: the trace and logs ``Export`` methods of ``opentelemetry-proto``.

The methods are registered with raw ``bytes`` requests, so nothing is parsed before the gateway has
decided to take the request: the bearer token (``UNAUTHENTICATED``), shutdown (``UNAVAILABLE``) and room
in the receiving and spool budgets (``RESOURCE_EXHAUSTED`` with a ``google.rpc.RetryInfo`` detail, which
the SDKs and the Collector retry after) come first; then the body is parsed, validated and spooled, and
the answer is success with ``partial_success`` when items were rejected, or ``INVALID_ARGUMENT`` for a
malformed request or one with more items than the whole pipeline. gRPC itself decompresses gzip and
refuses a message over the size limit with ``RESOURCE_EXHAUSTED``.

The server sets a maximum message size, keepalive (pings idle clients, refuses clients that ping too
often), an idle-connection timeout, a per-connection stream limit and a limit on calls in progress
(past it gRPC answers ``RESOURCE_EXHAUSTED`` itself); TLS, and client certificates, from the listener's
settings.
"""

from __future__ import annotations

import logging
from concurrent import futures
from typing import NoReturn

import grpc
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2

from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._body import export_response, refusals
from otel_shapecheck.gateway._counts import ExportAnswer
from otel_shapecheck.gateway._decode import Kind, UnreadableRequest, read_request
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._security import TLSSettings, TokenFile

logger = logging.getLogger(__name__)

_SERVICES: dict[Kind, str] = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
}
_STATUS_DETAILS_KEY = "grpc-status-details-bin"
# The Python OTLP exporter reads the retry delay from this key; the specification's place is the
# RetryInfo detail of the status, which every other SDK reads. Both are sent.
_RETRY_INFO_KEY = "google.rpc.retryinfo-bin"
_CODES: dict[Admission, tuple[grpc.StatusCode, int]] = {
    Admission.FULL: (grpc.StatusCode.RESOURCE_EXHAUSTED, code_pb2.RESOURCE_EXHAUSTED),
    Admission.TOO_LARGE: (grpc.StatusCode.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT),
    Admission.CLOSING: (grpc.StatusCode.UNAVAILABLE, code_pb2.UNAVAILABLE),
}
CALLS_PER_WORKER = 16
_STREAMS_PER_CONNECTION = 16


def start_grpc_server(
    gateway: Gateway,
    address: str,
    *,
    workers: int = 4,
    tls: TLSSettings | None = None,
    tokens: TokenFile | None = None,
    idle_timeout_seconds: float = 300.0,
    handshake_timeout_seconds: float = 5.0,
) -> tuple[grpc.Server, int]:
    """Serve both OTLP services on ``address`` (``host:port``, port 0 for any); returns the server and port.

    Raises:
        ValueError: the address cannot be bound.
    """
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shapecheck-gateway-grpc"),
        options=[
            ("grpc.max_receive_message_length", gateway.max_request_bytes),
            ("grpc.so_reuseport", 0),
            ("grpc.max_concurrent_streams", _STREAMS_PER_CONNECTION),
            ("grpc.keepalive_time_ms", 60_000),
            ("grpc.keepalive_timeout_ms", 20_000),
            ("grpc.keepalive_permit_without_calls", 1),
            ("grpc.http2.min_recv_ping_interval_without_data_ms", 10_000),
            ("grpc.http2.max_ping_strikes", 2),
            ("grpc.max_connection_idle_ms", int(idle_timeout_seconds * 1000)),
            # A connection that never completes its handshake (TLS and HTTP/2 preface) is closed.
            ("grpc.server_handshake_timeout_ms", max(1, int(handshake_timeout_seconds * 1000))),
        ],
        # Past this gRPC answers RESOURCE_EXHAUSTED itself, without retry information.
        maximum_concurrent_rpcs=workers * CALLS_PER_WORKER,
    )
    handlers = {
        kind: grpc.method_handlers_generic_handler(
            service, {"Export": grpc.unary_unary_rpc_method_handler(_Export(gateway, kind, tokens))}
        )
        for kind, service in _SERVICES.items()
    }
    server.add_generic_rpc_handlers(tuple(handlers.values()))
    try:
        if tls is None:
            port = server.add_insecure_port(address)
        else:
            key, chain, client_ca = tls.grpc_files()
            credentials = grpc.ssl_server_credentials(
                [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
            )
            port = server.add_secure_port(address, credentials)
    except (RuntimeError, OSError) as error:
        raise ValueError(f"--grpc {address!r}: cannot listen there ({error})") from None
    server.start()
    return server, port


class _Export:
    """One ``Export`` method: the request arrives as bytes and is parsed only once it was admitted."""

    def __init__(self, gateway: Gateway, kind: Kind, tokens: TokenFile | None) -> None:
        self._gateway = gateway
        self._kind = kind
        self._tokens = tokens

    def __call__(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        gateway = self._gateway
        if self._tokens is not None and not self._tokens.allows(_authorization(context)):
            refusals.note("unauthenticated", f"gRPC {self._kind} from {context.peer()}")
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "a valid bearer token is required")
        opened = gateway.open_request(len(request))
        if isinstance(opened, ExportAnswer):
            _abort(context, opened)
        # context.abort() raises: decide inside the try, abort outside it.
        answer: ExportAnswer | None = None
        malformed: str | None = None
        try:
            if not gateway.receive(opened, len(request)):
                answer = _busy(gateway)
            else:
                validated = read_request(self._kind, request)
                answer = gateway.accept(validated, opened)
        except UnreadableRequest as error:
            refusals.note("malformed", str(error))
            malformed = str(error)
        except Exception:  # a bug must not kill the server thread; the sender may retry
            refusals.failure("grpc", "Handling an OTLP/gRPC export request failed")
        finally:
            gateway.close_request(opened)
        if malformed is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, malformed)
        if answer is None:
            context.abort(grpc.StatusCode.INTERNAL, "the gateway failed to handle the request")
        assert answer is not None
        if answer.admission is not Admission.ACCEPTED:
            _abort(context, answer)
        return bytes(export_response(self._kind, answer.rejected, answer.error_message).SerializeToString())


def _authorization(context: grpc.ServicerContext) -> bytes | str | None:
    for key, value in context.invocation_metadata():
        if key == "authorization":
            return value
    return None


def _busy(gateway: Gateway) -> ExportAnswer:
    return ExportAnswer(
        Admission.FULL,
        0,
        0,
        "the gateway is receiving too much at once; retry later",
        gateway.retry_after_seconds,
    )


def _abort(context: grpc.ServicerContext, answer: ExportAnswer) -> NoReturn:
    code, rpc_code = _CODES[answer.admission]
    status = status_pb2.Status(code=rpc_code, message=answer.error_message)
    metadata: list[tuple[str, str | bytes]] = []
    if answer.admission is not Admission.TOO_LARGE:
        delay = Duration()
        delay.FromNanoseconds(int(answer.retry_after_seconds * 1e9))
        retry_info = error_details_pb2.RetryInfo(retry_delay=delay)
        status.details.add().Pack(retry_info)
        metadata.append((_RETRY_INFO_KEY, retry_info.SerializeToString()))
    metadata.append((_STATUS_DETAILS_KEY, status.SerializeToString()))
    context.set_trailing_metadata(tuple(metadata))
    context.abort(code, answer.error_message)
    raise AssertionError("context.abort() returned")  # it raises; this line only tells the type checker

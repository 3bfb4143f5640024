"""The gateway's OTLP/HTTP transport: ``POST /v1/traces`` and ``/v1/logs``, protobuf or JSON, gzip or not.

Answers follow the OTLP/HTTP specification, in the request's own encoding: 200 with ``partialSuccess``
when some items could not be read; 429 with ``Retry-After`` when the queue is full and 503 while shutting
down (the sender retries); 400 for a body that is not an export request; 413 for a body over the size
limit (compressed or decompressed) or with more items than the whole queue; 415 for another content type
or encoding. Error bodies are a ``google.rpc.Status`` with a message that says what is wrong.
"""

from __future__ import annotations

import logging
import math
import threading
import zlib
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._decode import (
    Decoded,
    UnreadableRequest,
    decode_log_records,
    decode_spans,
    parse_json,
    parse_protobuf,
)
from otel_shapecheck.gateway._gateway import ExportAnswer, Gateway

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
DEFAULT_MAX_CONCURRENT_REQUESTS = 32
_IDLE_CONNECTION_SECONDS = 30.0


class _Route:
    """One signal's endpoint: its request type, decoder and response builder."""

    def __init__(
        self,
        request_type: type[Message],
        decode: Callable[[Any], Decoded],
        export: Callable[[Gateway, Decoded], ExportAnswer],
        response: Callable[[ExportAnswer], Message],
    ) -> None:
        self.request_type = request_type
        self.decode = decode
        self.export = export
        self.response = response


def _trace_response(answer: ExportAnswer) -> Message:
    response = ExportTraceServiceResponse()
    if answer.rejected:
        response.partial_success.rejected_spans = answer.rejected
        response.partial_success.error_message = answer.error_message
    return response


def _logs_response(answer: ExportAnswer) -> Message:
    response = ExportLogsServiceResponse()
    if answer.rejected:
        response.partial_success.rejected_log_records = answer.rejected
        response.partial_success.error_message = answer.error_message
    return response


_ROUTES = {
    "/v1/traces": _Route(ExportTraceServiceRequest, decode_spans, Gateway.export_spans, _trace_response),
    "/v1/logs": _Route(
        ExportLogsServiceRequest, decode_log_records, Gateway.export_log_records, _logs_response
    ),
}
_REFUSALS: dict[Admission, tuple[HTTPStatus, int]] = {
    Admission.FULL: (HTTPStatus.TOO_MANY_REQUESTS, code_pb2.RESOURCE_EXHAUSTED),
    Admission.TOO_LARGE: (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, code_pb2.INVALID_ARGUMENT),
    Admission.CLOSING: (HTTPStatus.SERVICE_UNAVAILABLE, code_pb2.UNAVAILABLE),
}


class GatewayHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server bound to one gateway, serving on its own daemon thread."""

    daemon_threads = True

    def __init__(
        self,
        gateway: Gateway,
        address: tuple[str, int],
        *,
        max_request_bytes: int,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
    ) -> None:
        self.gateway = gateway
        self.max_request_bytes = max_request_bytes
        # Each request in progress may hold a body of max_request_bytes: bound how many at once.
        self.request_slots = threading.BoundedSemaphore(max_concurrent_requests)
        super().__init__(address, _Handler)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The bound port (the OS's choice when 0 was asked)."""
        return int(self.server_address[1])

    def start(self) -> GatewayHTTPServer:
        """Serve on a daemon thread."""
        self._thread = threading.Thread(
            target=self.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="shapecheck-gateway-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting connections and close the socket."""
        if self._thread is not None:
            self.shutdown()
            self._thread.join()
            self._thread = None
        self.server_close()


def start_http_server(gateway: Gateway, address: str, *, max_request_bytes: int) -> GatewayHTTPServer:
    """Serve OTLP/HTTP on ``address`` (``host:port``, port 0 for any).

    Raises:
        ValueError: the address is malformed or cannot be bound.
    """
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--http {address!r}: expected host:port, e.g. 127.0.0.1:4318")
    try:
        server = GatewayHTTPServer(
            gateway, (host.strip("[]"), int(port)), max_request_bytes=max_request_bytes
        )
    except OSError as error:
        raise ValueError(f"--http {address!r}: cannot listen there ({error.strerror or error})") from None
    return server.start()


class _HTTPError(Exception):
    def __init__(self, status: HTTPStatus, code: int, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: GatewayHTTPServer
    timeout = _IDLE_CONNECTION_SECONDS

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's hook name
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        as_json = content_type == JSON
        if not self.server.request_slots.acquire(blocking=False):
            self.close_connection = True  # the body stays unread
            busy = "too many requests in progress; retry later"
            retry = self.server.gateway.retry_after_seconds
            self._refuse(
                _HTTPError(HTTPStatus.TOO_MANY_REQUESTS, code_pb2.RESOURCE_EXHAUSTED, busy, retry), as_json
            )
            return
        try:
            payload = self._answer(content_type, as_json)
        except _HTTPError as error:
            self._refuse(error, as_json)
            return
        except Exception:  # a bug must not leave the sender without an answer
            logger.exception("Handling an OTLP/HTTP export request failed")
            self.close_connection = True
            self._refuse(
                _HTTPError(HTTPStatus.INTERNAL_SERVER_ERROR, code_pb2.INTERNAL, "the gateway failed"), as_json
            )
            return
        finally:
            self.server.request_slots.release()
        self._reply(HTTPStatus.OK, payload, as_json)

    def _answer(self, content_type: str, as_json: bool) -> Message:
        """The response message of a request that was taken, or the error to answer with."""
        route = _ROUTES.get(self.path.split("?")[0])
        if route is None:
            self._discard_body()
            raise _HTTPError(HTTPStatus.NOT_FOUND, code_pb2.NOT_FOUND, f"no OTLP endpoint at {self.path}")
        body = self._body()
        if content_type not in (PROTOBUF, JSON):
            raise _HTTPError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                code_pb2.INVALID_ARGUMENT,
                f"Content-Type {content_type or '(none)'!r} is not supported: send {PROTOBUF} or {JSON}",
            )
        return self._export(route, body, as_json)

    def _export(self, route: _Route, body: bytes, as_json: bool) -> Message:
        gateway = self.server.gateway
        if not gateway.budget.begin_request():
            raise _HTTPError(
                HTTPStatus.SERVICE_UNAVAILABLE, code_pb2.UNAVAILABLE, "the gateway is shutting down", 1.0
            )
        try:
            try:
                request = (parse_json if as_json else parse_protobuf)(body, route.request_type)
            except UnreadableRequest as error:
                raise _HTTPError(HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, str(error)) from None
            answer = route.export(gateway, route.decode(request))
        finally:
            gateway.budget.end_request()
        if answer.admission is not Admission.ACCEPTED:
            status, code = _REFUSALS[answer.admission]
            retry = answer.retry_after_seconds if answer.admission is not Admission.TOO_LARGE else None
            raise _HTTPError(status, code, answer.error_message, retry)
        return route.response(answer)

    def _body(self) -> bytes:
        limit = self.server.max_request_bytes
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            self.close_connection = True
            raise _HTTPError(
                HTTPStatus.LENGTH_REQUIRED,
                code_pb2.INVALID_ARGUMENT,
                "send a Content-Length (chunked bodies are not read)",
            )
        length = _content_length(self.headers.get("Content-Length"))
        if length > limit:
            self.close_connection = True  # the body stays unread: this connection cannot be reused
            raise _too_large(f"the request body has {length} bytes, more than the limit of {limit} bytes")
        body = self.rfile.read(length)
        encoding = (self.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding == "gzip":
            return _gunzip(body, limit)
        if encoding != "identity":
            raise _HTTPError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                code_pb2.INVALID_ARGUMENT,
                f"Content-Encoding {encoding!r} is not supported: send gzip or an uncompressed body",
            )
        return body

    def _discard_body(self) -> None:
        length = _content_length(self.headers.get("Content-Length"))
        if length > self.server.max_request_bytes:
            self.close_connection = True
        else:
            self.rfile.read(length)

    def _refuse(self, error: _HTTPError, as_json: bool) -> None:
        status = status_pb2.Status(code=error.code, message=error.message)
        headers = {}
        if error.retry_after is not None:
            headers["Retry-After"] = str(max(1, math.ceil(error.retry_after)))
        self._reply(error.status, status, as_json, headers)

    def _reply(
        self, status: HTTPStatus, message: Message, as_json: bool, headers: dict[str, str] | None = None
    ) -> None:
        payload = json_format.MessageToJson(message).encode() if as_json else message.SerializeToString()
        self.send_response(status)
        self.send_header("Content-Type", JSON if as_json else PROTOBUF)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
        """Request lines go to the debug log, not stderr."""
        logger.debug(format, *args)


def _content_length(header: str | None) -> int:
    try:
        length = int(header or "0")
    except ValueError:
        length = -1
    if length < 0:
        raise _HTTPError(HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, f"bad Content-Length {header!r}")
    return length


def _too_large(message: str) -> _HTTPError:
    return _HTTPError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, code_pb2.INVALID_ARGUMENT, message)


def _gunzip(body: bytes, limit: int) -> bytes:
    """Decompress a gzip body, refusing one that inflates past ``limit`` before inflating it all."""
    decompressor = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        data = decompressor.decompress(body, limit + 1)
    except zlib.error as error:
        raise _HTTPError(
            HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, f"damaged gzip body ({error})"
        ) from None
    if len(data) > limit or decompressor.unconsumed_tail:
        raise _too_large(f"the request body inflates to more than the limit of {limit} bytes")
    return data

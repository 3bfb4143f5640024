"""The gateway's OTLP/HTTP application: ``POST /v1/traces`` and ``/v1/logs``, protobuf or JSON, gzip or not.

A small ASGI application (served by uvicorn, see :mod:`._http_server`). Everything that can be decided
from the headers is decided before the body is read: the path and method, the bearer token (401), the
content type and encoding (415), a ``Content-Length`` over the limit (413), and room in the receiving
and spool budgets (429 with ``Retry-After``, 503 while shutting down). The body, with a length or
chunked (``Transfer-Encoding: chunked``, as the OpenTelemetry JS exporter sends it), is then read
within the server's whole-request deadline, counted against the byte limit and the receiving budget as
it arrives (413 the moment it passes the limit, whatever the framing), and decompressed, parsed,
validated and spooled on a worker thread, off the event loop. A chunked body reserves spool room for
the largest request, as a compressed one does, since its size is not known before it is read.

Answers follow the OTLP/HTTP specification, in the request's own encoding: 200 with ``partialSuccess``
when some items were rejected, a ``google.rpc.Status`` body with a message saying what is wrong
otherwise.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import code_pb2, status_pb2

from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._body import DamagedBody, InflatesTooFar, export_response, gunzip, refusals
from otel_shapecheck.gateway._counts import ExportAnswer, Ticket
from otel_shapecheck.gateway._decode import Kind, UnreadableRequest, read_request
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._security import TokenFile

logger = logging.getLogger(__name__)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
_ROUTES: dict[str, Kind] = {"/v1/traces": "traces", "/v1/logs": "logs"}
_REFUSALS: dict[Admission, tuple[HTTPStatus, int]] = {
    Admission.FULL: (HTTPStatus.TOO_MANY_REQUESTS, code_pb2.RESOURCE_EXHAUSTED),
    Admission.TOO_LARGE: (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, code_pb2.INVALID_ARGUMENT),
    Admission.CLOSING: (HTTPStatus.SERVICE_UNAVAILABLE, code_pb2.UNAVAILABLE),
}

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


class HTTPError(Exception):
    """An answer other than 200, with its ``google.rpc.Status`` code and message."""

    def __init__(
        self,
        status: HTTPStatus,
        code: int,
        message: str,
        *,
        retry_after: float | None = None,
        close: bool = False,
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.retry_after = retry_after
        self.close = close
        self.headers = headers


class _Disconnected(Exception):
    """The sender went away (or the whole-request deadline closed the connection)."""


class OTLPApplication:
    """The ASGI application of one gateway.

    Args:
        gateway: where accepted requests go.
        tokens: bearer tokens to require (``None``: no authentication).
        workers: threads that decompress, parse, validate and spool bodies.
    """

    def __init__(self, gateway: Gateway, *, tokens: TokenFile | None = None, workers: int = 4) -> None:
        self.gateway = gateway
        self.tokens = tokens
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="shapecheck-gateway-http")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request (the ASGI entry point); lifespan events are acknowledged."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        as_json = headers.get("content-type", "").split(";")[0].strip().lower() == JSON
        try:
            kind = self._route(scope, headers)
            length = _content_length(headers)
            inflating = _encoding(headers) == "gzip"
            if length is not None and length > self.gateway.max_request_bytes:
                raise HTTPError(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    code_pb2.INVALID_ARGUMENT,
                    f"the request body has {length} bytes, more than the limit of "
                    f"{self.gateway.max_request_bytes} bytes",
                    close=True,
                )
            opened = self.gateway.open_request(length, inflating=inflating)
            if isinstance(opened, ExportAnswer):
                raise _refusal(opened, close=length != 0)
            try:
                body = await self._body(receive, length, opened)
                loop = asyncio.get_running_loop()
                answer = await loop.run_in_executor(
                    self.executor, self._take, kind, body, inflating, as_json, opened
                )
            finally:
                self.gateway.close_request(opened)
        except HTTPError as error:
            await _reply_error(send, error, as_json)
            return
        except _Disconnected:
            return
        except Exception:  # a bug must not leave the sender without an answer, nor flood the log
            refusals.failure("http", "Handling an OTLP/HTTP export request failed")
            failed = HTTPError(
                HTTPStatus.INTERNAL_SERVER_ERROR, code_pb2.INTERNAL, "the gateway failed", close=True
            )
            await _reply_error(send, failed, as_json)
            return
        await _reply(send, HTTPStatus.OK, answer, as_json)

    def _route(self, scope: Scope, headers: dict[str, str]) -> Kind:
        kind = _ROUTES.get(scope["path"])
        if kind is None:
            raise HTTPError(
                HTTPStatus.NOT_FOUND, code_pb2.NOT_FOUND, f"no OTLP endpoint at {scope['path']}", close=True
            )
        if scope["method"] != "POST":
            raise HTTPError(
                HTTPStatus.METHOD_NOT_ALLOWED,
                code_pb2.INVALID_ARGUMENT,
                f"{scope['method']} is not supported: POST OTLP export requests",
                close=True,
                headers=((b"allow", b"POST"),),
            )
        if self.tokens is not None and not self.tokens.allows(_raw_header(scope, b"authorization")):
            refusals.note("unauthenticated", f"HTTP {scope['path']} from {_client(scope)}")
            raise HTTPError(
                HTTPStatus.UNAUTHORIZED,
                code_pb2.UNAUTHENTICATED,
                "a valid bearer token is required (Authorization: Bearer <token>)",
                close=True,
                headers=((b"www-authenticate", b'Bearer realm="otel-shapecheck"'),),
            )
        content_type = headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in (PROTOBUF, JSON):
            raise HTTPError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                code_pb2.INVALID_ARGUMENT,
                f"Content-Type {content_type or '(none)'!r} is not supported: send {PROTOBUF} or {JSON}",
                close=True,
            )
        return kind

    async def _body(self, receive: Receive, length: int | None, ticket: Ticket) -> bytes:
        """The whole body (``length`` bytes, or chunked when ``None``), counted as it arrives."""
        chunks: list[bytes] = []
        size = 0
        limit = self.gateway.max_request_bytes
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise _Disconnected
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:  # only a chunked body can get here: a length was checked before
                    raise HTTPError(
                        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                        code_pb2.INVALID_ARGUMENT,
                        f"the request body has more than the limit of {limit} bytes",
                        close=True,
                    )
                if not self.gateway.receive(ticket, len(chunk)):
                    raise HTTPError(
                        HTTPStatus.TOO_MANY_REQUESTS,
                        code_pb2.RESOURCE_EXHAUSTED,
                        "the gateway is receiving too much at once; retry later",
                        retry_after=self.gateway.retry_after_seconds,
                        close=True,
                    )
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        if length is not None and len(body) != length:  # h11 enforces the length; this guards others
            raise HTTPError(
                HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, "the body is not Content-Length long"
            )
        return body

    def _take(self, kind: Kind, body: bytes, inflating: bool, as_json: bool, ticket: Ticket) -> Message:
        """Decompress, parse, validate and spool one body (a worker thread); the response message."""
        gateway = self.gateway
        if inflating:
            try:
                body = gunzip(body, gateway.max_request_bytes)
            except InflatesTooFar as error:
                raise HTTPError(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE, code_pb2.INVALID_ARGUMENT, str(error)
                ) from None
            except DamagedBody as error:
                refusals.note("damaged", str(error))
                raise HTTPError(HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, str(error)) from None
            if not gateway.receive(ticket, len(body)):
                raise HTTPError(
                    HTTPStatus.TOO_MANY_REQUESTS,
                    code_pb2.RESOURCE_EXHAUSTED,
                    "the gateway is receiving too much at once; retry later",
                    retry_after=gateway.retry_after_seconds,
                )
        try:
            validated = read_request(kind, body, as_json=as_json)
        except UnreadableRequest as error:
            refusals.note("malformed", str(error))
            raise HTTPError(HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, str(error)) from None
        answer = gateway.accept(validated, ticket)
        if answer.admission is not Admission.ACCEPTED:
            raise _refusal(answer)
        return export_response(kind, answer.rejected, answer.error_message)


def _refusal(answer: ExportAnswer, *, close: bool = False) -> HTTPError:
    status, code = _REFUSALS[answer.admission]
    retry = answer.retry_after_seconds if answer.admission is not Admission.TOO_LARGE else None
    return HTTPError(status, code, answer.error_message, retry_after=retry, close=close)


def _content_length(headers: dict[str, str]) -> int | None:
    """The declared body length; ``None`` for a chunked body (h11 refuses a request with both)."""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return None
    raw = headers.get("content-length", "0")
    length = int(raw) if raw.strip().isdigit() else -1
    if length < 0:
        raise HTTPError(
            HTTPStatus.BAD_REQUEST, code_pb2.INVALID_ARGUMENT, f"bad Content-Length {raw!r}", close=True
        )
    return length


def _raw_header(scope: Scope, name: bytes) -> bytes | None:
    """A header's value as its bytes on the wire (a token compares as bytes, not as latin-1 text)."""
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value)
    return None


def _encoding(headers: dict[str, str]) -> str:
    encoding = (headers.get("content-encoding") or "identity").strip().lower()
    if encoding not in ("gzip", "identity"):
        raise HTTPError(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            code_pb2.INVALID_ARGUMENT,
            f"Content-Encoding {encoding!r} is not supported: send gzip or an uncompressed body",
            close=True,
        )
    return encoding


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return f"{client[0]}:{client[1]}" if client else "unknown"


async def _reply_error(send: Send, error: HTTPError, as_json: bool) -> None:
    headers = list(error.headers)
    if error.retry_after is not None:
        headers.append((b"retry-after", str(max(1, math.ceil(error.retry_after))).encode()))
    if error.close:
        headers.append((b"connection", b"close"))
    await _reply(
        send, error.status, status_pb2.Status(code=error.code, message=error.message), as_json, headers
    )


async def _reply(
    send: Send,
    status: HTTPStatus,
    message: Message,
    as_json: bool,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    payload = json_format.MessageToJson(message).encode() if as_json else message.SerializeToString()
    await send(
        {
            "type": "http.response.start",
            "status": int(status),
            "headers": [
                (b"content-type", (JSON if as_json else PROTOBUF).encode()),
                (b"content-length", str(len(payload)).encode()),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload, "more_body": False})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return

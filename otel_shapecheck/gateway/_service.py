"""A running gateway: the :class:`Gateway` with its gRPC and HTTP listeners, started and stopped together.

Usage::

    with GatewayService(gateway, grpc_address="127.0.0.1:4317", http_address="127.0.0.1:4318") as service:
        ...  # senders export to service.grpc_port / service.http_port
    # leaving the block (or service.stop()) stops the listeners, then forwards what was accepted
"""

from __future__ import annotations

import logging

import grpc

from otel_shapecheck.gateway._counts import GatewayCounts
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._grpc import start_grpc_server
from otel_shapecheck.gateway._http import OTLPApplication
from otel_shapecheck.gateway._http_server import GatewayHTTPServer
from otel_shapecheck.gateway._security import TLSSettings, TokenFile, warn_if_exposed
from otel_shapecheck.gateway._settings import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    tls_handshake_timeout,
)

logger = logging.getLogger(__name__)

_GRPC_GRACE_SECONDS = 5.0


class GatewayService:
    """Listens for OTLP on the given addresses and feeds one gateway.

    Args:
        gateway: the gateway requests go to; :meth:`stop` shuts it down.
        grpc_address: ``host:port`` for OTLP/gRPC (port 0 for any), or ``None`` for no gRPC listener.
        http_address: ``host:port`` for OTLP/HTTP, or ``None``.
        tls: certificate and key (and client CA) for both listeners; ``None`` for plaintext.
        tokens: bearer tokens both listeners require; ``None`` for none.
        grpc_workers: threads handling gRPC requests.
        http_workers: threads decoding and spooling HTTP request bodies.
        request_timeout_seconds: an HTTP request's headers and body must arrive within this.
        idle_timeout_seconds: idle HTTP connections are closed after this (gRPC ones after 10 times it).
        max_connections: HTTP connections at once (idle ones are closed first to make room); past it
            requests are answered 503.
        tls_handshake_timeout_seconds: longest a connection's handshake may take (TLS on HTTP; TLS and
            the HTTP/2 preface on gRPC) (default 5 s,
            at most the request deadline).

    Raises:
        ValueError: neither address given, a bad setting, or an address that cannot be bound.
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        grpc_address: str | None = None,
        http_address: str | None = None,
        tls: TLSSettings | None = None,
        tokens: TokenFile | None = None,
        grpc_workers: int = 4,
        http_workers: int = 4,
        request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
        idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        tls_handshake_timeout_seconds: float | None = None,
    ) -> None:
        if grpc_address is None and http_address is None:
            raise ValueError("the gateway needs at least one of a gRPC or an HTTP address to listen on")
        self.gateway = gateway
        self.tls = tls
        self.tokens = tokens
        self._grpc_address = grpc_address
        self._http_address = http_address
        self._grpc_workers = grpc_workers
        self._http_workers = http_workers
        self._request_timeout = request_timeout_seconds
        self._idle_timeout = idle_timeout_seconds
        self._max_connections = max_connections
        self._handshake_timeout = tls_handshake_timeout_seconds
        self._grpc: grpc.Server | None = None
        self._http: GatewayHTTPServer | None = None
        self.grpc_port = 0
        """The bound gRPC port (0 when not listening)."""
        self.http_port = 0
        """The bound HTTP port (0 when not listening)."""

    @property
    def http_server(self) -> GatewayHTTPServer | None:
        """The HTTP listener, once started."""
        return self._http

    def start(self) -> GatewayService:
        """Bind and serve; on a bind error nothing is left listening."""
        try:
            if self._grpc_address is not None:
                self._grpc, self.grpc_port = start_grpc_server(
                    self.gateway,
                    self._grpc_address,
                    workers=self._grpc_workers,
                    tls=self.tls,
                    tokens=self.tokens,
                    idle_timeout_seconds=self._idle_timeout * 10,
                    handshake_timeout_seconds=tls_handshake_timeout(
                        self._handshake_timeout, request_timeout_seconds=self._request_timeout
                    ),
                )
                self._warn("gRPC", self._grpc_address)
            if self._http_address is not None:
                app = OTLPApplication(self.gateway, tokens=self.tokens, workers=self._http_workers)
                self._http = GatewayHTTPServer(
                    app,
                    self._http_address,
                    tls=self.tls,
                    request_timeout_seconds=self._request_timeout,
                    idle_timeout_seconds=self._idle_timeout,
                    max_connections=self._max_connections,
                    tls_handshake_timeout_seconds=self._handshake_timeout,
                ).start()
                self.http_port = self._http.port
                self._warn("HTTP", self._http_address)
        except Exception:
            self._stop_listeners()
            raise
        return self

    def stop(self, timeout_seconds: float | None = None) -> GatewayCounts:
        """Stop accepting (requests in progress finish), then evaluate and forward what was accepted
        within ``timeout_seconds`` (the gateway's shutdown timeout by default); the final counts."""
        self._stop_listeners()
        return self.gateway.shutdown(timeout_seconds)

    def _warn(self, listener: str, address: str) -> None:
        warn_if_exposed(
            listener, address.rpartition(":")[0], tls=self.tls is not None, auth=self.tokens is not None
        )

    def _stop_listeners(self) -> None:
        if self._grpc is not None:
            self._grpc.stop(grace=_GRPC_GRACE_SECONDS).wait()
            self._grpc = None
        if self._http is not None:
            self._http.stop()
            self._http = None

    def __enter__(self) -> GatewayService:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

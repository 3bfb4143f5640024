"""A running gateway: the :class:`Gateway` with its gRPC and HTTP listeners, started and stopped together.

Usage::

    with GatewayService(gateway, grpc_address="127.0.0.1:4317", http_address="127.0.0.1:4318") as service:
        ...  # senders export to service.grpc_port / service.http_port
    # leaving the block (or service.stop()) drains and forwards everything accepted
"""

from __future__ import annotations

import logging

import grpc

from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._gateway import max_request_bytes as resolve_max_request_bytes
from otel_shapecheck.gateway._grpc import start_grpc_server
from otel_shapecheck.gateway._http import GatewayHTTPServer, start_http_server

logger = logging.getLogger(__name__)

_GRPC_GRACE_SECONDS = 5.0


class GatewayService:
    """Listens for OTLP on the given addresses and feeds one gateway.

    Args:
        gateway: the gateway requests go to; :meth:`stop` shuts it down.
        grpc_address: ``host:port`` for OTLP/gRPC (port 0 for any), or ``None`` for no gRPC listener.
        http_address: ``host:port`` for OTLP/HTTP, or ``None``.
        max_request_bytes: largest request accepted, decompressed
            (``OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES``, 4 MiB).
        grpc_workers: threads handling gRPC requests.

    Raises:
        ValueError: neither address given, a bad setting, or an address that cannot be bound.
    """

    def __init__(
        self,
        gateway: Gateway,
        *,
        grpc_address: str | None = None,
        http_address: str | None = None,
        max_request_bytes: int | None = None,
        grpc_workers: int = 4,
    ) -> None:
        if grpc_address is None and http_address is None:
            raise ValueError("the gateway needs at least one of a gRPC or an HTTP address to listen on")
        self.gateway = gateway
        self._grpc_address = grpc_address
        self._http_address = http_address
        self._max_request_bytes = resolve_max_request_bytes(max_request_bytes)
        self._grpc_workers = grpc_workers
        self._grpc: grpc.Server | None = None
        self._http: GatewayHTTPServer | None = None
        self.grpc_port = 0
        """The bound gRPC port (0 when not listening)."""
        self.http_port = 0
        """The bound HTTP port (0 when not listening)."""

    def start(self) -> GatewayService:
        """Bind and serve; on a bind error nothing is left listening."""
        try:
            if self._grpc_address is not None:
                self._grpc, self.grpc_port = start_grpc_server(
                    self.gateway,
                    self._grpc_address,
                    max_request_bytes=self._max_request_bytes,
                    workers=self._grpc_workers,
                )
            if self._http_address is not None:
                self._http = start_http_server(
                    self.gateway, self._http_address, max_request_bytes=self._max_request_bytes
                )
                self.http_port = self._http.port
        except Exception:
            self._stop_listeners()
            raise
        return self

    def stop(self) -> None:
        """Graceful stop: refuse new requests (503 / ``UNAVAILABLE``), finish those in progress, evaluate
        and forward everything accepted, then close the listeners."""
        self.gateway.shutdown()
        self._stop_listeners()

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

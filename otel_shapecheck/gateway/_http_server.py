"""The OTLP/HTTP listener: uvicorn serving :class:`OTLPApplication`, on its own thread and event loop.

Why uvicorn: a maintained asyncio HTTP/1.1 server (h11 for parsing) that takes a listen backlog, TLS
(and client certificates), a keep-alive idle timeout, a connection limit and a graceful stop, and runs
any ASGI callable, so the gateway's own code is the small application and nothing of a web framework.
What it lacks is added by :class:`_DeadlineProtocol`:

- a whole-request deadline: from a request's first byte (or the connection's start), headers and body
  must arrive within ``request_timeout_seconds`` or the connection is answered ``408`` and closed; the
  time the gateway spends on a request does not count;
- idle connections first: past ``max_connections`` a new connection closes the ones idle longest (kept
  alive after an answer, or silent since their connect), so idle connections never lock senders out;
  the limit then holds for requests in progress (``503`` past it);
- a lingering close: a connection answered before its body was read whole (413, 429, 503) writes the
  answer, shuts its sending side and reads and discards what the sender still sends (up to
  :data:`LINGER_BYTES`, within the deadline), so the sender reads the answer, not a connection reset;
- a bounded TLS handshake: ``tls_handshake_timeout_seconds`` (5 s, at most the request deadline), where
  asyncio would wait 60 s, counted (:class:`_HandshakeBoundedLoop`).

The listen backlog is 2048 (the kernel's ``net.core.somaxconn`` caps it).

The socket is bound here, before the server starts, so a bad address is a start-up error naming it.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading
from typing import Any, cast

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from otel_shapecheck.gateway._body import quiet, refusals
from otel_shapecheck.gateway._http import OTLPApplication
from otel_shapecheck.gateway._security import TLSSettings
from otel_shapecheck.gateway._settings import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS,
    tls_handshake_timeout,
)

logger = logging.getLogger(__name__)

BACKLOG = 2048
_HANDSHAKE_SLACK_SECONDS = 0.05
LINGER_BYTES = 64 * 1024 * 1024
"""Most bytes of a refused request's body read and discarded before its connection closes."""
_STOP_GRACE_SECONDS = 10
_TIMED_OUT = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 53\r\nconnection: close\r\n\r\n"
    b"the request did not arrive whole within the deadline\n"
)


class _LingeringTransport:
    """The connection's transport as uvicorn sees it: :meth:`close` while the request's body is still
    arriving lingers (see :meth:`_DeadlineProtocol.linger`) instead of resetting the connection."""

    def __init__(self, transport: asyncio.Transport, protocol: _DeadlineProtocol) -> None:
        self._transport = transport
        self._protocol = protocol
        self._closing = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def is_closing(self) -> bool:
        return self._closing or self._transport.is_closing()

    def close(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self._protocol.body_unread():
            self._protocol.linger()
        else:
            self._transport.close()


class _HandshakeBoundedLoop(asyncio.SelectorEventLoop):
    """An event loop whose TLS servers bound the handshake (asyncio's default waits 60 s), so connections
    that never send a ClientHello do not hold descriptors; uvicorn's server is created on it."""

    handshake_timeout = DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS

    async def create_server(self, *args: Any, **kwargs: Any) -> asyncio.Server:
        if kwargs.get("ssl") is not None:
            kwargs.setdefault("ssl_handshake_timeout", self.handshake_timeout)
        return await super().create_server(*args, **kwargs)


class _DeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a whole-request deadline (headers and body, not each read) and a
    lingering close."""

    request_timeout = DEFAULT_REQUEST_TIMEOUT_SECONDS
    max_connections = DEFAULT_MAX_CONNECTIONS
    timed_out = 0
    """Connections closed by the deadline (all servers of this class)."""
    idle_closed = 0
    """Idle connections closed to make room for a new one past ``max_connections``."""
    handshake_timeout: float | None = None
    """The TLS handshake's bound (``None`` without TLS)."""
    handshakes_timed_out = 0
    """TLS connections closed because their handshake did not finish in time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._made = False
        if self.handshake_timeout is not None:  # made at the TCP accept, before the handshake
            self.loop.call_later(self.handshake_timeout + _HANDSHAKE_SLACK_SECONDS, self._handshake_over)

    def _handshake_over(self) -> None:
        if not self._made:  # asyncio aborted it at the bound
            type(self).handshakes_timed_out += 1
            refusals.note("stalled", f"no TLS handshake within {self.handshake_timeout:g} s (closed)")

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        self._raw = transport
        self._lingering: asyncio.TimerHandle | None = None
        self._discarded = 0
        self._idle_since: float | None = None
        self._made = True
        super().connection_made(cast(asyncio.Transport, _LingeringTransport(transport, self)))
        self._idle_since = self.loop.time()
        self._arm()
        self._make_room()

    def _make_room(self) -> None:
        """Past ``max_connections``, close the connections idle longest (kept alive after an answer, or
        silent since the connect) so that an idle connection never costs a sender its turn; requests in
        progress are never closed for it (past the limit of those, uvicorn answers 503)."""
        excess = len(self.connections) - self.max_connections
        if excess <= 0:
            return
        idle = [
            connection
            for connection in self.connections
            if isinstance(connection, _DeadlineProtocol)
            and connection is not self
            and connection._idle_since is not None
        ]
        idle.sort(key=lambda connection: connection._idle_since or 0.0)
        for connection in idle[:excess]:
            connection._close_idle()

    def _close_idle(self) -> None:
        type(self).idle_closed += 1
        self._idle_since = None
        self._raw.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self._raw.is_closing():
            self._idle_since = self.loop.time()

    def body_unread(self) -> bool:
        """Whether the request being answered has body still to arrive."""
        cycle = self.cycle
        return cycle is not None and cycle.more_body and not cycle.disconnected

    def linger(self) -> None:
        """Close after an early answer: shut the sending side (the answer is written first), then read
        and discard until the sender closes, :data:`LINGER_BYTES` arrived or the deadline passes."""
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._raw.can_write_eof():
            self._raw.write_eof()
        self._raw.resume_reading()
        self._lingering = self.loop.call_later(self.request_timeout, self._raw.close)

    def data_received(self, data: bytes) -> None:
        if self._lingering is not None:  # the answer was given: what still comes is discarded
            self._discarded += len(data)
            if self._discarded > LINGER_BYTES:
                self._raw.close()
            return
        self._idle_since = None
        cycle = self.cycle
        if self._deadline is None and (cycle is None or cycle.response_complete):
            self._arm()  # the first byte of a new request on a kept-alive connection
        super().data_received(data)
        cycle = self.cycle
        if cycle is not None and not cycle.more_body and self._deadline is not None:
            self._deadline.cancel()  # the request is whole: the gateway's own time does not count
            self._deadline = None

    def eof_received(self) -> None:
        if self._lingering is not None:
            self._raw.close()

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._deadline, self._lingering):
            if timer is not None:
                timer.cancel()
        self._deadline = None
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._deadline = self.loop.call_later(self.request_timeout, self._expired)

    def _expired(self) -> None:
        self._deadline = None
        cycle = self.cycle
        if (
            cycle is not None
            and not cycle.response_complete
            and (not cycle.more_body or cycle.response_started)
        ):
            return  # the request arrived; the answer is on its way
        type(self).timed_out += 1
        if cycle is not None and not cycle.response_complete:
            cycle.disconnected = True  # the application's receive() returns http.disconnect
            cycle.message_event.set()
        if not self._raw.is_closing():
            self._raw.write(_TIMED_OUT)
            self._raw.close()


quiet("uvicorn.error")  # one line per bad request or refused connection otherwise


class GatewayHTTPServer:
    """uvicorn on a daemon thread serving one :class:`OTLPApplication` on a bound socket.

    Raises:
        ValueError: the address is malformed or cannot be bound.
    """

    def __init__(
        self,
        app: OTLPApplication,
        address: str,
        *,
        tls: TLSSettings | None = None,
        request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS,
        idle_timeout_seconds: float = DEFAULT_IDLE_TIMEOUT_SECONDS,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        tls_handshake_timeout_seconds: float | None = None,
    ) -> None:
        self.app = app
        self._handshake_timeout = tls_handshake_timeout(
            tls_handshake_timeout_seconds, request_timeout_seconds=request_timeout_seconds
        )
        self.host, port = _split(address)
        self._socket = _bind(self.host, port, address)
        self.port = int(self._socket.getsockname()[1])
        protocol = type(
            "ShapecheckH11Protocol",
            (_DeadlineProtocol,),
            {
                "request_timeout": request_timeout_seconds,
                "max_connections": max_connections,
                "handshake_timeout": self._handshake_timeout if tls is not None else None,
            },
        )
        self.protocol = cast(type[_DeadlineProtocol], protocol)
        tls_options: dict[str, Any] = {}
        if tls is not None:
            tls_options = {"ssl_certfile": str(tls.cert), "ssl_keyfile": str(tls.key)}
            if tls.client_ca is not None:
                tls_options.update(ssl_ca_certs=str(tls.client_ca), ssl_cert_reqs=2)  # ssl.CERT_REQUIRED
        config = uvicorn.Config(
            app,
            http=protocol,
            lifespan="off",
            log_config=None,
            access_log=False,
            backlog=BACKLOG,
            timeout_keep_alive=max(1, round(idle_timeout_seconds)),
            limit_concurrency=max_connections + 1,  # idle ones are closed first (see _make_room)
            timeout_graceful_shutdown=_STOP_GRACE_SECONDS,
            server_header=False,
            **tls_options,
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None
        self._failed: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        """The server's event loop, while it runs."""

    @property
    def handshakes_timed_out(self) -> int:
        """TLS connections closed because their handshake did not finish within its bound."""
        return self.protocol.handshakes_timed_out

    @property
    def idle_closed(self) -> int:
        """Idle connections closed to make room for new ones past the connection limit."""
        return self.protocol.idle_closed

    @property
    def timed_out(self) -> int:
        """Connections closed because a request did not arrive whole in time."""
        return self.protocol.timed_out

    def start(self) -> GatewayHTTPServer:
        """Serve on a daemon thread; returns once the server accepts connections."""
        started = threading.Event()

        def serve() -> None:
            loop = _HandshakeBoundedLoop()
            loop.handshake_timeout = self._handshake_timeout
            asyncio.set_event_loop(loop)
            self.loop = loop
            try:
                task = loop.create_task(self._server.serve(sockets=[self._socket]))
                loop.call_soon(_when_started, self._server, started, loop)
                loop.run_until_complete(task)
            except BaseException as error:  # SystemExit from uvicorn's start-up included
                self._failed = error
                logger.exception("The OTLP/HTTP server stopped")
            finally:
                started.set()
                loop.close()

        self._thread = threading.Thread(target=serve, name="shapecheck-gateway-http-server", daemon=True)
        self._thread.start()
        started.wait(30)
        if self._failed is not None or not self._server.started:
            self.stop()
            raise ValueError(
                f"--http {self.host}:{self.port}: the HTTP server did not start ({self._failed})"
            )
        return self

    def stop(self) -> None:
        """Stop accepting, finish the requests in progress (up to 10 s), close the socket."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(_STOP_GRACE_SECONDS + 5)
            self._thread = None
        self._socket.close()
        self.app.executor.shutdown(wait=False, cancel_futures=True)


def _when_started(server: uvicorn.Server, started: threading.Event, loop: asyncio.AbstractEventLoop) -> None:
    if server.started:
        started.set()
    else:
        loop.call_later(0.01, _when_started, server, started, loop)


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"--http {address!r}: expected host:port, e.g. 127.0.0.1:4318")
    return host.strip("[]"), int(port)


def _bind(host: str, port: int, address: str) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(BACKLOG)
        sock.set_inheritable(True)
    except OSError as error:
        sock.close()
        raise ValueError(f"--http {address!r}: cannot listen there ({error.strerror or error})") from None
    return sock

"""The OTLP/HTTP server under raw sockets: trickling senders, a burst of connects, the connection limit.

These tests count outcomes (status codes, connections refused), never durations: the deadlines they rely
on are seconds long and every wait has a generous timeout, so a loaded machine makes them slower, not red.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

import pytest
from google.rpc import status_pb2
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import running_gateway
from otel_shapecheck.gateway import _decode
from otel_shapecheck.gateway._http_server import BACKLOG
from otel_shapecheck.gateway._service import GatewayService
from otel_shapecheck.gateway._spool import MemorySpool

DEADLINE_SECONDS = 3.0
BODY = trace_request(plain_spans(2)).SerializeToString()


def _headers(port: int, length: int, extra: str = "") -> bytes:
    return (
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-protobuf\r\n"
        f"Content-Length: {length}\r\n{extra}\r\n"
    ).encode()


def _read_answer(sock: socket.socket, timeout: float = 60.0) -> bytes:
    """Everything the server sends until it closes the connection (or ``timeout``)."""
    sock.settimeout(timeout)
    chunks = []
    try:
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    except (TimeoutError, ConnectionResetError):
        pass
    return b"".join(chunks)


@contextmanager
def _connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=30) for _ in range(count)]
    try:
        yield sockets
    finally:
        for sock in sockets:
            sock.close()


@pytest.fixture(name="service")
def _service(receiver: OTLPReceiver) -> Iterator[GatewayService]:
    with running_gateway(receiver, request_timeout_seconds=DEADLINE_SECONDS) as service:
        yield service


class TestWholeRequestDeadline:
    def test_trickling_senders_do_not_starve_others_and_are_cut_at_the_deadline(
        self, service: GatewayService, receiver: OTLPReceiver
    ) -> None:
        """32 connections sending one body byte a second: 15 ordinary requests meanwhile all succeed,
        and every trickler is answered 408 and closed once the deadline passes (not per read)."""
        port = service.http_port
        stop = threading.Event()
        with _connections(port, 32) as tricklers:
            for sock in tricklers:
                sock.sendall(_headers(port, 1000))

            def trickle() -> None:
                while not stop.wait(1.0):
                    for sock in tricklers:
                        with suppress(OSError):
                            sock.send(b"x")

            thread = threading.Thread(target=trickle, daemon=True)
            thread.start()
            try:
                statuses = [post(port, "/v1/traces", BODY).status for _ in range(15)]
                answers = [_read_answer(sock) for sock in tricklers]
            finally:
                stop.set()
                thread.join(10)
        assert statuses == [200] * 15
        assert all(answer.startswith(b"HTTP/1.1 408") for answer in answers), {a[:20] for a in answers}
        assert service.http_server is not None and service.http_server.timed_out >= 32
        assert receiver.wait_for(lambda r: len(r.spans) == 30, timeout=30)

    def test_headers_that_never_finish_get_408(self, service: GatewayService) -> None:
        """A sender that starts its headers and stops is answered 408 and closed."""
        with _connections(service.http_port, 1) as (sock,):
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
            assert _read_answer(sock).startswith(b"HTTP/1.1 408")

    def test_a_connection_that_sends_nothing_is_closed(self, service: GatewayService) -> None:
        """A connection that never sends a byte does not stay open for ever."""
        with _connections(service.http_port, 1) as (sock,):
            assert _read_answer(sock).startswith(b"HTTP/1.1 408")

    def test_the_gateways_own_time_does_not_count(
        self, service: GatewayService, receiver: OTLPReceiver
    ) -> None:
        """A slow request (slow downstream, many spans) is answered 200 however long handling takes."""
        receiver.behave(delay_seconds=DEADLINE_SECONDS)
        body = trace_request(plain_spans(3000)).SerializeToString()
        assert post(service.http_port, "/v1/traces", body).status == 200


class TestConnections:
    def test_a_burst_of_connects_waits_in_the_listen_backlog(self, receiver: OTLPReceiver) -> None:
        """300 connections opened while the server's loop is busy all connect (a backlog of 5 reset most),
        and each one's request is answered."""
        with running_gateway(receiver, max_connections=1024) as service:
            server = service.http_server
            assert server is not None and server.loop is not None
            assert BACKLOG >= 1024
            busy = threading.Event()
            server.loop.call_soon_threadsafe(lambda: (busy.set(), time.sleep(3)))
            assert busy.wait(30)
            connected, refused = [], 0
            for _ in range(300):
                try:
                    connected.append(socket.create_connection(("127.0.0.1", service.http_port), timeout=30))
                except OSError:
                    refused += 1
            try:
                for sock in connected:
                    sock.sendall(_headers(service.http_port, len(BODY)) + BODY)
                answers = [_read_answer_status(sock) for sock in connected]
            finally:
                for sock in connected:
                    sock.close()
        assert refused == 0
        assert answers == [200] * 300

    def test_past_the_limit_of_requests_in_progress_new_ones_get_503(self, receiver: OTLPReceiver) -> None:
        """With every connection slot held by a request still arriving, a new request is answered 503
        (retryable) and closed."""
        with (
            running_gateway(receiver, max_connections=4) as service,
            _connections(service.http_port, 4) as busy,
        ):
            for sock in busy:
                sock.sendall(_headers(service.http_port, 1000) + b"x")  # a body under way
            time.sleep(0.2)  # let the server read them (no timing is asserted)
            assert post(service.http_port, "/v1/traces", BODY).status == 503

    def test_silent_connections_do_not_lock_senders_out(self, receiver: OTLPReceiver) -> None:
        """300 connections that never send a byte, against a limit of 16: every legitimate request is
        still answered 200, the silent ones closed oldest first to make room."""
        with running_gateway(receiver, max_connections=16) as service, _connections(service.http_port, 300):
            time.sleep(0.5)
            statuses = [post(service.http_port, "/v1/traces", BODY).status for _ in range(20)]
            server = service.http_server
            assert server is not None
            assert server.idle_closed >= 284
        assert statuses == [200] * 20

    def test_idle_keep_alive_connections_do_not_lock_senders_out(self, receiver: OTLPReceiver) -> None:
        """300 kept-alive connections, each idle after one request, against a limit of 16: new senders
        are served (the idle ones are closed first, as a keep-alive pool does)."""
        with running_gateway(receiver, max_connections=16) as service:
            kept = []
            try:
                for _ in range(300):
                    sock = socket.create_connection(("127.0.0.1", service.http_port), timeout=30)
                    kept.append(sock)
                    sock.sendall(_headers(service.http_port, len(BODY)) + BODY)
                    assert _read_answer_status(sock) in (200, 0)
                statuses = [post(service.http_port, "/v1/traces", BODY).status for _ in range(20)]
            finally:
                for sock in kept:
                    sock.close()
        assert statuses == [200] * 20


def _read_answer_status(sock: socket.socket) -> int:
    sock.settimeout(60)
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            return 0
        head += chunk
    return int(head.split(b" ", 2)[1])


class TestRefusedBeforeReading:
    def test_a_full_spool_refuses_without_reading_or_decoding_the_body(
        self, receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """When the spool has no room, a 3 MB request is answered 429 from its headers alone: the body
        is never sent, let alone parsed."""
        parsed: list[object] = []
        original = _decode._parse_protobuf
        monkeypatch.setattr(_decode, "_parse_protobuf", lambda *args: parsed.append(args) or original(*args))
        with running_gateway(receiver, spool=MemorySpool(1_000_000)) as service:
            assert service.gateway.spool.space.reserve(900_000)  # another request being received
            with _connections(service.http_port, 1) as (sock,):
                sock.sendall(_headers(service.http_port, 3_000_000))  # and no body
                answer = _read_answer(sock)
        assert answer.startswith(b"HTTP/1.1 429")
        assert b"retry-after: 1" in answer.lower()
        status = status_pb2.Status.FromString(answer.split(b"\r\n\r\n", 1)[1])
        assert "the spool is full" in status.message
        assert parsed == []
        assert service.gateway.counts().refused_full == 1

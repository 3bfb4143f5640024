"""Chunked OTLP/HTTP bodies (no Content-Length) against a real ``serve`` process and a real receiver.

The OpenTelemetry JS OTLP/HTTP exporter sends its body chunked; the gateway reads such a body under
the same byte limit (counted while it arrives), the same whole-request deadline and the same
decompression bound as one with a length.
"""

from __future__ import annotations

import gzip
import http.client
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from otlp_receiver import OTLPReceiver

from gateway.otlp_requests import plain_spans, trace_request
from gateway.serve_process import ServeProcess, parse_summary

LIMIT = 200_000
DEADLINE_SECONDS = 3


@pytest.fixture(name="serve")
def _serve(receiver: OTLPReceiver, tmp_path: Path) -> Iterator[ServeProcess]:
    with ServeProcess(
        f"http://{receiver.grpc_endpoint}",
        tmp_path / "spool",
        "--no-checks",
        "--max-request-bytes",
        str(LIMIT),
        "--request-timeout-seconds",
        str(DEADLINE_SECONDS),
    ) as serve:
        yield serve


def _chunks(body: bytes, size: int = 1000) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def _post_chunked(port: int, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(
            "POST",
            "/v1/traces",
            body=_chunks(body),
            headers={"Content-Type": "application/x-protobuf", **(headers or {})},
            encode_chunked=True,
        )
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _chunked_head(port: int) -> bytes:
    return (
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/x-protobuf\r\n"
        "Transfer-Encoding: chunked\r\n\r\n"
    ).encode()


def _chunk(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


def _status(sock: socket.socket, timeout: float = 30.0) -> int:
    sock.settimeout(timeout)
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            return 0
        head += chunk
    return int(head.split(b" ", 2)[1])


class TestChunkedBodies:
    def test_a_chunked_body_is_read_and_forwarded(self, serve: ServeProcess, receiver: OTLPReceiver) -> None:
        """A protobuf body sent chunked (no Content-Length) is answered 200 and every span arrives."""
        body = trace_request(plain_spans(50)).SerializeToString()
        status, _ = _post_chunked(serve.ports["http"], body)
        assert status == 200
        assert serve.stop() == 0, serve.stderr
        assert parse_summary(serve.stderr).forwarded == 50
        assert len({span.span_id for span in receiver.spans}) == 50

    def test_a_chunked_gzip_body_is_read(self, serve: ServeProcess, receiver: OTLPReceiver) -> None:
        """Chunked framing and gzip together: decompressed under the same bound."""
        body = gzip.compress(trace_request(plain_spans(20)).SerializeToString())
        status, _ = _post_chunked(serve.ports["http"], body, {"Content-Encoding": "gzip"})
        assert status == 200
        assert receiver.wait_for(lambda r: len(r.spans) == 20, timeout=30)

    def test_a_chunked_body_is_refused_the_moment_it_passes_the_limit(self, serve: ServeProcess) -> None:
        """A chunked body that passes the byte limit is answered 413 while it is still being sent (the
        sender never finishes its body), and the gateway keeps serving."""
        port = serve.ports["http"]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(_chunked_head(port))
            for _ in range(LIMIT // 10_000 + 2):
                sock.sendall(_chunk(b"x" * 10_000))
            assert _status(sock) == 413  # no terminating chunk was sent
        body = trace_request(plain_spans(3)).SerializeToString()
        assert _post_chunked(port, body)[0] == 200

    def test_a_chunked_gzip_bomb_is_413(self, serve: ServeProcess) -> None:
        """A small chunked gzip body inflating past the limit is refused as too large."""
        bomb = gzip.compress(b"\0" * (LIMIT * 20))
        status, _ = _post_chunked(serve.ports["http"], bomb, {"Content-Encoding": "gzip"})
        assert status == 413

    def test_a_trickling_chunked_body_is_cut_at_the_deadline(self, serve: ServeProcess) -> None:
        """A chunked body that never ends is answered 408 once the whole-request deadline passes."""
        port = serve.ports["http"]
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(_chunked_head(port) + _chunk(b"x" * 10))
            assert _status(sock, timeout=DEADLINE_SECONDS * 10) == 408

    def test_a_declared_length_past_the_limit_is_answered_before_the_body_cleanly(
        self, serve: ServeProcess
    ) -> None:
        """A Content-Length past the limit is answered 413 from the headers; a sender that writes its
        whole body anyway (as most clients do before reading) still reads the 413, not a reset."""
        body = b"x" * (LIMIT * 40)
        connection = http.client.HTTPConnection("127.0.0.1", serve.ports["http"], timeout=30)
        try:
            connection.request(
                "POST", "/v1/traces", body=body, headers={"Content-Type": "application/x-protobuf"}
            )
            assert connection.getresponse().status == 413
        finally:
            connection.close()

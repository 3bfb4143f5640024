"""TLS and bearer tokens on both listeners, with the SDK's own OTLP exporters as senders."""

from __future__ import annotations

import logging
import signal
import socket
import ssl
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc
from opentelemetry.sdk.trace.export import SpanExportResult
from otlp_receiver import OTLPReceiver

from gateway.certs import Certificates, make_certificates
from gateway.otlp_requests import plain_spans, post, trace_request
from gateway.running import eventually, running_gateway
from gateway.serve_process import ServeProcess
from gateway.test_backpressure import _ended_spans
from otel_shapecheck.gateway import _decode
from otel_shapecheck.gateway._security import TLSSettings, TokenFile, warn_if_exposed
from otel_shapecheck.gateway._service import GatewayService

TOKEN = "s3cret-token-for-tests"


@pytest.fixture(name="certs", scope="module")
def _certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(autouse=True)
def _no_ca_bundle_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests lets REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE override a session's CA file (psf/requests#3829),
    which would hide the SDK exporter's ``certificate_file``: the tests' CA must be the one used."""
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)


@pytest.fixture(name="tokens")
def _tokens(tmp_path: Path) -> TokenFile:
    path = tmp_path / "tokens"
    path.write_text(f"# senders\n{TOKEN}\n\nother-token\n", encoding="utf-8")
    return TokenFile(path)


@pytest.fixture(name="secured")
def _secured(receiver: OTLPReceiver, certs: Certificates, tokens: TokenFile) -> Iterator[GatewayService]:
    tls = TLSSettings.of(str(certs.server_cert), str(certs.server_key))
    with running_gateway(receiver, tls=tls, tokens=tokens) as service:
        yield service


def _grpc_exporter(service: GatewayService, certs: Certificates, token: str | None) -> GrpcSpanExporter:
    credentials = grpc.ssl_channel_credentials(root_certificates=certs.ca.read_bytes())
    headers = {"authorization": f"Bearer {token}"} if token else None
    return GrpcSpanExporter(
        endpoint=f"https://127.0.0.1:{service.grpc_port}",
        credentials=credentials,
        headers=headers,
        timeout=10,
    )


def _http_exporter(
    service: GatewayService, certs: Certificates, token: str | None, timeout: float = 10
) -> HttpSpanExporter:
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return HttpSpanExporter(
        endpoint=f"https://127.0.0.1:{service.http_port}/v1/traces",
        certificate_file=str(certs.ca),
        headers=headers,
        timeout=timeout,
    )


class TestTlsWithToken:
    def test_sdk_exporters_deliver_over_tls_with_a_token(
        self, secured: GatewayService, receiver: OTLPReceiver, certs: Certificates
    ) -> None:
        """The SDK's gRPC and HTTP exporters, over TLS with a bearer token: every span is forwarded."""
        grpc_spans, http_spans = _ended_spans(5, "grpc"), _ended_spans(7, "http")
        for exporter, spans in (
            (_grpc_exporter(secured, certs, TOKEN), grpc_spans),
            (_http_exporter(secured, certs, TOKEN), http_spans),
        ):
            assert exporter.export(spans) is SpanExportResult.SUCCESS
            exporter.shutdown()
        assert receiver.wait_for(lambda r: len(r.spans) == 12, timeout=30)

    @pytest.mark.parametrize("token", [None, "wrong-token"], ids=["no-token", "wrong-token"])
    def test_without_the_token_nothing_is_decoded_or_forwarded(
        self,
        secured: GatewayService,
        receiver: OTLPReceiver,
        certs: Certificates,
        token: str | None,
        monkeypatch: pytest.MonkeyPatch,
    ) -> None:
        """Without a valid token: 401 / UNAUTHENTICATED, and the body is never parsed."""
        parsed: list[object] = []
        monkeypatch.setattr(_decode, "_parse_protobuf", lambda *args: parsed.append(args))
        with (
            grpc.secure_channel(
                f"127.0.0.1:{secured.grpc_port}", grpc.ssl_channel_credentials(certs.ca.read_bytes())
            ) as channel,
            pytest.raises(grpc.RpcError) as refused,
        ):
            metadata = (("authorization", f"Bearer {token}"),) if token else ()
            trace_service_pb2_grpc.TraceServiceStub(channel).Export(
                trace_request(plain_spans(2)), metadata=metadata, timeout=10
            )
        assert refused.value.code() is grpc.StatusCode.UNAUTHENTICATED
        context = ssl.create_default_context(cafile=str(certs.ca))
        request = urllib.request.Request(
            f"https://127.0.0.1:{secured.http_port}/v1/traces",
            data=trace_request(plain_spans(2)).SerializeToString(),
            headers={"Content-Type": "application/x-protobuf", **({"Authorization": token} if token else {})},
        )
        with pytest.raises(urllib.error.HTTPError) as unauthorized:
            urllib.request.urlopen(request, timeout=10, context=context)
        assert unauthorized.value.code == 401
        assert unauthorized.value.headers["www-authenticate"].startswith("Bearer")
        assert parsed == []
        assert receiver.spans == []

    def test_plaintext_is_refused_by_a_tls_listener(
        self, secured: GatewayService, receiver: OTLPReceiver
    ) -> None:
        """A plaintext HTTP client gets no answer from the TLS listener; nothing is forwarded."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{secured.http_port}/v1/traces",
            data=trace_request(plain_spans(1)).SerializeToString(),
            headers={"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"},
        )
        with pytest.raises(OSError):
            urllib.request.urlopen(request, timeout=10)
        assert receiver.spans == []


class TestMutualTls:
    def test_client_certificates_are_required(
        self, receiver: OTLPReceiver, certs: Certificates, tokens: TokenFile
    ) -> None:
        """With --tls-client-ca, a client without a certificate is refused and one with it delivers."""
        tls = TLSSettings.of(str(certs.server_cert), str(certs.server_key), str(certs.ca))
        with running_gateway(receiver, tls=tls, tokens=tokens) as service:
            anonymous = _http_exporter(service, certs, TOKEN, timeout=2)  # retried until the timeout
            assert anonymous.export(_ended_spans(2, "anonymous")) is SpanExportResult.FAILURE
            anonymous.shutdown()
            known = HttpSpanExporter(
                endpoint=f"https://127.0.0.1:{service.http_port}/v1/traces",
                certificate_file=str(certs.ca),
                client_certificate_file=str(certs.client_cert),
                client_key_file=str(certs.client_key),
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=10,
            )
            assert known.export(_ended_spans(3, "known")) is SpanExportResult.SUCCESS
            known.shutdown()
            assert receiver.wait_for(lambda r: len(r.spans) == 3, timeout=30)


class TestTokenFile:
    def test_reload_applies_new_tokens_and_keeps_the_old_on_a_bad_file(self, tmp_path: Path) -> None:
        """SIGHUP's reload: new tokens apply; an empty file keeps the ones in force."""
        path = tmp_path / "tokens"
        path.write_text("first\n", encoding="utf-8")
        tokens = TokenFile(path)
        assert tokens.allows("Bearer first") and not tokens.allows("Bearer second")
        path.write_text("second\n", encoding="utf-8")
        assert tokens.reload()
        assert tokens.allows("bearer second") and not tokens.allows("Bearer first")
        path.write_text("# nothing\n", encoding="utf-8")
        assert not tokens.reload()
        assert tokens.allows("Bearer second")
        assert not tokens.allows("second") and not tokens.allows(None)

    def test_an_empty_token_file_is_a_start_up_error(self, tmp_path: Path) -> None:
        """A file without a token would lock every sender out: refused at start-up, naming the file."""
        path = tmp_path / "tokens"
        path.write_text("\n# none\n", encoding="utf-8")
        with pytest.raises(ValueError, match="holds no token"):
            TokenFile(path)

    def test_tls_needs_both_files(self, certs: Certificates) -> None:
        """A certificate without its key (or a bad file) is a start-up error naming the flags."""
        with pytest.raises(ValueError, match="go together"):
            TLSSettings.of(str(certs.server_cert), None)
        with pytest.raises(ValueError, match="cannot load them"):
            TLSSettings.of(str(certs.server_cert), str(certs.ca))


class TestExposure:
    @pytest.mark.parametrize(
        ("host", "tls", "auth", "warned"),
        [
            ("127.0.0.1", False, False, False),
            ("localhost", False, False, False),
            ("::1", False, False, False),
            ("0.0.0.0", False, False, True),
            ("0.0.0.0", True, False, True),
            ("0.0.0.0", True, True, False),
        ],
    )
    def test_a_non_loopback_listener_without_tls_and_tokens_warns(
        self, caplog: pytest.LogCaptureFixture, host: str, tls: bool, auth: bool, warned: bool
    ) -> None:
        """Plain 127.0.0.1 is quiet; any other address without both TLS and tokens logs a warning."""
        with caplog.at_level(logging.WARNING):
            warn_if_exposed("HTTP", host, tls=tls, auth=auth)
        assert bool(caplog.records) is warned


class TestServeCommand:
    def test_sighup_reloads_the_token_file(self, tmp_path: Path, receiver: OTLPReceiver) -> None:
        """``kill -HUP`` makes a running gateway take the token file's new tokens and drop the old ones."""
        tokens = tmp_path / "tokens"
        tokens.write_text("old-token\n", encoding="utf-8")
        body = trace_request(plain_spans(1)).SerializeToString()

        def status(port: int, token: str) -> int:
            return post(port, "/v1/traces", body, {"Authorization": f"Bearer {token}"}).status

        with ServeProcess(
            f"http://{receiver.grpc_endpoint}", tmp_path / "spool", "--auth-token-file", str(tokens)
        ) as gateway:
            port = gateway.ports["http"]
            assert (status(port, "old-token"), status(port, "new-token")) == (200, 401)
            tokens.write_text("new-token\n", encoding="utf-8")
            gateway.process.send_signal(signal.SIGHUP)
            assert eventually(lambda: status(port, "new-token") == 200, timeout=30)
            assert status(port, "old-token") == 401
            gateway.stop()
        assert "Reloaded 1 bearer tokens" in gateway.stderr


class TestTokenFileEncoding:
    def test_a_byte_order_mark_is_not_part_of_the_first_token(
        self, tmp_path: Path, receiver: OTLPReceiver
    ) -> None:
        """A token file saved with a UTF-8 byte-order mark (as some editors do) and a non-ASCII token: a
        running ``serve`` takes the first token as written and the non-ASCII one sent as UTF-8 bytes."""
        tokens = tmp_path / "tokens"
        tokens.write_bytes("\ufefffirst-token\nclé-à-molette\n".encode())
        body = trace_request(plain_spans(1)).SerializeToString()

        def status(port: int, token: bytes) -> int:
            # http.client sends a str header as latin-1: these are the token's UTF-8 bytes on the wire.
            return post(
                port, "/v1/traces", body, {"Authorization": "Bearer " + token.decode("latin-1")}
            ).status

        with ServeProcess(
            f"http://{receiver.grpc_endpoint}", tmp_path / "spool", "--auth-token-file", str(tokens)
        ) as gateway:
            port = gateway.ports["http"]
            found = (status(port, b"first-token"), status(port, "clé-à-molette".encode()), status(port, b"x"))
            gateway.stop()
        assert found == (200, 200, 401)

    def test_a_file_holding_only_a_byte_order_mark_holds_no_token(self, tmp_path: Path) -> None:
        """A BOM alone is not a token: the file is refused at start-up like an empty one."""
        path = tmp_path / "tokens"
        path.write_bytes(b"\xef\xbb\xbf\n")
        with pytest.raises(ValueError, match="holds no token"):
            TokenFile(path)

    def test_tokens_compare_as_bytes(self, tmp_path: Path) -> None:
        """A header value given as bytes (UTF-8) or as text matches the token of the same characters."""
        path = tmp_path / "tokens"
        path.write_text("ключ\n", encoding="utf-8")
        tokens = TokenFile(path)
        assert tokens.allows("Bearer ключ".encode())
        assert tokens.allows("Bearer ключ")
        assert not tokens.allows("Bearer ключ".encode("utf-16"))


class TestStalledHandshakes:
    def test_connections_that_never_say_hello_are_closed_at_the_handshake_deadline(
        self, receiver: OTLPReceiver, certs: Certificates, tokens: TokenFile
    ) -> None:
        """100 TCP connections that never send a ClientHello are closed once the handshake deadline
        passes (1 s here), counted, and an HTTPS sender is served meanwhile."""
        tls = TLSSettings.of(str(certs.server_cert), str(certs.server_key))
        with running_gateway(receiver, tls=tls, tokens=tokens, tls_handshake_timeout_seconds=1.0) as service:
            stalled = [
                socket.create_connection(("127.0.0.1", service.http_port), timeout=30) for _ in range(100)
            ]
            try:
                exporter = _http_exporter(service, certs, TOKEN)
                assert exporter.export(_ended_spans(3, "during")) is SpanExportResult.SUCCESS
                exporter.shutdown()
                closed = 0
                for sock in stalled:
                    sock.settimeout(30)
                    try:
                        closed += sock.recv(1) == b""
                    except ConnectionResetError:
                        closed += 1
            finally:
                for sock in stalled:
                    sock.close()
            server = service.http_server
            assert server is not None
            assert eventually(lambda: server.handshakes_timed_out >= 100, timeout=10), (
                server.handshakes_timed_out
            )
        assert closed == 100

"""Who may send to the gateway: bearer tokens from a file, TLS (and mTLS) settings for both listeners.

Tokens are read from a UTF-8 file (a leading byte-order mark is dropped), one per line (blank lines and
``#`` comments ignored), and kept as SHA-256 digests of their UTF-8 bytes; a presented token's bytes are
hashed and looked up, so a non-ASCII token matches as sent and the comparison takes the same time
whatever the token. :meth:`TokenFile.reload` (``SIGHUP``) reads the file again; an unreadable or empty
file keeps the tokens in force and logs why. Both transports check the ``authorization`` header
(``Bearer <token>``) before they read or decode anything else of a request.
"""

from __future__ import annotations

import hashlib
import ipaddress
import logging
import os
import ssl
import threading
from dataclasses import dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

_BEARER = b"bearer "


class TokenFile:
    """The bearer tokens senders must present, from ``path``.

    Raises:
        ValueError: the file cannot be read or holds no token.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._digests = self._read()

    def __len__(self) -> int:
        return len(self._digests)

    def allows(self, authorization: bytes | str | None) -> bool:
        """Whether an ``authorization`` header value (its bytes as received, or text) carries one of the
        tokens."""
        if isinstance(authorization, str):
            authorization = authorization.encode("utf-8", "surrogateescape")
        if not authorization or authorization[: len(_BEARER)].lower() != _BEARER:
            return False
        token = authorization[len(_BEARER) :].strip()
        digest = hashlib.sha256(token).digest()
        with self._lock:
            return digest in self._digests

    def reload(self) -> bool:
        """Read the file again; on a problem keep the current tokens. Whether the new ones apply."""
        try:
            digests = self._read()
        except ValueError as problem:
            logger.warning("Keeping the %d bearer tokens in force: %s", len(self), problem)
            return False
        with self._lock:
            self._digests = digests
        logger.warning("Reloaded %d bearer tokens from %s", len(digests), self.path)
        return True

    def _read(self) -> frozenset[bytes]:
        try:
            text = self.path.read_text(encoding="utf-8-sig")  # a byte-order mark is not a token
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"--auth-token-file {str(self.path)!r}: cannot read it ({error})") from None
        tokens = [line.strip() for line in text.splitlines()]
        digests = frozenset(
            hashlib.sha256(token.encode("utf-8")).digest()
            for token in tokens
            if token and not token.startswith("#")
        )
        if not digests:
            raise ValueError(f"--auth-token-file {str(self.path)!r} holds no token (one per line)")
        return digests


@dataclass(frozen=True)
class TLSSettings:
    """The listeners' certificate and key, and the CA whose client certificates are required (mTLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    @classmethod
    def of(cls, cert: str | None, key: str | None, client_ca: str | None = None) -> TLSSettings | None:
        """Settings from the command line's paths (``None`` without TLS), checked to load.

        Raises:
            ValueError: only one of certificate and key, a client CA without them, or files that do not
                load as a certificate chain and its key.
        """
        if cert is None and key is None:
            if client_ca is not None:
                raise ValueError("--tls-client-ca needs --tls-cert and --tls-key")
            return None
        if cert is None or key is None:
            raise ValueError("--tls-cert and --tls-key go together: give both")
        settings = cls(Path(cert).expanduser(), Path(key).expanduser(), _path(client_ca))
        settings.server_context()  # fail at start-up, naming the files, not at the first connection
        return settings

    def server_context(self) -> ssl.SSLContext:
        """A server-side TLS context (TLS 1.2 or later) for these files.

        Raises:
            ValueError: the files do not load.
        """
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert, self.key)
            if self.client_ca is not None:
                context.load_verify_locations(self.client_ca)
                context.verify_mode = ssl.CERT_REQUIRED
        except (OSError, ssl.SSLError) as error:
            raise ValueError(
                f"--tls-cert {str(self.cert)!r} / --tls-key {str(self.key)!r}"
                f"{f' / --tls-client-ca {str(self.client_ca)!r}' if self.client_ca else ''}: "
                f"cannot load them ({error})"
            ) from None
        return context

    def grpc_files(self) -> tuple[bytes, bytes, bytes | None]:
        """Key, certificate chain and client CA as bytes, as ``grpc.ssl_server_credentials`` takes them."""
        client_ca = self.client_ca.read_bytes() if self.client_ca is not None else None
        return self.key.read_bytes(), self.cert.read_bytes(), client_ca


def _path(value: str | None) -> Path | None:
    return Path(value).expanduser() if value is not None else None


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) only accepts connections from this machine."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def warn_if_exposed(listener: str, host: str, *, tls: bool, auth: bool) -> None:
    """Log a warning when a listener on a non-loopback address has neither TLS nor a token check."""
    if is_loopback(host) or (tls and auth):
        return
    missing = " and ".join(
        name
        for name, present in (("TLS (--tls-cert/--tls-key)", tls), ("tokens (--auth-token-file)", auth))
        if not present
    )
    logger.warning(
        "The %s listener on %s accepts connections from other machines without %s: anyone who reaches "
        "it can send telemetry%s",
        listener,
        host,
        missing,
        "" if tls else " and read what travels in plaintext",
    )

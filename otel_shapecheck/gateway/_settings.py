"""The gateway's listener defaults and where its spool lives (its bounds are ``GatewayOptions``)."""

from __future__ import annotations

from pathlib import Path

from otel_shapecheck._settings import non_negative_float
from otel_shapecheck.gateway._spool import default_spool_directory

DEFAULT_REQUEST_TIMEOUT_SECONDS = 15.0
DEFAULT_IDLE_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS = 5.0


def tls_handshake_timeout(explicit: float | None = None, *, request_timeout_seconds: float) -> float:
    """Longest a TLS handshake may take: ``explicit`` seconds (default 5 s), at most the request deadline
    (a listener setting, like the request deadline itself: an argument and a flag, no variable)."""
    value = non_negative_float(
        "tls_handshake_timeout_seconds", explicit, None, DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS
    )
    return min(value, request_timeout_seconds) if value > 0 else request_timeout_seconds


def spool_directory(explicit: str | None = None) -> Path:
    """Where the spool lives: ``explicit``, else a per-user state directory."""
    if explicit is not None and explicit.strip():
        return Path(explicit).expanduser()
    return default_spool_directory()

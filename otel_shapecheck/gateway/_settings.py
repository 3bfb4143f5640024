"""The gateway's listener defaults and where its spool lives (its bounds are ``GatewayOptions``)."""

from __future__ import annotations

from pathlib import Path

from otel_shapecheck.gateway._spool import default_spool_directory

DEFAULT_REQUEST_TIMEOUT_SECONDS = 15.0
DEFAULT_IDLE_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_CONNECTIONS = 256


def spool_directory(explicit: str | None = None) -> Path:
    """Where the spool lives: ``explicit``, else a per-user state directory."""
    if explicit is not None and explicit.strip():
        return Path(explicit).expanduser()
    return default_spool_directory()

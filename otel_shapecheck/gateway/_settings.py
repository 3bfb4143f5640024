"""The gateway's settings: an argument, else its environment variable, else a default."""

from __future__ import annotations

import os
from pathlib import Path

from otel_shapecheck._settings import non_negative_float, positive_int
from otel_shapecheck.environment_variables import (
    OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES,
    OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE,
    OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES,
    OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES,
    OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
    OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS,
    OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES,
    OTEL_SHAPECHECK_GATEWAY_TLS_HANDSHAKE_TIMEOUT_SECONDS,
    OTEL_SHAPECHECK_MAX_FACT_BYTES,
)
from otel_shapecheck.gateway._spool import default_spool_directory
from otel_shapecheck.pipeline._options import ProcessorOptions

MIB = 1024 * 1024
DEFAULT_MAX_QUEUE_SIZE = 16384
DEFAULT_MAX_QUEUE_BYTES = 64 * MIB
DEFAULT_MAX_RECEIVING_BYTES = 64 * MIB
DEFAULT_MAX_REQUEST_BYTES = 4 * MIB
DEFAULT_RETRY_AFTER_SECONDS = 1.0
DEFAULT_SHUTDOWN_TIMEOUT_SECONDS = 25.0
DEFAULT_SPOOL_MAX_BYTES = 1024 * MIB
DEFAULT_MEMORY_SPOOL_MAX_BYTES = 128 * MIB
DEFAULT_REQUEST_TIMEOUT_SECONDS = 15.0
DEFAULT_IDLE_TIMEOUT_SECONDS = 30.0
DEFAULT_MAX_CONNECTIONS = 256
DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS = 5.0


def max_request_bytes(explicit: int | None = None) -> int:
    """The largest request body the transports accept, decompressed (argument, variable, 4 MiB)."""
    return positive_int(
        "max_request_bytes", explicit, OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES, DEFAULT_MAX_REQUEST_BYTES
    )


def resolve_retry_after(explicit: float | None = None) -> float:
    """The retry delay suggested to refused senders (argument, variable, 1 s)."""
    return non_negative_float(
        "retry_after_seconds",
        explicit,
        OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
        DEFAULT_RETRY_AFTER_SECONDS,
    )


def gateway_queue_size(explicit: int | None = None) -> int:
    """Items in the pipeline at once (argument, variable, 16384)."""
    return positive_int(
        "max_queue_size", explicit, OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE, DEFAULT_MAX_QUEUE_SIZE
    )


def gateway_queue_bytes(explicit: int | None = None) -> int:
    """Bytes of spooled requests whose items are in the pipeline at once (argument, variable, 64 MiB)."""
    return positive_int(
        "max_queue_bytes", explicit, OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES, DEFAULT_MAX_QUEUE_BYTES
    )


def receiving_bytes(explicit: int | None = None) -> int:
    """Bytes of request bodies being received and decoded at once (argument, variable, 64 MiB)."""
    return positive_int(
        "max_receiving_bytes",
        explicit,
        OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES,
        DEFAULT_MAX_RECEIVING_BYTES,
    )


def spool_max_bytes(explicit: int | None = None, *, durable: bool = True) -> int:
    """Bytes the spool may hold (argument, variable, 1 GiB on disk or 128 MiB in memory)."""
    default = DEFAULT_SPOOL_MAX_BYTES if durable else DEFAULT_MEMORY_SPOOL_MAX_BYTES
    return positive_int("spool_max_bytes", explicit, OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES, default)


def shutdown_timeout(explicit: float | None = None) -> float:
    """Longest a stop takes to evaluate and forward what it holds (argument, variable, 25 s)."""
    return non_negative_float(
        "shutdown_timeout_seconds",
        explicit,
        OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS,
        DEFAULT_SHUTDOWN_TIMEOUT_SECONDS,
    )


def tls_handshake_timeout(explicit: float | None = None, *, request_timeout_seconds: float) -> float:
    """Longest a TLS handshake may take (argument, variable, 5 s), at most the request deadline."""
    value = non_negative_float(
        "tls_handshake_timeout_seconds",
        explicit,
        OTEL_SHAPECHECK_GATEWAY_TLS_HANDSHAKE_TIMEOUT_SECONDS,
        DEFAULT_TLS_HANDSHAKE_TIMEOUT_SECONDS,
    )
    return min(value, request_timeout_seconds) if value > 0 else request_timeout_seconds


def spool_directory(explicit: str | None = None) -> Path:
    """Where the spool lives: ``explicit``, else a per-user state directory."""
    if explicit is not None and explicit.strip():
        return Path(explicit).expanduser()
    return default_spool_directory()


def gateway_processor_options(
    capacity: int,
    *,
    max_wait_millis: int | None = None,
    shutdown_timeout_seconds: float | None = None,
    queue_bytes: int | None = None,
) -> ProcessorOptions:
    """The span processor's bounds fitted to a gateway pipeline of ``capacity`` items.

    Its worker queue holds the whole capacity (no admitted span is forwarded un-evaluated for want of
    room), at most half of it waits for facts, its shutdown wait fits in the gateway's, and the facts it
    keeps for later spans of a trace (tool results, content records) hold at most a quarter of the
    pipeline's bytes unless ``OTEL_SHAPECHECK_MAX_FACT_BYTES`` says otherwise: facts outlive the spans
    that brought them, and a small share keeps memory near its baseline after a drain.
    """
    wait = shutdown_timeout(shutdown_timeout_seconds)
    fact_bytes = None
    if not os.environ.get(OTEL_SHAPECHECK_MAX_FACT_BYTES, "").strip():
        fact_bytes = max(1, gateway_queue_bytes(queue_bytes) // 4)
    return ProcessorOptions(
        max_queue_size=capacity,
        max_pending_spans=max(1, capacity // 2),
        max_wait_millis=max_wait_millis,
        shutdown_timeout_millis=max(1, int(wait * 1000 * 0.6)),
        max_fact_bytes=fact_bytes,
    )

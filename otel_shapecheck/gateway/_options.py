"""The gateway's settings: one frozen object, resolved once, like the span processor's ``ProcessorOptions``.

Each setting left out (or ``None``) is read from its variable, else its
default (the rows of ``otel_shapecheck._settings_table.GATEWAY``); a bad argument raises ``ValueError``
naming it, a bad variable logs one warning and the default applies.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from otel_shapecheck import _settings
from otel_shapecheck._settings_table import GATEWAY, MIB, PROCESSOR, by_name
from otel_shapecheck.pipeline._options import ProcessorOptions

DEFAULT_SPOOL_MAX_BYTES = 1024 * MIB
DEFAULT_MEMORY_SPOOL_MAX_BYTES = 128 * MIB
_FACT_BYTES = by_name(PROCESSOR, "max_fact_bytes")


@dataclass(frozen=True, init=False)
class GatewayOptions:
    """Bounds of the gateway in space and time, and what it tells refused senders.

    Args:
        max_queue_size: spans and log records in the pipeline at once
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE`, 16384); a request with more items is refused
            for good.
        max_queue_bytes: bytes of stored requests whose items are in the pipeline at once
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES`, 64 MiB).
        max_receiving_bytes: bytes of request bodies being received at once
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES`, 64 MiB).
        max_request_bytes: largest request, decompressed
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES`, 4 MiB).
        retry_after_millis: the retry delay suggested to refused senders
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS`, 1000).
        spool_max_bytes: bytes the spool may hold (:envvar:`OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES`;
            ``None``: 1 GiB on disk, 128 MiB in memory, see :meth:`spool_bytes`).
        spool_flush_millis: longest the durable spool defers the deletes of forwarded requests
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS`, 250).
        shutdown_timeout_millis: longest a stop spends evaluating and forwarding what is held
            (:envvar:`OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS`, 25000).

    Raises:
        ValueError: a setting that is not a whole number in its range.
    """

    max_queue_size: int
    max_queue_bytes: int
    max_receiving_bytes: int
    max_request_bytes: int
    retry_after_millis: int
    spool_max_bytes: int | None
    spool_flush_millis: int
    shutdown_timeout_millis: int

    def __init__(
        self,
        *,
        max_queue_size: int | None = None,
        max_queue_bytes: int | None = None,
        max_receiving_bytes: int | None = None,
        max_request_bytes: int | None = None,
        retry_after_millis: int | None = None,
        spool_max_bytes: int | None = None,
        spool_flush_millis: int | None = None,
        shutdown_timeout_millis: int | None = None,
    ) -> None:
        arguments = locals()
        for setting in GATEWAY:  # the fields, their variables and defaults: one row each in the table
            # frozen: the only writes happen here
            object.__setattr__(self, setting.name, setting.resolve(arguments[setting.name]))

    def replace(self, **changes: object) -> GatewayOptions:
        """A copy with ``changes`` applied (validated like constructor arguments)."""
        return GatewayOptions(**{**dataclasses.asdict(self), **changes})

    @property
    def retry_after_seconds(self) -> float:
        """``retry_after_millis`` in seconds."""
        return self.retry_after_millis / 1000

    @property
    def spool_flush_seconds(self) -> float:
        """``spool_flush_millis`` in seconds."""
        return self.spool_flush_millis / 1000

    @property
    def shutdown_timeout_seconds(self) -> float:
        """``shutdown_timeout_millis`` in seconds."""
        return self.shutdown_timeout_millis / 1000

    def spool_bytes(self, *, durable: bool) -> int:
        """Bytes the spool may hold: the setting, else 1 GiB on disk or 128 MiB in memory."""
        if self.spool_max_bytes is not None:
            return self.spool_max_bytes
        return DEFAULT_SPOOL_MAX_BYTES if durable else DEFAULT_MEMORY_SPOOL_MAX_BYTES

    def processor_options(self, *, max_wait_millis: int | None = None) -> ProcessorOptions:
        """The span processor's bounds fitted to this gateway's pipeline.

        Its worker queue holds the whole pipeline (no admitted span is forwarded un-evaluated for want
        of room), at most half of it waits for facts, its shutdown wait fits in the gateway's (60 %), and
        the facts it keeps for later spans of a trace (tool results, content records) hold at most a
        quarter of the pipeline's bytes unless ``OTEL_SHAPECHECK_MAX_FACT_BYTES`` says otherwise: facts
        outlive the spans that brought them, and a small share keeps memory near its baseline after a
        drain.
        """
        capacity = self.max_queue_size
        fact_bytes = max(1, self.max_queue_bytes // 4) if _settings.unset(_FACT_BYTES.variable) else None
        return ProcessorOptions(
            max_queue_size=capacity,
            max_pending_spans=max(1, capacity // 2),
            max_wait_millis=max_wait_millis,
            shutdown_timeout_millis=max(1, int(self.shutdown_timeout_millis * 0.6)),
            max_fact_bytes=fact_bytes,
        )

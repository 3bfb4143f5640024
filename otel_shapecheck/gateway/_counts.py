"""What the gateway answers a request, what a request holds while it is received, and what it counted."""

from __future__ import annotations

from dataclasses import dataclass

from otel_shapecheck.gateway._admission import Admission
from otel_shapecheck.gateway._spool_files import SpoolDamage


@dataclass(frozen=True)
class ExportAnswer:
    """The gateway's answer to one export request, for a transport to encode."""

    admission: Admission
    accepted: int
    """Items taken (0 unless accepted)."""
    rejected: int
    """Items that failed validation (partial success)."""
    error_message: str
    """Partial-success message, or why the request was refused."""
    retry_after_seconds: float
    """How long a refused sender should wait before retrying."""


@dataclass
class Ticket:
    """One request's reservations while it is received: receiving bytes (memory) and spool bytes."""

    receiving: int = 0
    spool: int = 0


@dataclass(frozen=True)
class GatewayCounts:
    """What the gateway did since it started; at a stop, every item is forwarded, dropped or left."""

    spans_accepted: int
    log_records_accepted: int
    rejected: int
    """Items refused one by one at the door (partial success)."""
    refused_full: int
    """Requests answered with backpressure."""
    in_flight: int
    """Items in the pipeline (being evaluated or forwarded) now."""
    waiting: int
    """Accepted requests waiting in the spool for room in the pipeline."""
    carried_over: int
    """Items a previous run left in the spool."""
    in_doubt: int
    """Of those, items that may have reached the destination already (possible duplicates)."""
    forwarded: int
    """Items the destination confirmed."""
    dropped: int
    """Items given up (``give_up_after_seconds``) or unreadable in the spool."""
    left_in_spool: int | None
    """Items not forwarded when the gateway stopped (``None`` while it runs)."""
    durable: bool
    """Whether the spool survives the process (else what is left is lost)."""
    spans_exported: int
    spans_export_failed: int
    log_records_exported: int
    log_records_export_failed: int
    export_retries: int
    spans_passed_through: int = 0
    """Of ``spans_exported``, spans forwarded as received (no evaluation needed; never converted)."""
    tracestates_dropped: int = 0
    """Span and link tracestates that broke the W3C grammar, removed at the door (the spans kept)."""
    spool_damage: SpoolDamage | None = None
    """A damaged spool found at start: what it lost (acknowledged by a previous run, not recoverable)."""

    @property
    def accepted(self) -> int:
        """Spans and log records acknowledged (spooled)."""
        return self.spans_accepted + self.log_records_accepted

    @property
    def unaccounted(self) -> int:
        """At a stop: items neither forwarded, dropped nor left in the spool (a bug if not 0)."""
        left = self.left_in_spool or 0
        return self.carried_over + self.accepted - self.forwarded - self.dropped - left

"""The analyst protocol: a structured-output step that turns an input into a list of findings.

An analyst asks a model for rows, validates them against a schema and returns the accepted ones as
findings. It reports through ``ctx.log(message, fields)``; the fields ``emitted`` (rows the model
produced) and ``accepted`` (rows the schema let through) are what separates "the model picked a bad
shape" from "there was nothing to find", which an empty finding list alone cannot say.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

EMITTED_FIELD = "emitted"
"""The ``ctx.log`` field holding how many rows the model emitted."""

ACCEPTED_FIELD = "accepted"
"""The ``ctx.log`` field holding how many of those rows the schema accepted."""


@runtime_checkable
class AnalystContext(Protocol):
    """What an analyst receives besides its input: at least a ``log`` through which it reports.

    Applications pass their own context objects (carrying clients, budgets, and so on); only ``log`` is
    required here.
    """

    def log(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        """Report one event of the analysis, with optional structured fields."""
        ...


@runtime_checkable
class Analyst(Protocol):
    """A structured-output step: ``analyze(input, ctx)`` returns its findings, directly or awaitably.

    ``analyze`` may be a plain function or ``async def``; wrappers keep that flavour.
    """

    @property
    def id(self) -> str:
        """A stable name for this analyst, used in records and span names."""
        ...

    def analyze(self, input: Any, ctx: AnalystContext) -> Sequence[Any] | Awaitable[Sequence[Any]]:
        """Analyse ``input`` and return the findings (possibly empty)."""
        ...


class SyncAnalyst(Protocol):
    """An analyst whose ``analyze`` returns its findings directly."""

    @property
    def id(self) -> str:
        """A stable name for this analyst."""
        ...

    def analyze(self, input: Any, ctx: AnalystContext) -> Sequence[Any]:
        """Analyse ``input`` and return the findings."""
        ...


class AsyncAnalyst(Protocol):
    """An analyst whose ``analyze`` is ``async def``."""

    @property
    def id(self) -> str:
        """A stable name for this analyst."""
        ...

    def analyze(self, input: Any, ctx: AnalystContext) -> Awaitable[Sequence[Any]]:
        """Analyse ``input`` and return the findings, awaitably."""
        ...

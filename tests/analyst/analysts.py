"""Scripted analysts for the tests: each call plays the next step of a script."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Step:
    """One scripted attempt: the counts it logs (``None``: logs nothing) and the findings it returns."""

    emitted: int | None
    accepted: int | None
    findings: Sequence[Any] = ()


def collapse(emitted: int = 3) -> Step:
    """An attempt whose rows were all rejected."""
    return Step(emitted=emitted, accepted=0)


def success(rows: int = 3) -> Step:
    """An attempt whose rows were all accepted."""
    return Step(emitted=rows, accepted=rows, findings=[{"subject": f"s{i}"} for i in range(rows)])


@dataclass
class RecordingContext:
    """A caller's context: keeps every log it receives, and carries an application attribute."""

    logs: list[tuple[str, Mapping[str, Any] | None]] = field(default_factory=list)
    budget: int = 7

    def log(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        self.logs.append((message, fields))


class ScriptedAnalyst:
    """A synchronous analyst playing ``steps`` in order (the last step repeats)."""

    def __init__(self, steps: Sequence[Step], analyst_id: str = "probe") -> None:
        self.id = analyst_id
        self.steps = list(steps)
        self.calls = 0
        self.contexts: list[Any] = []

    def _play(self, ctx: Any) -> list[Any]:
        step = self.steps[min(self.calls, len(self.steps) - 1)]
        self.calls += 1
        self.contexts.append(ctx)
        if step.emitted is not None or step.accepted is not None:
            ctx.log("rows", {"emitted": step.emitted, "accepted": step.accepted})
        return list(step.findings)

    def analyze(self, input: Any, ctx: Any) -> list[Any]:
        return self._play(ctx)


class AsyncScriptedAnalyst(ScriptedAnalyst):
    """The same script behind an ``async def analyze``."""

    async def analyze(self, input: Any, ctx: Any) -> list[Any]:  # type: ignore[override]
        return self._play(ctx)

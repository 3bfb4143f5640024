"""The error every OTLP input we cannot read raises: it names the input and what is wrong with it."""

from __future__ import annotations

STDIN = "-"
"""The path that means: read standard input."""


class UnreadableTraceFile(ValueError):
    """Input that is not exported traces in a shape we read; the message names the input and the problem."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{display_name(source)}: {problem}")
        self.source = source
        self.problem = problem


def display_name(source: str) -> str:
    """How an input is named in messages (standard input as ``<stdin>``)."""
    return "<stdin>" if source == STDIN else source

"""What a check is: a batch function from evaluation subjects to verdicts.

A check sees only the plain records of :mod:`otel_shapecheck._model`; the span processor and the offline
``check`` command both build :class:`Subject` values and turn the returned :class:`Verdict` values into
span attributes and ``gen_ai.evaluation.result`` events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeAlias, runtime_checkable

from otel_shapecheck._attributes import (
    EVALUATION_EXPLANATION,
    EVALUATION_NAME,
    EVALUATION_SCORE_LABEL,
    EVALUATION_SCORE_VALUE,
    FLAGGED,
    FLAGS,
    RESPONSE_ID,
)
from otel_shapecheck._model import AnalystRun, LLMCall, ToolResult

AttributeValue: TypeAlias = (
    "str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]"
)
"""A value an OpenTelemetry attribute can hold."""


@dataclass(frozen=True)
class Subject:
    """Everything known about one span that is up for evaluation.

    ``llm_call`` is set for an LLM-call span, with tool calls already joined from ``execute_tool``
    spans when its own output did not name them. ``analyst_run`` is set for an analyst span.
    ``trace_tool_results`` holds results of tool executions that ended earlier in the same trace.
    ``incomplete`` says a deadline or cap released the span before every awaited fact arrived.
    ``results_lost`` says spans of its trace that ended before it were let go by a bound (facts per
    trace, fact bytes, traces kept): a figure found in none of ``trace_tool_results`` may be in one of
    theirs.
    ``duplicate_of`` is set when another span of the trace already records the same LLM call: such a
    subject is not evaluated (checks never see it).
    """

    span_id: str
    trace_id: str
    llm_call: LLMCall | None = None
    analyst_run: AnalystRun | None = None
    trace_tool_results: tuple[ToolResult, ...] = ()
    incomplete: bool = False
    duplicate_of: str | None = None
    results_lost: bool = False


@dataclass(frozen=True)
class Verdict:
    """One check's result for one span.

    ``attributes`` are the ``shapecheck.*`` attributes the check adds to the span; ``flags`` are the
    values it contributes to ``shapecheck.flags``; the rest becomes the ``gen_ai.evaluation.result``
    event (``evaluation`` is its ``gen_ai.evaluation.name``).
    """

    evaluation: str
    attributes: Mapping[str, AttributeValue]
    label: str
    explanation: str
    score: float | None = None
    flags: tuple[str, ...] = field(default_factory=tuple)
    response_id: str | None = None
    content_keys: frozenset[str] = frozenset()
    """Keys of ``attributes`` that quote content (numbers from the answer or the tool results, tool
    names the model invented): they leave the process only where content already does."""

    def without_content(self) -> Verdict:
        """This verdict with its content attributes left out (counts, scores, labels and flags stay)."""
        if not self.content_keys:
            return self
        kept = {key: value for key, value in self.attributes.items() if key not in self.content_keys}
        return replace(self, attributes=kept, content_keys=frozenset())

    @property
    def flagged(self) -> bool:
        """Whether this verdict raised any flag."""
        return bool(self.flags)

    def event_attributes(self) -> dict[str, AttributeValue]:
        """The attributes of this verdict's ``gen_ai.evaluation.result`` event (span event or log record)."""
        attributes: dict[str, AttributeValue] = {
            EVALUATION_NAME: self.evaluation,
            EVALUATION_SCORE_LABEL: self.label,
            EVALUATION_EXPLANATION: self.explanation,
        }
        if self.score is not None:
            attributes[EVALUATION_SCORE_VALUE] = float(self.score)
        if self.response_id:
            attributes[RESPONSE_ID] = self.response_id
        return attributes


def enrichment_attributes(verdicts: Sequence[Verdict]) -> dict[str, AttributeValue]:
    """The attributes an evaluated span gains: every verdict's own, plus ``shapecheck.flagged``/``flags``."""
    attributes: dict[str, AttributeValue] = {}
    flags: list[str] = []
    for verdict in verdicts:
        attributes.update(verdict.attributes)
        flags.extend(flag for flag in verdict.flags if flag not in flags)
    attributes[FLAGGED] = bool(flags)
    attributes[FLAGS] = tuple(flags)
    return attributes


@runtime_checkable
class Check(Protocol):
    """A check the span processor runs on its evaluation worker.

    ``evaluate`` receives a batch and returns one entry per subject, in order: a verdict, or ``None``
    when the check does not apply to that subject. It runs off the application's thread; it may
    raise, in which case the processor counts the error and forwards the batch's spans un-enriched.
    """

    name: str

    def evaluate(self, subjects: Sequence[Subject]) -> Sequence[Verdict | None]:
        """Evaluate a batch of subjects."""
        ...

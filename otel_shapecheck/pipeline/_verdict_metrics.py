"""Verdict metrics: what a dashboard plots, recorded through the OpenTelemetry metrics API.

The worker records each evaluated span's verdicts once (a duplicate span of a call records nothing),
on the processor's ``MeterProvider`` (the given one, else the global one):

- counter ``shapecheck.verdicts`` by ``shapecheck.check``, ``shapecheck.label``, ``shapecheck.flagged``
  and the call's ``gen_ai.agent.name``, ``gen_ai.request.model``, ``gen_ai.provider.name``;
- histogram ``shapecheck.tool_choice.margin_plus_one`` (1 + the margin of each scored call: the SDK
  drops negative histogram values, and a negative margin, a disagreement, is the one that matters most);
- histogram ``shapecheck.figures.support`` (the share of supported figures of each answer with figures);
- counter ``shapecheck.figures.unsupported`` (unsupported figures, added per checked answer);

and each run once, when its agent span is summarised:

- counter ``shapecheck.runs`` by ``shapecheck.run.coverage`` (``none``, ``partial``, ``full``),
  ``shapecheck.flagged`` and the agent's ``gen_ai.agent.name``: a run in which no model call was seen
  is told apart from a clean one.

Attributes are low-cardinality by construction: the agent, model and provider names (each at most
:data:`~otel_shapecheck.readers._dimensions.MAX_DIMENSION_CHARS` characters; each the span's own, else
the nearest agent span's above it that has one), the check, its label and whether it flagged. No tool
name, span name or value, unless ``metrics_tool_names`` adds the chosen tool (``gen_ai.tool.name``) to
the tool-choice points.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from opentelemetry.metrics import MeterProvider, get_meter_provider
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.util.types import AttributeValue

from otel_shapecheck._attributes import (
    EVALUATION_FIGURES,
    EVALUATION_TOOL_CHOICE,
    FIGURES_CHECKED,
    METRIC_AGENT_NAME,
    METRIC_CHECK,
    METRIC_COVERAGE,
    METRIC_FIGURES_SUPPORT,
    METRIC_FIGURES_UNSUPPORTED,
    METRIC_FLAGGED,
    METRIC_LABEL,
    METRIC_PROVIDER_NAME,
    METRIC_REQUEST_MODEL,
    METRIC_RUNS,
    METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE,
    METRIC_TOOL_NAME,
    METRIC_VERDICTS,
    TOOL_CHOICE_CHOSEN,
)
from otel_shapecheck._version import __version__
from otel_shapecheck.checks._base import Verdict
from otel_shapecheck.pipeline._facts import attribute_mapping
from otel_shapecheck.pipeline._metrics import METER_NAME
from otel_shapecheck.pipeline._runs import unsupported_count
from otel_shapecheck.readers._dimensions import MAX_DIMENSION_CHARS, agent_name, provider_name, request_model

MARGIN_SHIFT: Final = 1.0
"""What the margin histogram adds to each margin, so that negative margins (disagreements) are kept."""
MARGIN_FLOOR: Final = -MARGIN_SHIFT
"""Margins below it (the chosen tool scored more than 1 below another; scores lie in [-1, 1], so a
margin is at least -2) are recorded as it: they fall in the lowest bucket either way."""
MARGIN_BUCKETS: Final = (-0.5, -0.2, -0.1, -0.05, 0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
"""Bucket bounds on the margin: fine around zero and the narrow thresholds (0.01, 0.05), where it matters."""
MARGIN_PLUS_ONE_BUCKETS: Final = (0.5, 0.8, 0.9, 0.95, 1.0, 1.02, 1.05, 1.1, 1.2, 1.3, 1.5)
"""The same bounds on the recorded value, ``1 + margin``, written out so the ``le`` labels read cleanly."""
SUPPORT_BUCKETS: Final = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
"""Bucket bounds of the supported share: a fully supported answer falls in the last, (0.99, 1]."""

_NAMESPACE = "shapecheck."
_DIMENSION_READERS: Final[tuple[tuple[str, Callable[[Mapping[str, object]], str | None]], ...]] = (
    (METRIC_AGENT_NAME, agent_name),
    (METRIC_REQUEST_MODEL, request_model),
    (METRIC_PROVIDER_NAME, provider_name),
)


class VerdictMetrics:
    """The four verdict instruments of one processor, and the rule that turns verdicts into points."""

    def __init__(self, meter_provider: MeterProvider | None, *, tool_names: bool = False) -> None:
        meter = (meter_provider or get_meter_provider()).get_meter(METER_NAME, __version__)
        self._tool_names = tool_names
        self._verdicts = meter.create_counter(
            METRIC_VERDICTS,
            unit="{verdict}",
            description="Verdicts of the shapecheck checks, by check and label.",
        )
        self._margin = meter.create_histogram(
            METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE,
            unit="1",
            description="1 + the tool-choice margin of each scored LLM call (best chosen minus best other "
            "score); below 1 the model chose against the scores.",
            explicit_bucket_boundaries_advisory=MARGIN_PLUS_ONE_BUCKETS,
        )
        self._support = meter.create_histogram(
            METRIC_FIGURES_SUPPORT,
            unit="1",
            description="Share of an answer's figures that tool results carry or derivations explain.",
            explicit_bucket_boundaries_advisory=SUPPORT_BUCKETS,
        )
        self._unsupported = meter.create_counter(
            METRIC_FIGURES_UNSUPPORTED,
            unit="{figure}",
            description="Figures in final answers that no tool result carries and no derivation explains.",
        )
        self._runs = meter.create_counter(
            METRIC_RUNS,
            unit="{run}",
            description="Agent runs summarised, by how much of them was read (coverage) and whether flagged.",
        )

    def record_run(self, coverage: str, flagged: bool, agent_attributes: Mapping[str, object]) -> None:
        """Count one summarised run (``agent_attributes``: its agent span's, for the agent name)."""
        name = _bounded(agent_name(agent_attributes))
        points: dict[str, AttributeValue] = {METRIC_COVERAGE: coverage, METRIC_FLAGGED: flagged}
        if name is not None:
            points[METRIC_AGENT_NAME] = name
        self._runs.add(1, points)

    def record(
        self,
        verdicts: Sequence[Verdict],
        span_attributes: Mapping[str, object],
        agents: Sequence[ReadableSpan | None] = (),
    ) -> None:
        """Record one evaluated span's verdicts (``span_attributes``: its own, for the agent, model and
        provider; ``agents``: the agent spans above it, nearest first, for those it lacks)."""
        if not verdicts:
            return
        dimensions = call_dimensions(span_attributes, agents)
        for verdict in verdicts:
            check = verdict.evaluation.removeprefix(_NAMESPACE)
            points = dimensions
            if self._tool_names and verdict.evaluation == EVALUATION_TOOL_CHOICE:
                # A tool name the model invented is content (and unbounded): only menu names go.
                points = {**dimensions, **_chosen_tool(verdict.without_content().attributes)}
            self._verdicts.add(
                1,
                {
                    **points,
                    METRIC_CHECK: check,
                    METRIC_LABEL: _bounded(verdict.label) or "",
                    METRIC_FLAGGED: verdict.flagged,
                },
            )
            if verdict.evaluation == EVALUATION_TOOL_CHOICE and verdict.score is not None:
                self._record_margin(float(verdict.score), points)
            elif verdict.evaluation == EVALUATION_FIGURES and FIGURES_CHECKED in verdict.attributes:
                self._record_figures(verdict, dimensions)

    def _record_margin(self, margin: float, points: Mapping[str, AttributeValue]) -> None:
        if math.isfinite(margin):
            self._margin.record(shifted_margin(margin), points)

    def _record_figures(self, verdict: Verdict, dimensions: Mapping[str, AttributeValue]) -> None:
        checked = verdict.attributes.get(FIGURES_CHECKED)
        if isinstance(checked, int) and checked > 0 and verdict.score is not None:
            self._support.record(float(verdict.score), dimensions)
        self._unsupported.add(unsupported_count(verdict.attributes), dimensions)


def shifted_margin(margin: float) -> float:
    """The value the margin histogram records: ``1 + margin``, never negative (see :data:`MARGIN_FLOOR`)."""
    return max(margin, MARGIN_FLOOR) + MARGIN_SHIFT


def call_dimensions(
    span_attributes: Mapping[str, object], agents: Sequence[ReadableSpan | None] = ()
) -> dict[str, AttributeValue]:
    """The agent, model and provider of an evaluated span: each its own, else that of the first of
    ``agents`` (the agent spans above it, nearest first) that has one.

    An analyst span (the conformance verdicts) or a framework's call span often names no model while
    the agent span it runs under does; without the ancestors, filtering on a model would drop its verdicts.
    """
    dimensions: dict[str, AttributeValue] = {}
    ancestors: list[Mapping[str, object]] | None = None
    for key, read in _DIMENSION_READERS:
        value = read(span_attributes)
        if value is None:
            if ancestors is None:  # read only when the span lacks a dimension (most calls have all three)
                ancestors = [attribute_mapping(agent) for agent in agents if agent is not None]
            value = next((found for attributes in ancestors if (found := read(attributes)) is not None), None)
        if value is not None:
            dimensions[key] = value
    return dimensions


def _chosen_tool(attributes: Mapping[str, object]) -> dict[str, AttributeValue]:
    chosen = attributes.get(TOOL_CHOICE_CHOSEN)
    first = chosen[0] if isinstance(chosen, list | tuple) and chosen else None
    name = _bounded(first if isinstance(first, str) else None)
    return {METRIC_TOOL_NAME: name} if name is not None else {}


def _bounded(value: str | None) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_DIMENSION_CHARS else None

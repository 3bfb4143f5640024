"""Verdict metrics: what a dashboard plots, recorded through the OpenTelemetry metrics API.

The worker records each evaluated span's verdicts once (a duplicate span of a call records nothing),
on the processor's ``MeterProvider`` (the given one, else the global one):

- counter ``shapecheck.verdicts`` by ``shapecheck.check``, ``shapecheck.label``, ``shapecheck.flagged``
  and the call's ``gen_ai.agent.name``, ``gen_ai.request.model``, ``gen_ai.provider.name``;
- histogram ``shapecheck.tool_choice.margin`` (the margin of each scored call);
- histogram ``shapecheck.figures.support`` (the share of supported figures of each answer with figures);
- counter ``shapecheck.figures.unsupported`` (unsupported figures, added per checked answer);

and each run once, when its agent span is summarised:

- counter ``shapecheck.runs`` by ``shapecheck.run.coverage`` (``none``, ``partial``, ``full``),
  ``shapecheck.flagged`` and the agent's ``gen_ai.agent.name``: a run in which no model call was seen
  is told apart from a clean one.

Attributes are low-cardinality by construction: the agent, model and provider names (each at most
:data:`~otel_shapecheck.readers._dimensions.MAX_DIMENSION_CHARS` characters), the check, its label and
whether it flagged. No tool name, span name or value, unless ``metrics_tool_names`` adds the chosen
tool (``gen_ai.tool.name``) to the tool-choice points.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    METRIC_TOOL_CHOICE_MARGIN,
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

MARGIN_BUCKETS: Final = (-0.5, -0.2, -0.1, -0.05, 0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5)
"""Bucket bounds of the margin histogram: fine around the narrow threshold (0.05), where it matters."""
SUPPORT_BUCKETS: Final = (0.0, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0)
"""Bucket bounds of the supported share: a fully supported answer falls in the last, (0.99, 1]."""

_NAMESPACE = "shapecheck."


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
            METRIC_TOOL_CHOICE_MARGIN,
            unit="1",
            description="Tool-choice margin of each scored LLM call (best chosen minus best other score).",
            explicit_bucket_boundaries_advisory=MARGIN_BUCKETS,
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
        provider; ``agents``: the agent spans above it, nearest first, for an agent name it lacks)."""
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
                self._margin.record(float(verdict.score), points)
            elif verdict.evaluation == EVALUATION_FIGURES and FIGURES_CHECKED in verdict.attributes:
                self._record_figures(verdict, dimensions)

    def _record_figures(self, verdict: Verdict, dimensions: Mapping[str, AttributeValue]) -> None:
        checked = verdict.attributes.get(FIGURES_CHECKED)
        if isinstance(checked, int) and checked > 0 and verdict.score is not None:
            self._support.record(float(verdict.score), dimensions)
        self._unsupported.add(unsupported_count(verdict.attributes), dimensions)


def call_dimensions(
    span_attributes: Mapping[str, object], agents: Sequence[ReadableSpan | None] = ()
) -> dict[str, AttributeValue]:
    """The agent (the span's own, else the first named of ``agents``), model and provider of a call."""
    pairs = (
        (METRIC_AGENT_NAME, agent_name(span_attributes) or _ancestor_agent_name(agents)),
        (METRIC_REQUEST_MODEL, request_model(span_attributes)),
        (METRIC_PROVIDER_NAME, provider_name(span_attributes)),
    )
    return {key: value for key, value in pairs if value is not None}


def _ancestor_agent_name(agents: Sequence[ReadableSpan | None]) -> str | None:
    for agent in agents:
        if agent is not None and (name := agent_name(attribute_mapping(agent))) is not None:
            return name
    return None


def _chosen_tool(attributes: Mapping[str, object]) -> dict[str, AttributeValue]:
    chosen = attributes.get(TOOL_CHOICE_CHOSEN)
    first = chosen[0] if isinstance(chosen, list | tuple) and chosen else None
    name = _bounded(first if isinstance(first, str) else None)
    return {METRIC_TOOL_NAME: name} if name is not None else {}


def _bounded(value: str | None) -> str | None:
    return value if isinstance(value, str) and 0 < len(value) <= MAX_DIMENSION_CHARS else None

"""Verdict metrics: the exact points a scripted agent run records, through an in-memory metric reader."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    COVERAGE_FULL,
    COVERAGE_NONE,
    EVALUATION_TOOL_CHOICE,
    METRIC_FIGURES_SUPPORT,
    METRIC_FIGURES_UNSUPPORTED,
    METRIC_RUNS,
    METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE,
    METRIC_VERDICTS,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    TOOL_CHOICE_MARGIN,
)
from otel_shapecheck.checks._base import Verdict
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._verdict_metrics import (
    MARGIN_BUCKETS,
    MARGIN_PLUS_ONE_BUCKETS,
    SUPPORT_BUCKETS,
    VerdictMetrics,
    shifted_margin,
)

from .runs import AGENT, CHOICE_OUTPUT, GENAI, MODEL, OPENINFERENCE, PROVIDER, genai_chat

VERDICT_METRICS = {
    METRIC_VERDICTS,
    METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE,
    METRIC_FIGURES_SUPPORT,
    METRIC_FIGURES_UNSUPPORTED,
}
CALL = {"gen_ai.agent.name": AGENT, "gen_ai.request.model": MODEL, "gen_ai.provider.name": PROVIDER}
"""The dimensions of every point of the scripted run."""


@dataclass(frozen=True)
class Point:
    """One collected point: a counter's value, or a histogram's count, sum and bucket bounds."""

    value: float
    total: float | None = None
    bounds: tuple[float, ...] = ()
    buckets: tuple[int, ...] = field(default=(), compare=False)
    """A histogram's bucket counts (not compared: the exact points say count, sum and bounds)."""


Points = dict[str, dict[frozenset[tuple[str, Any]], Point]]


def _points(reader: InMemoryMetricReader, names: frozenset[str] | set[str] = VERDICT_METRICS) -> Points:
    """The verdict metrics' points (or those of ``names``), by metric name and attribute set."""
    data = reader.get_metrics_data()
    points: Points = {}
    for resource_metrics in data.resource_metrics if data is not None else ():
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                if metric.name not in names:
                    continue
                for point in metric.data.data_points:
                    key = frozenset((point.attributes or {}).items())
                    if isinstance(point, HistogramDataPoint):
                        recorded = Point(
                            point.count, point.sum, tuple(point.explicit_bounds), tuple(point.bucket_counts)
                        )
                    else:
                        assert isinstance(point, NumberDataPoint)
                        recorded = Point(point.value)
                    points.setdefault(metric.name, {})[key] = recorded
    return points


def _key(**attributes: Any) -> frozenset[tuple[str, Any]]:
    return frozenset(attributes.items())


@contextmanager
def _recording(
    **options: object,
) -> Iterator[tuple[TracerProvider, ShapecheckSpanProcessor, CollectingSpanProcessor, InMemoryMetricReader]]:
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected,
        checks=build_checks("hashing"),
        options=ProcessorOptions(**options),  # type: ignore[arg-type]
        meter_provider=meter_provider,
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        yield provider, processor, collected, reader
    finally:
        provider.shutdown()
        meter_provider.shutdown()


def _scripted_run(provider: TracerProvider) -> None:
    """The run of ``runs.py``, its choosing call recorded twice (a framework span around the provider's)."""
    app, framework = provider.get_tracer("provider"), provider.get_tracer("framework")
    with GENAI.agent(app, AGENT):
        with framework.start_as_current_span(
            "framework chat",
            attributes=genai_chat("r-choose", CHOICE_OUTPUT),  # type: ignore[arg-type]
        ):
            GENAI.choose(app)
        GENAI.execute(app)
        GENAI.answer(app)


def _margin(spans: list[ReadableSpan]) -> float:
    (margin,) = [
        value for span in spans if isinstance(value := (span.attributes or {}).get(TOOL_CHOICE_MARGIN), float)
    ]
    return margin


class TestScriptedRun:
    def test_the_exact_points_of_a_run_with_a_duplicate_instrumented_call(self) -> None:
        """Three verdicts, one margin, one answer's support and its unsupported figure; the second span
        of the choosing call records nothing."""
        with _recording() as (provider, processor, collected, reader):
            _scripted_run(provider)
            assert processor.force_flush()
            points = _points(reader)
            margin = _margin(collected.spans)
            assert processor.counts().duplicates == 1
        assert points == {
            METRIC_VERDICTS: {
                _verdict("tool_choice", "clear"): Point(1),
                _verdict("tool_choice", "skipped"): Point(1),
                _verdict("figures", "unsupported", flagged=True): Point(1),
            },
            METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE: {_key(**CALL): Point(1, 1 + margin, MARGIN_PLUS_ONE_BUCKETS)},
            METRIC_FIGURES_SUPPORT: {_key(**CALL): Point(1, 0.5, SUPPORT_BUCKETS)},
            METRIC_FIGURES_UNSUPPORTED: {_key(**CALL): Point(1)},
        }

    def test_other_conventions_name_the_same_dimensions(self) -> None:
        """OpenInference's agent, model and provider attributes become the GenAI-named dimensions."""
        with _recording() as (provider, processor, _, reader):
            with OPENINFERENCE.agent(provider.get_tracer("app"), AGENT):
                OPENINFERENCE.choose(provider.get_tracer("app"))
            assert processor.force_flush()
            points = _points(reader)
        assert set(points[METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE]) == {_key(**CALL)}

    def test_tool_names_are_added_only_when_opted_in(self) -> None:
        """With metrics_tool_names the choosing call's points name its tool; the others do not change."""
        with _recording(metrics_tool_names=True) as (provider, processor, _, reader):
            _scripted_run(provider)
            assert processor.force_flush()
            points = _points(reader)
        with_tool = {**CALL, "gen_ai.tool.name": "get_capacity"}
        assert set(points[METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE]) == {_key(**with_tool)}
        assert set(points[METRIC_VERDICTS]) == {
            _verdict("tool_choice", "clear", tool="get_capacity"),
            _verdict("tool_choice", "skipped"),
            _verdict("figures", "unsupported", flagged=True),
        }

    def test_a_tool_name_the_model_invented_is_never_a_metric_attribute(self) -> None:
        """Opted in, a chosen tool that is not on the menu (content, and unbounded) is left out."""
        invented = [
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c9", "name": "rm_rf_cluster"}]}
        ]
        with _recording(metrics_tool_names=True) as (provider, processor, _, reader):
            tracer = provider.get_tracer("app")
            with (
                GENAI.agent(tracer, AGENT),
                tracer.start_as_current_span(
                    f"chat {MODEL}",
                    attributes=genai_chat("r-invented", invented),  # type: ignore[arg-type]
                ),
            ):
                pass
            assert processor.force_flush()
            points = _points(reader)
        assert set(points[METRIC_VERDICTS]) == {_verdict("tool_choice", "skipped")}

    def test_without_opting_in_no_point_names_a_tool_or_a_span(self) -> None:
        """Only the documented low-cardinality attribute keys appear on any point."""
        with _recording() as (provider, processor, _, reader):
            _scripted_run(provider)
            assert processor.force_flush()
            points = _points(reader)
        keys = {name for by_attributes in points.values() for key in by_attributes for name, _ in key}
        assert keys <= set(CALL) | {"shapecheck.check", "shapecheck.label", "shapecheck.flagged"}


WRONG_CHOICE: list[dict[str, object]] = [
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_weather"}]}
]
"""The capacity question answered with the weather tool: a disagreement, its margin negative."""


def quantile_from_buckets(q: float, bounds: tuple[float, ...], counts: tuple[int, ...]) -> float:
    """Prometheus' ``histogram_quantile`` on one histogram point (the first bucket starts at 0)."""
    rank, below = q * sum(counts), 0
    for index, upper in enumerate(bounds):
        cumulative = below + counts[index]
        if cumulative >= rank:
            lower = bounds[index - 1] if index else 0.0
            return lower + (upper - lower) * (rank - below) / counts[index]
        below = cumulative
    return bounds[-1]


def _tool_choice(margin: float) -> Verdict:
    return Verdict(EVALUATION_TOOL_CHOICE, {}, "clear", "", score=margin)


class TestNegativeMargins:
    def test_the_recorded_bounds_are_the_margin_bounds_plus_one(self) -> None:
        """The histogram's bounds are 1 + the documented margin bounds, none of them negative."""
        assert pytest.approx(tuple(bound + 1 for bound in MARGIN_BUCKETS)) == MARGIN_PLUS_ONE_BUCKETS
        assert min(MARGIN_PLUS_ONE_BUCKETS) >= 0
        assert [shifted_margin(margin) for margin in (-2.0, -1.0, -0.05, 0.0, 0.4)] == pytest.approx(
            [0.0, 0.0, 0.95, 1.0, 1.4]
        )

    def test_a_disagreements_negative_margin_is_recorded(self, caplog: pytest.LogCaptureFixture) -> None:
        """A call that chose against the scores records 1 + its negative margin, below 1, with no warning
        from the SDK (which drops negative histogram values)."""
        with _recording() as (provider, processor, collected, reader):
            tracer = provider.get_tracer("app")
            with (
                GENAI.agent(tracer, AGENT),
                tracer.start_as_current_span(
                    f"chat {MODEL}",
                    attributes=genai_chat("r-wrong", WRONG_CHOICE),  # type: ignore[arg-type]
                ),
            ):
                pass
            assert processor.force_flush()
            points = _points(reader)
            margin = _margin(collected.spans)
        assert margin < 0
        (point,) = points[METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE].values()
        assert (point.value, point.total) == (1, pytest.approx(1 + margin))
        (bucket,) = [index for index, count in enumerate(point.buckets) if count]
        upper = MARGIN_PLUS_ONE_BUCKETS[bucket] if bucket < len(MARGIN_PLUS_ONE_BUCKETS) else float("inf")
        assert MARGIN_PLUS_ONE_BUCKETS[bucket - 1] < 1 + margin <= upper <= 1.0
        assert "non-negative" not in caplog.text

    def test_the_p10_read_from_the_buckets_lies_with_the_disagreements(self) -> None:
        """Ten margins, two of them negative: the p10 and p20 read from the buckets, minus 1, are where
        the disagreements put them (without them, the lowest margin left would be 0.01)."""
        margins = (-0.3, -0.03, 0.01, 0.04, 0.15, 0.25, 0.4, 0.45, 0.6, 0.7)
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
        metrics = VerdictMetrics(meter_provider)
        for margin in margins:
            metrics.record([_tool_choice(margin)], CALL)
        (point,) = _points(reader)[METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE].values()
        meter_provider.shutdown()
        assert point.value == len(margins)
        assert point.total == pytest.approx(sum(margins) + len(margins))
        # rank 1 of 10 is the top of (-0.5, -0.2], the bucket of -0.3; rank 2 the top of (-0.05, 0], of -0.03
        assert quantile_from_buckets(0.1, point.bounds, point.buckets) - 1 == pytest.approx(-0.2)
        assert quantile_from_buckets(0.2, point.bounds, point.buckets) - 1 == pytest.approx(0.0)

    def test_non_finite_margins_are_not_recorded(self) -> None:
        """A NaN score is no margin: nothing is recorded rather than a wrong bucket."""
        reader = InMemoryMetricReader()
        meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
        VerdictMetrics(meter_provider).record([_tool_choice(float("nan"))], CALL)
        points = _points(reader)
        meter_provider.shutdown()
        assert METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE not in points
        assert sum(p.value for p in points[METRIC_VERDICTS].values()) == 1


def _analyst_run(tracer: trace.Tracer) -> None:
    """An analyst span (no model, no provider) whose first attempt collapsed and whose retry recovered."""
    with tracer.start_as_current_span("analyst triage"):
        for attempt, emitted, accepted in ((1, 3, 0), (2, 3, 3)):
            with tracer.start_as_current_span("analyst triage attempt") as span:
                span.set_attributes(
                    {
                        ANALYST_ID: "triage",
                        ANALYST_ATTEMPT: attempt,
                        ROWS_EMITTED: emitted,
                        ROWS_ACCEPTED: accepted,
                    }
                )


class TestDimensionsFromAncestors:
    def test_a_conformance_verdict_takes_model_and_provider_from_its_agent_span(self) -> None:
        """The analyst span names neither; the agent span above it names both, and the point carries them."""
        with _recording() as (provider, processor, _, reader):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, AGENT) as agent:
                agent.set_attributes({"gen_ai.request.model": MODEL, "gen_ai.provider.name": PROVIDER})
                _analyst_run(tracer)
            assert processor.force_flush()
            points = _points(reader)
        assert set(points[METRIC_VERDICTS]) == {_verdict("conformance", "recovered", flagged=True)}

    def test_the_nearest_agent_span_that_names_one_wins(self) -> None:
        """Each dimension comes from the nearest agent span that has it: the inner agent's model, the
        outer agent's provider."""
        with _recording() as (provider, processor, _, reader):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "outer") as outer:
                outer.set_attributes(
                    {"gen_ai.request.model": "outer-model", "gen_ai.provider.name": PROVIDER}
                )
                with GENAI.agent(tracer, AGENT) as inner:
                    inner.set_attribute("gen_ai.request.model", MODEL)
                    _analyst_run(tracer)
            assert processor.force_flush()
            points = _points(reader)
        assert set(points[METRIC_VERDICTS]) == {_verdict("conformance", "recovered", flagged=True)}

    def test_a_calls_own_model_and_provider_win_over_its_agents(self) -> None:
        """An LLM call naming its model and provider keeps them whatever the agent span says."""
        with _recording() as (provider, processor, _, reader):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, AGENT) as agent:
                agent.set_attributes({"gen_ai.request.model": "agent-model", "gen_ai.provider.name": "other"})
                GENAI.choose(tracer)
            assert processor.force_flush()
            points = _points(reader)
        assert set(points[METRIC_TOOL_CHOICE_MARGIN_PLUS_ONE]) == {_key(**CALL)}


class TestRuns:
    def test_each_run_is_counted_once_with_its_coverage(self) -> None:
        """The scripted run (read whole, flagged) and a run with no model call: one point each."""
        with _recording() as (provider, processor, _, reader):
            _scripted_run(provider)
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "silent"):
                tracer.start_span("step").end()
            assert processor.force_flush()
            points = _points(reader, {METRIC_RUNS})
        assert points == {
            METRIC_RUNS: {
                _key(
                    **{
                        "gen_ai.agent.name": AGENT,
                        "shapecheck.run.coverage": COVERAGE_FULL,
                        "shapecheck.flagged": True,
                    }
                ): Point(1),
                _key(
                    **{
                        "gen_ai.agent.name": "silent",
                        "shapecheck.run.coverage": COVERAGE_NONE,
                        "shapecheck.flagged": False,
                    }
                ): Point(1),
            }
        }


class TestFailures:
    def test_a_meter_that_raises_costs_no_span(self) -> None:
        """Instruments that raise are counted as errors; every span is still forwarded, enriched."""
        with _recording() as (provider, processor, collected, _):
            worker_metrics = processor._worker._metrics
            assert worker_metrics is not None
            worker_metrics._verdicts = _Raising()  # type: ignore[assignment]
            _scripted_run(provider)
            assert processor.force_flush()
            spans = collected.spans
            counts = processor.counts()
        assert len(spans) == counts.seen == 5
        assert counts.error_count("metrics") == 2
        assert counts.enriched == 2


class _Raising:
    def add(self, amount: float, attributes: object = None) -> None:
        raise RuntimeError("this meter always fails")


def _verdict(check: str, label: str, *, flagged: bool = False, tool: str | None = None) -> frozenset[Any]:
    """The attribute set of a ``shapecheck.verdicts`` point of the scripted run."""
    attributes: dict[str, Any] = {
        **CALL,
        "shapecheck.check": check,
        "shapecheck.label": label,
        "shapecheck.flagged": flagged,
    }
    if tool is not None:
        attributes["gen_ai.tool.name"] = tool
    return frozenset(attributes.items())

"""Verdict metrics: the exact points a scripted agent run records, through an in-memory metric reader."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader, NumberDataPoint
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_shapecheck._attributes import (
    COVERAGE_FULL,
    COVERAGE_NONE,
    METRIC_FIGURES_SUPPORT,
    METRIC_FIGURES_UNSUPPORTED,
    METRIC_RUNS,
    METRIC_TOOL_CHOICE_MARGIN,
    METRIC_VERDICTS,
    TOOL_CHOICE_MARGIN,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._verdict_metrics import MARGIN_BUCKETS, SUPPORT_BUCKETS

from .runs import AGENT, CHOICE_OUTPUT, GENAI, MODEL, OPENINFERENCE, PROVIDER, genai_chat

VERDICT_METRICS = {
    METRIC_VERDICTS,
    METRIC_TOOL_CHOICE_MARGIN,
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
                        recorded = Point(point.count, point.sum, tuple(point.explicit_bounds))
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
            METRIC_TOOL_CHOICE_MARGIN: {_key(**CALL): Point(1, margin, MARGIN_BUCKETS)},
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
        assert set(points[METRIC_TOOL_CHOICE_MARGIN]) == {_key(**CALL)}

    def test_tool_names_are_added_only_when_opted_in(self) -> None:
        """With metrics_tool_names the choosing call's points name its tool; the others do not change."""
        with _recording(metrics_tool_names=True) as (provider, processor, _, reader):
            _scripted_run(provider)
            assert processor.force_flush()
            points = _points(reader)
        with_tool = {**CALL, "gen_ai.tool.name": "get_capacity"}
        assert set(points[METRIC_TOOL_CHOICE_MARGIN]) == {_key(**with_tool)}
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

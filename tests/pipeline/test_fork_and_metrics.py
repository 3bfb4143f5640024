"""The processor in a forked child, its counters as OpenTelemetry metrics, and its pre-classification."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanContext, TraceFlags
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck._attributes import ANALYST_ATTEMPT, ANALYST_ID, FLAGGED
from otel_shapecheck.pipeline._metrics import ERRORS_METRIC, SPANS_METRIC
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS, SpanClass, SpanRole, classify_span

from .agent import CountingProcessor, RaisingCheck, RecordingCheck, chat


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX-only")
def test_forked_child_evaluates_with_a_fresh_worker(tracer_provider: TracerProvider) -> None:
    """In a forked child the worker runs again: a chat ended there is evaluated and forwarded."""
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    tracer_provider.add_span_processor(processor)
    try:
        chat(TelemetryHandler(tracer_provider=tracer_provider), tool_call="get_capacity")
        pid = os.fork()
        if pid == 0:  # the child: exit status says whether the span came out enriched
            status = 1
            try:
                before = len(downstream.spans)
                chat(TelemetryHandler(tracer_provider=tracer_provider), tool_call="get_capacity")
                flushed = processor.force_flush(10_000)
                enriched = [span for span in downstream.spans[before:] if FLAGGED in (span.attributes or {})]
                status = 0 if flushed and len(enriched) == 1 and processor.counts().seen == 1 else 1
            finally:
                sys.stdout.flush()
                os._exit(status)
        _, wait_status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(wait_status) == 0
        assert processor.force_flush()
        assert len(downstream.spans) == 1
    finally:
        processor.shutdown()


def test_counters_are_exported_as_observable_counters(tracer_provider: TracerProvider) -> None:
    """With a MeterProvider, spans by outcome and errors by kind are collected as counters."""
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    processor = ShapecheckSpanProcessor(
        CountingProcessor(), checks=[RaisingCheck(), RecordingCheck()], meter_provider=meter_provider
    )
    tracer_provider.add_span_processor(processor)
    try:
        chat(TelemetryHandler(tracer_provider=tracer_provider), tool_call="get_capacity")
        with tracer_provider.get_tracer("tests").start_as_current_span("ordinary"):
            pass
        assert processor.force_flush()
        data = reader.get_metrics_data()
    finally:
        processor.shutdown()
        meter_provider.shutdown()
    assert data is not None
    points: dict[str, dict[str, int]] = {}
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:  # type: ignore[union-attr]
                    label = next(iter((point.attributes or {}).values()))
                    points.setdefault(metric.name, {})[str(label)] = int(point.value)
    assert points[SPANS_METRIC]["seen"] == 2
    assert points[SPANS_METRIC]["forwarded_untouched"] == 1
    assert points[SPANS_METRIC]["evaluated"] == 1
    assert points[ERRORS_METRIC] == {"check:test.raising": 1}


_KEYS = st.sampled_from(sorted(CLASSIFYING_KEYS | {ANALYST_ATTEMPT, "http.route", "gen_ai.tool.name"}))
_VALUES = st.sampled_from(["chat", "execute_tool", "LLM", "TOOL", "tool", "completion", "tools/call", "x", 1])
_NAMES = st.sampled_from(["execute_tool get_capacity", "chat gpt-4o", "GET /x", "tool", ""])


def _span(name: str, attributes: dict[str, object]) -> ReadableSpan:
    context = SpanContext(0x1F, 0x2F, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    return ReadableSpan(name=name, context=context, attributes=attributes, start_time=1, end_time=2)


@settings(max_examples=300, deadline=None)
@given(name=_NAMES, attributes=st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_pre_classification_never_hides_a_genai_span(name: str, attributes: dict[str, object]) -> None:
    """Whenever on_end's key-set test skips :func:`classify_span`, the span is OTHER to the checks."""
    calls: list[str] = []

    def spy(span_name: str, span_attributes: Mapping[str, object]) -> SpanClass:
        calls.append(span_name)
        return classify_span(span_name, span_attributes)

    processor = ShapecheckSpanProcessor(CountingProcessor(), checks=[])
    with mock.patch("otel_shapecheck.pipeline._recorder.classify_span", spy):
        processor.on_end(_span(name, attributes))
        processor.shutdown()  # the recording thread classifies what on_end queued
    if not calls:
        assert classify_span(name, attributes).role is SpanRole.OTHER


def test_pre_classification_lets_every_classified_kind_through() -> None:
    """Spans of each kind the readers know reach classify_span through on_end; a plain HTTP span does not."""
    calls: list[str] = []

    def spy(span_name: str, span_attributes: Mapping[str, object]) -> SpanClass:
        calls.append(span_name)
        return classify_span(span_name, span_attributes)

    processor = ShapecheckSpanProcessor(CountingProcessor(), checks=[])
    with mock.patch("otel_shapecheck.pipeline._recorder.classify_span", spy):
        processor.on_end(_span("analyst a attempt", {ANALYST_ID: "a", ANALYST_ATTEMPT: 1}))
        processor.on_end(_span("execute_tool t", {}))
        processor.on_end(_span("GET /x", {"http.route": "/x"}))
        processor.shutdown()  # the recording thread classifies what on_end queued
    assert calls == ["analyst a attempt", "execute_tool t"]

"""configure() on a provider that already exports: every span reaches the application's exporter once."""

from __future__ import annotations

import logging
from collections import Counter

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from otlp_receiver import OTLPReceiver

import otel_shapecheck
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.embedding._embedders import HashingEmbedder

from .agent_turn import ANSWER, instrumented, run_capacity_turn


def _checks() -> list[otel_shapecheck.Check]:
    return [ToolChoiceCheck(embedder=HashingEmbedder()), FiguresCheck()]


def _exporting(receiver: OTLPReceiver) -> BatchSpanProcessor:
    return BatchSpanProcessor(OTLPSpanExporter(endpoint=f"http://{receiver.grpc_endpoint}", insecure=True))


def _run_and_collect(provider: TracerProvider, receiver: OTLPReceiver) -> Counter[int]:
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    with provider.get_tracer("tests").start_as_current_span("plain work"):
        pass
    assert provider.force_flush()
    assert receiver.wait_for(lambda r: any(s.name == "plain work" for s in r.spans), timeout=10)
    provider.shutdown()
    return Counter(span.span_id for span in receiver.spans)


def test_an_exporter_added_before_is_put_behind_the_checks(receiver: OTLPReceiver) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(_exporting(receiver))
    otel_shapecheck.configure(provider, checks=_checks(), events=False, metrics=False)
    exported = _run_and_collect(provider, receiver)
    assert exported and set(exported.values()) == {1}, "every span exported once"
    assert any(span.attributes.get(attrs.FIGURES_CHECKED) for span in receiver.spans), "enriched"


def test_an_exporter_added_after_goes_behind_the_checks_too(receiver: OTLPReceiver) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    first = SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"http://{receiver.grpc_endpoint}", insecure=True))
    provider.add_span_processor(first)
    otel_shapecheck.configure(provider, checks=_checks(), events=False, metrics=False)
    provider.add_span_processor(_exporting(receiver))  # a second destination, added later
    exported = _run_and_collect(provider, receiver)
    assert set(exported.values()) == {2}, "once per exporter, and both receive the enriched copies"
    checked = [span for span in receiver.spans if span.attributes.get(attrs.FIGURES_CHECKED)]
    assert len(checked) == 2


def test_an_exporter_added_after_configure_exported_on_its_own_is_warned_about(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    otel_shapecheck.configure(
        provider, endpoint=f"http://{receiver.grpc_endpoint}", checks=_checks(), events=False, metrics=False
    )
    with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
        provider.add_span_processor(_exporting(receiver))
        provider.add_span_processor(_exporting(receiver))
    warnings = [r for r in caplog.records if "exported twice" in r.getMessage()]
    assert len(warnings) == 1, "warned once"
    assert "ShapecheckSpanProcessor(BatchSpanProcessor(exporter))" in warnings[0].getMessage()
    provider.shutdown()


def test_an_explicit_endpoint_beside_an_exporter_is_warned_about(
    receiver: OTLPReceiver, caplog: pytest.LogCaptureFixture
) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(_exporting(receiver))
    with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
        otel_shapecheck.configure(
            provider,
            endpoint=f"http://{receiver.grpc_endpoint}",
            checks=_checks(),
            events=False,
            metrics=False,
        )
    (warning,) = [r for r in caplog.records if "exported twice" in r.getMessage()]
    assert "BatchSpanProcessor(OTLPSpanExporter)" in warning.getMessage()
    provider.shutdown()


def test_the_wrapping_one_liner_exports_once(receiver: OTLPReceiver) -> None:
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(
        otel_shapecheck.ShapecheckSpanProcessor(_exporting(receiver), checks=_checks())
    )
    exported = _run_and_collect(provider, receiver)
    assert set(exported.values()) == {1}


def test_arguments_after_the_provider_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        otel_shapecheck.configure(TracerProvider(shutdown_on_exit=False), None)  # type: ignore[misc]

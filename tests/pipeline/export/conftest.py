"""Fixtures for the export tests: a loopback OTLP receiver and the context of a real ended span."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import SpanContext
from otlp_receiver import OTLPReceiver


@pytest.fixture(name="receiver")
def _receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver


@pytest.fixture(name="span_context")
def _span_context() -> Iterator[SpanContext]:
    provider = TracerProvider(shutdown_on_exit=False)
    with provider.get_tracer("tests.export").start_as_current_span("chat gpt-4o") as span:
        context = span.get_span_context()
    yield context
    provider.shutdown()

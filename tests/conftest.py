"""Shared fixtures: a real ``TracerProvider`` and the SDK's in-memory span exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@pytest.fixture(name="span_exporter")
def _span_exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture(name="tracer_provider")
def _tracer_provider() -> Iterator[TracerProvider]:
    provider = TracerProvider(shutdown_on_exit=False)
    yield provider
    provider.shutdown()

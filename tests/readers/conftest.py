"""Fixtures for the reader tests: real SDK providers with in-memory exporters, shut down after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor

from .telemetry import CapturedTelemetry, instrumenting


@pytest.fixture
def telemetry() -> Iterator[CapturedTelemetry]:
    captured = CapturedTelemetry()
    try:
        yield captured
    finally:
        captured.shutdown()


@pytest.fixture
def genai_openai(telemetry: CapturedTelemetry, request: pytest.FixtureRequest) -> Iterator[CapturedTelemetry]:
    """The genai-openai instrumentation writing to ``telemetry``, uninstrumented afterwards.

    Content goes where a test says by indirect parametrization (``SPAN_ONLY`` when it says nothing).
    """
    with instrumenting(telemetry, OpenAIInstrumentor(), capture=getattr(request, "param", "SPAN_ONLY")):
        yield telemetry

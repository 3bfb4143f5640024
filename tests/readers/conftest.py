"""Fixtures for the reader tests: real SDK providers with in-memory exporters, shut down after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .telemetry import CapturedTelemetry


@pytest.fixture
def telemetry() -> Iterator[CapturedTelemetry]:
    captured = CapturedTelemetry()
    try:
        yield captured
    finally:
        captured.shutdown()

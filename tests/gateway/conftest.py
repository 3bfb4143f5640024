"""Fixtures for the gateway tests: a downstream OTLP receiver on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otlp_receiver import OTLPReceiver

from otel_shapecheck.gateway._body import refusals


@pytest.fixture(autouse=True)
def _fresh_refusal_log() -> None:
    """Each test sees the gateway's throttled log from the start of an interval, whatever ran before."""
    refusals.reset()


@pytest.fixture(name="receiver")
def _receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver

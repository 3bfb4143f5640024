"""Fixtures for the gateway tests: a downstream OTLP receiver on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from otlp_receiver import OTLPReceiver


@pytest.fixture(name="receiver")
def _receiver() -> Iterator[OTLPReceiver]:
    with OTLPReceiver() as receiver:
        yield receiver

"""Every reliability test starts from a clean environment: no OTEL_SHAPECHECK_* or exporter variables."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("OTEL_SHAPECHECK_", "OTEL_EXPORTER_OTLP_", "OTEL_BSP_", "OTEL_BLRP_")):
            monkeypatch.delenv(name)

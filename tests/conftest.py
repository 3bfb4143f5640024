"""Shared fixtures: a TracerProvider, the SDK's in-memory span exporter, a private state directory."""

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


@pytest.fixture(autouse=True, scope="session")
def _private_cache_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The embedding cache file lives in the user's cache directory by default: the whole session (and
    every process it starts) uses a temporary one, so no test writes to the real home."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(autouse=True)
def _private_state_directory(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``serve`` spools in a per-user state directory by default: each test (and the gateways it starts)
    gets its own, so tests never share a spool, replay another run's, or write to the real home."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path_factory.mktemp("state")))

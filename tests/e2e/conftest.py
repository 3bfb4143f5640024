"""One Phoenix server for the whole end-to-end session (it takes seconds to start)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .phoenix import PhoenixServer


@pytest.fixture(name="phoenix", scope="session")
def _phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    server = PhoenixServer(tmp_path_factory.mktemp("phoenix")).start()
    try:
        yield server
    finally:
        server.stop()

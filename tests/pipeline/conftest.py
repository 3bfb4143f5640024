"""GenAI content on spans for every processor test (as users enable it to get tool-choice verdicts)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _content_on_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")

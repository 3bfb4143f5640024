"""Fixtures for the conformance tests: the analyst tests' tracer provider, exporting to memory.

The conformance check reads the spans the retry wrapper writes, so both folders share one provider.
"""

from __future__ import annotations

from analyst.conftest import _span_exporter, _tracer_provider

__all__ = ["_span_exporter", "_tracer_provider"]

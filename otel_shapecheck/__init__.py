"""otel-shapecheck: judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry.

Usage::

    import otel_shapecheck

    shapecheck = otel_shapecheck.configure(tracer_provider)

Everything public is importable from here; the setting names are in
:mod:`otel_shapecheck.environment_variables`. Every other module has an underscore in its path and is
not API. Names load on first use (PEP 562), so ``import otel_shapecheck`` costs the application's
start-up nothing: numpy, faiss, onnxruntime, tokenizers, pydantic, rich and grpc load only when a
feature that needs them runs.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

from otel_shapecheck import _native  # noqa: F401  (its exit hook goes in early, so it runs late)
from otel_shapecheck._version import __version__

if TYPE_CHECKING:
    from otel_shapecheck.analyst._protocol import Analyst, AnalystContext
    from otel_shapecheck.analyst._retry import with_shape_collapse_retry
    from otel_shapecheck.analyst._validate_rows import validate_rows
    from otel_shapecheck.catalog._lint import CatalogLintReport, lint_catalog
    from otel_shapecheck.checks._base import Check, Subject, Verdict
    from otel_shapecheck.checks.conformance._check import ConformanceCheck
    from otel_shapecheck.checks.conformance._record import AnalystConformanceRecord
    from otel_shapecheck.checks.figures._check import FiguresCheck
    from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
    from otel_shapecheck.embedding._embedders import Embedder, HashingEmbedder, MiniLMEmbedder
    from otel_shapecheck.outputs._events import EvaluationEventEmitter, EvaluationEventStats
    from otel_shapecheck.outputs._sinks import VerdictSink
    from otel_shapecheck.pipeline._configure import configure
    from otel_shapecheck.pipeline._log_processor import ShapecheckLogRecordProcessor
    from otel_shapecheck.pipeline._metrics import ProcessorCounts
    from otel_shapecheck.pipeline._options import ProcessorOptions
    from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
    from otel_shapecheck.pipeline._shapecheck import Shapecheck

_HOMES = {
    "Analyst": "otel_shapecheck.analyst._protocol",
    "AnalystConformanceRecord": "otel_shapecheck.checks.conformance._record",
    "AnalystContext": "otel_shapecheck.analyst._protocol",
    "CatalogLintReport": "otel_shapecheck.catalog._lint",
    "Check": "otel_shapecheck.checks._base",
    "ConformanceCheck": "otel_shapecheck.checks.conformance._check",
    "Embedder": "otel_shapecheck.embedding._embedders",
    "EvaluationEventEmitter": "otel_shapecheck.outputs._events",
    "EvaluationEventStats": "otel_shapecheck.outputs._events",
    "FiguresCheck": "otel_shapecheck.checks.figures._check",
    "HashingEmbedder": "otel_shapecheck.embedding._embedders",
    "MiniLMEmbedder": "otel_shapecheck.embedding._embedders",
    "ProcessorCounts": "otel_shapecheck.pipeline._metrics",
    "ProcessorOptions": "otel_shapecheck.pipeline._options",
    "Shapecheck": "otel_shapecheck.pipeline._shapecheck",
    "ShapecheckLogRecordProcessor": "otel_shapecheck.pipeline._log_processor",
    "ShapecheckSpanProcessor": "otel_shapecheck.pipeline._processor",
    "Subject": "otel_shapecheck.checks._base",
    "ToolChoiceCheck": "otel_shapecheck.checks.tool_choice._check",
    "Verdict": "otel_shapecheck.checks._base",
    "VerdictSink": "otel_shapecheck.outputs._sinks",
    "configure": "otel_shapecheck.pipeline._configure",
    "lint_catalog": "otel_shapecheck.catalog._lint",
    "validate_rows": "otel_shapecheck.analyst._validate_rows",
    "with_shape_collapse_retry": "otel_shapecheck.analyst._retry",
}
"""Where each public name is defined; :func:`__getattr__` imports it from there on first use."""

_RENAMED = {"FlaggedEventExporter": "EvaluationEventEmitter", "FlaggedEventStats": "EvaluationEventStats"}
"""Names of version 0.1.0 that still resolve, with a ``DeprecationWarning``."""

__all__ = [
    "Analyst",
    "AnalystConformanceRecord",
    "AnalystContext",
    "CatalogLintReport",
    "Check",
    "ConformanceCheck",
    "Embedder",
    "EvaluationEventEmitter",
    "EvaluationEventStats",
    "FiguresCheck",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "ProcessorCounts",
    "ProcessorOptions",
    "Shapecheck",
    "ShapecheckLogRecordProcessor",
    "ShapecheckSpanProcessor",
    "Subject",
    "ToolChoiceCheck",
    "Verdict",
    "VerdictSink",
    "__version__",
    "configure",
    "lint_catalog",
    "validate_rows",
    "with_shape_collapse_retry",
]


def __getattr__(name: str) -> Any:
    """Import a public name from its home module the first time it is asked for."""
    if name in _RENAMED:
        warnings.warn(
            f"otel_shapecheck.{name} is deprecated; use otel_shapecheck.{_RENAMED[name]}",
            DeprecationWarning,
            stacklevel=2,
        )
        name = _RENAMED[name]
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'otel_shapecheck' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)

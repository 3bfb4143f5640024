"""otel-shapecheck: judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry."""

from __future__ import annotations

from otel_shapecheck._checks import Check, Subject, Verdict
from otel_shapecheck._flagged_events import FlaggedEventExporter, FlaggedEventStats
from otel_shapecheck._model import (
    AnalystAttempt,
    AnalystRun,
    LLMCall,
    OfferedTool,
    ToolCall,
    ToolExecution,
    ToolResult,
)
from otel_shapecheck._version import __version__

__all__ = [
    "AnalystAttempt",
    "AnalystRun",
    "Check",
    "FlaggedEventExporter",
    "FlaggedEventStats",
    "LLMCall",
    "OfferedTool",
    "Subject",
    "ToolCall",
    "ToolExecution",
    "ToolResult",
    "Verdict",
    "__version__",
]

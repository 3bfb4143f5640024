"""otel-shapecheck: judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry."""

from __future__ import annotations

from otel_shapecheck._analyst import Analyst, AnalystContext
from otel_shapecheck._checks import Check, Subject, Verdict
from otel_shapecheck._conformance_check import ConformanceCheck
from otel_shapecheck._conformance_record import AnalystConformanceRecord
from otel_shapecheck._figures import (
    ComputedFigure,
    Derivation,
    FigureBasis,
    FiguresFinding,
    check_figures,
    explain_figure,
    figure_basis,
    figures_conclusion_line,
)
from otel_shapecheck._figures_check import FiguresCheck
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
from otel_shapecheck._shape_retry import with_shape_collapse_retry
from otel_shapecheck._validate_rows import RejectedRow, ValidatedRows, validate_rows
from otel_shapecheck._version import __version__

__all__ = [
    "Analyst",
    "AnalystAttempt",
    "AnalystConformanceRecord",
    "AnalystContext",
    "AnalystRun",
    "Check",
    "ComputedFigure",
    "ConformanceCheck",
    "Derivation",
    "FigureBasis",
    "FiguresCheck",
    "FiguresFinding",
    "FlaggedEventExporter",
    "FlaggedEventStats",
    "LLMCall",
    "OfferedTool",
    "RejectedRow",
    "Subject",
    "ToolCall",
    "ToolExecution",
    "ToolResult",
    "ValidatedRows",
    "Verdict",
    "__version__",
    "check_figures",
    "explain_figure",
    "figure_basis",
    "figures_conclusion_line",
    "validate_rows",
    "with_shape_collapse_retry",
]

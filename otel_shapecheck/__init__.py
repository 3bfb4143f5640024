"""otel-shapecheck: judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry."""

from __future__ import annotations

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
from otel_shapecheck.analyst._protocol import Analyst, AnalystContext
from otel_shapecheck.analyst._retry import with_shape_collapse_retry
from otel_shapecheck.analyst._validate_rows import RejectedRow, ValidatedRows, validate_rows
from otel_shapecheck.catalog._lint import CatalogLintReport, SimilarPair, coerce_catalog, lint_catalog
from otel_shapecheck.catalog._rules import CatalogTool, StructuralFinding
from otel_shapecheck.checks._base import Check, Subject, Verdict
from otel_shapecheck.checks.conformance._check import ConformanceCheck
from otel_shapecheck.checks.conformance._record import AnalystConformanceRecord
from otel_shapecheck.checks.figures._basis import Derivation, FigureBasis, explain_figure, figure_basis
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.figures._findings import (
    ComputedFigure,
    FiguresFinding,
    check_figures,
    figures_conclusion_line,
)
from otel_shapecheck.checks.tool_choice._cache import CacheStats, EmbeddingCache, content_hash
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCall, ToolChoiceCheck, ToolChoiceSummary
from otel_shapecheck.checks.tool_choice._embedders import (
    CharCountEmbedder,
    Embedder,
    HashingEmbedder,
    MiniLMEmbedder,
)
from otel_shapecheck.checks.tool_choice._index import ToolIndex, confusability_text
from otel_shapecheck.checks.tool_choice._margin import MarginResult, ToolScore, choice_context, score_margin
from otel_shapecheck.pipeline._configure import configure
from otel_shapecheck.pipeline._events import FlaggedEventExporter, FlaggedEventStats
from otel_shapecheck.pipeline._log_processor import ShapecheckLogRecordProcessor
from otel_shapecheck.pipeline._metrics import ProcessorCounts
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._shapecheck import Shapecheck

__all__ = [
    "Analyst",
    "AnalystAttempt",
    "AnalystConformanceRecord",
    "AnalystContext",
    "AnalystRun",
    "CacheStats",
    "CatalogLintReport",
    "CatalogTool",
    "CharCountEmbedder",
    "Check",
    "ComputedFigure",
    "ConformanceCheck",
    "Derivation",
    "Embedder",
    "EmbeddingCache",
    "FigureBasis",
    "FiguresCheck",
    "FiguresFinding",
    "FlaggedEventExporter",
    "FlaggedEventStats",
    "HashingEmbedder",
    "LLMCall",
    "MarginResult",
    "MiniLMEmbedder",
    "OfferedTool",
    "ProcessorCounts",
    "RejectedRow",
    "Shapecheck",
    "ShapecheckLogRecordProcessor",
    "ShapecheckSpanProcessor",
    "SimilarPair",
    "StructuralFinding",
    "Subject",
    "ToolCall",
    "ToolChoiceCall",
    "ToolChoiceCheck",
    "ToolChoiceSummary",
    "ToolExecution",
    "ToolIndex",
    "ToolResult",
    "ToolScore",
    "ValidatedRows",
    "Verdict",
    "__version__",
    "check_figures",
    "choice_context",
    "coerce_catalog",
    "configure",
    "confusability_text",
    "content_hash",
    "explain_figure",
    "figure_basis",
    "figures_conclusion_line",
    "lint_catalog",
    "score_margin",
    "validate_rows",
    "with_shape_collapse_retry",
]

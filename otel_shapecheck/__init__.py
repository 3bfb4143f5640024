"""otel-shapecheck: judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry."""

from __future__ import annotations

from otel_shapecheck._analyst import Analyst, AnalystContext
from otel_shapecheck._catalog_lint import CatalogLintReport, SimilarPair, coerce_catalog, lint_catalog
from otel_shapecheck._catalog_rules import CatalogTool, StructuralFinding
from otel_shapecheck._checks import Check, Subject, Verdict
from otel_shapecheck._configure import configure
from otel_shapecheck._conformance_check import ConformanceCheck
from otel_shapecheck._conformance_record import AnalystConformanceRecord
from otel_shapecheck._embedders import CharCountEmbedder, Embedder, HashingEmbedder, MiniLMEmbedder
from otel_shapecheck._embedding_cache import CacheStats, EmbeddingCache, content_hash
from otel_shapecheck._figures import ComputedFigure, FiguresFinding, check_figures, figures_conclusion_line
from otel_shapecheck._figures_basis import Derivation, FigureBasis, explain_figure, figure_basis
from otel_shapecheck._figures_check import FiguresCheck
from otel_shapecheck._flagged_events import FlaggedEventExporter, FlaggedEventStats
from otel_shapecheck._log_processor import ShapecheckLogRecordProcessor
from otel_shapecheck._margin import MarginResult, ToolScore, choice_context, score_margin
from otel_shapecheck._model import (
    AnalystAttempt,
    AnalystRun,
    LLMCall,
    OfferedTool,
    ToolCall,
    ToolExecution,
    ToolResult,
)
from otel_shapecheck._processor import ShapecheckSpanProcessor
from otel_shapecheck._processor_metrics import ProcessorCounts
from otel_shapecheck._shape_retry import with_shape_collapse_retry
from otel_shapecheck._shapecheck import Shapecheck
from otel_shapecheck._tool_choice import ToolChoiceCall, ToolChoiceCheck, ToolChoiceSummary
from otel_shapecheck._tool_index import ToolIndex, confusability_text
from otel_shapecheck._validate_rows import RejectedRow, ValidatedRows, validate_rows
from otel_shapecheck._version import __version__

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

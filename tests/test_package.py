"""The package's public surface: a short, pinned API that costs an application's start-up nothing."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import otel_shapecheck

PUBLIC_API = [
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

PACKAGE = Path(otel_shapecheck.__file__).parent
EMBEDDING_MAY_IMPORT = {
    "_model",
    "_native",
    "_settings",
    "_settings_table",
    "embedding",
    "environment_variables",
}
"""What ``otel_shapecheck/embedding/`` may import of the package: the ground floor and itself."""

HEAVY = ["faiss", "grpc", "numpy", "onnxruntime", "pydantic", "rich", "tokenizers"]


def test_all_is_the_pinned_api() -> None:
    """``__all__`` is exactly the curated list, sorted, and every name resolves."""
    assert otel_shapecheck.__all__ == PUBLIC_API
    assert sorted(PUBLIC_API) == PUBLIC_API
    for name in PUBLIC_API:
        assert getattr(otel_shapecheck, name) is not None, name
    assert sorted(dir(otel_shapecheck)) == PUBLIC_API


def test_public_names_live_in_private_modules() -> None:
    """Every public class and function is defined in a module whose path has an underscore (not API)."""
    for name in PUBLIC_API:
        if name == "__version__":
            continue
        module = getattr(otel_shapecheck, name).__module__
        assert any(part.startswith("_") for part in module.split(".")[1:]), (name, module)


def test_unknown_names_raise_attribute_error() -> None:
    """A name that is not API is an AttributeError, as for any module."""
    with pytest.raises(AttributeError, match="confusability_text"):
        otel_shapecheck.confusability_text  # noqa: B018


def test_renamed_event_exporter_still_resolves_with_a_warning() -> None:
    """The 0.1 name of the event emitter resolves to the new class and says so."""
    with pytest.warns(DeprecationWarning, match="EvaluationEventEmitter"):
        renamed = otel_shapecheck.FlaggedEventExporter  # type: ignore[attr-defined]
    assert renamed is otel_shapecheck.EvaluationEventEmitter


def _heavy_modules_after(code: str) -> list[str]:
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    loaded: list[str] = json.loads(completed.stdout.strip().splitlines()[-1])
    return loaded


def test_import_loads_no_heavy_dependency() -> None:
    """``import otel_shapecheck`` imports none of the heavy dependencies (numpy, FAISS, the model, ...)."""
    assert _heavy_modules_after("import otel_shapecheck") == []


def test_attaching_the_processor_loads_no_heavy_dependency() -> None:
    """Building the handle with its default checks defers numpy, FAISS and the model to the worker."""
    code = (
        "import otel_shapecheck\n"
        "from opentelemetry.sdk.trace import TracerProvider\n"
        "from opentelemetry.sdk.trace.export import SimpleSpanProcessor\n"
        "from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter\n"
        "provider = TracerProvider(shutdown_on_exit=False)\n"
        "shapecheck = otel_shapecheck.Shapecheck(SimpleSpanProcessor(InMemorySpanExporter()))\n"
        "provider.add_span_processor(shapecheck.span_processor)\n"
        "with provider.get_tracer('t').start_as_current_span('plain'):\n"
        "    pass\n"
        "shapecheck.shutdown()\n"
    )
    assert _heavy_modules_after(code) == []


def _package_imports(path: Path) -> set[str]:
    """The first part below ``otel_shapecheck`` of every package module ``path`` imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "otel_shapecheck" and len(parts) > 1:
                found.add(parts[1])
    return found


def test_embedding_imports_neither_the_checks_nor_the_lint() -> None:
    """``embedding/`` sits below ``checks/`` and ``catalog/``, which both use it: no arrow runs back up."""
    modules = sorted((PACKAGE / "embedding").glob("*.py"))
    assert modules, "no embedding package?"
    imported = set().union(*(_package_imports(path) for path in modules))
    assert "_embedders" in {path.stem for path in modules}
    assert imported - EMBEDDING_MAY_IMPORT == set()
    assert "embedding" in _package_imports(PACKAGE / "catalog" / "_lint.py")
    assert "checks" not in _package_imports(PACKAGE / "catalog" / "_lint.py")

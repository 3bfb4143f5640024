"""MiniLM cost of this tree against another checkout of otel-shapecheck (the code before a change).

Two trees cannot be imported into one process (same package name), so each measurement runs in a child
process per tree, back to back, with the same interpreter and the same inputs; only the public API (and
the ``check`` command) is used, with a fallback for the flat layout of older trees. The baseline tree is named
by ``$SHAPECHECK_BENCH_BASELINE_TREE`` (a folder holding ``otel_shapecheck/``); without it these rows
are skipped. Measured per tree:

- **Steady-state evaluation**: ``ToolChoiceCheck.evaluate`` with MiniLM over the given cases in batches
  of 64, tool texts already indexed, contexts new (the embedding cache is cleared before each round);
  best of three rounds of process CPU time, as calls per second.
- **check**: wall time of ``otel-shapecheck check FILE --embedder minilm`` and ``--embedder hashing``
  (a fresh process each, model load included), best of ``repeats`` (one in ``bench_embedding``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BASELINE_ENV = "SHAPECHECK_BENCH_BASELINE_TREE"

# An editable install's import hook resolves ``otel_shapecheck.*`` names to *its* tree whenever the tree on
# ``PYTHONPATH`` lacks a module, which would mix two trees in one child: the children drop that hook.
_PRELUDE = r"""
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
"""

_CHECK_CHILD = (
    _PRELUDE
    + r"""
import runpy
sys.argv[0] = "otel-shapecheck"
runpy.run_module("otel_shapecheck", run_name="__main__", alter_sys=True)
"""
)

_EVALUATE_CHILD = (
    _PRELUDE
    + r"""
import json, time
from otel_shapecheck import MiniLMEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck._model import LLMCall, OfferedTool, ToolCall
try:
    from otel_shapecheck.embedding._cache import EmbeddingCache
except ImportError:  # the flat layout of older trees
    from otel_shapecheck import EmbeddingCache
try:
    from otel_shapecheck._model import ToolParameter
except ImportError:  # a tree whose menus carry no parameters
    ToolParameter = None
cases = json.load(open(sys.argv[1]))
options = json.loads(sys.argv[2])

def tool(entry):
    if ToolParameter is None:
        return OfferedTool(entry["name"], entry["description"])
    parameters = tuple(ToolParameter(name, text) for name, text in entry["parameters"])
    return OfferedTool(entry["name"], entry["description"], parameters)

subjects = []
for number, case in enumerate(cases):
    span = f"{number:016x}"
    arguments = case["arguments"]
    calls = tuple(ToolCall(name, f"call_{i}", arguments.get(name)) for i, name in enumerate(case["chosen"]))
    call = LLMCall(span_id=span, trace_id="4" * 32, offered_tools=tuple(tool(t) for t in case["tools"]),
                   tool_calls=calls, user_text=case["query"])
    subjects.append(Subject(span_id=span, trace_id="4" * 32, llm_call=call))
batches = [subjects[start : start + 64] for start in range(0, len(subjects), 64)]
cache = EmbeddingCache(MiniLMEmbedder(), max_entries=16)
check = ToolChoiceCheck(cache, **options)
for batch in batches:  # fills the tool index
    check.evaluate(batch)
best = float("inf")
for _ in range(3):
    cache.clear()
    start = time.process_time()
    for batch in batches:
        check.evaluate(batch)
    best = min(best, time.process_time() - start)
print(json.dumps({"calls_per_s": len(subjects) / best}))
"""
)


def baseline_tree() -> Path | None:
    """The baseline checkout named by ``$SHAPECHECK_BENCH_BASELINE_TREE``, or ``None``."""
    raw = os.environ.get(BASELINE_ENV)
    if not raw or not (Path(raw) / "otel_shapecheck" / "__init__.py").is_file():
        return None
    return Path(raw)


def this_tree() -> Path:
    """The checkout these benchmarks belong to."""
    return Path(__file__).resolve().parent.parent


def _child(tree: Path, arguments: Sequence[str]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    result = subprocess.run([sys.executable, *arguments], capture_output=True, text=True, env=env, cwd=tree)
    if result.returncode != 0:
        raise RuntimeError(f"{tree}: exit {result.returncode}: {result.stderr.strip()[-2000:]}")
    return result


def evaluate_calls_per_s(tree: Path, cases: Sequence[dict[str, Any]], options: dict[str, Any]) -> float:
    """Steady-state MiniLM ``evaluate`` calls per second of ``tree`` on ``cases`` (see the module doc)."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(list(cases), handle)
    try:
        result = _child(tree, ["-c", _EVALUATE_CHILD, handle.name, json.dumps(options)])
    finally:
        os.unlink(handle.name)
    return float(json.loads(result.stdout.strip().splitlines()[-1])["calls_per_s"])


def check_seconds(tree: Path, data: bytes, embedder: str, repeats: int = 2) -> float:
    """Best wall time of ``tree``'s ``check`` command over ``data`` (OTLP/JSON Lines) with ``embedder``."""
    with tempfile.NamedTemporaryFile("wb", suffix=".jsonl", delete=False) as handle:
        handle.write(data)
    try:
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            _child(tree, ["-c", _CHECK_CHILD, "check", handle.name, "--embedder", embedder, "--json"])
            best = min(best, time.perf_counter() - start)
    finally:
        os.unlink(handle.name)
    return best

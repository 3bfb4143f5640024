"""Offline ``check`` throughput: exported agent traces per minute, hashing embedder and default MiniLM.

The traces are the demo's four scenarios (real ``openai`` instrumentation telemetry), copied with fresh
ids and a distinct user question per copy so every copy needs its own embeddings. Each row times reading
the OTLP/JSON Lines bytes and checking every span through the span processor, and compares it with a
baseline measured in the same run: reading the same bytes into spans without checking them, the least
any offline pass must pay (the ratio is the share of that read-only rate the full check keeps). Run
alone with ``python -m benchmarks.bench_check``.
"""

from __future__ import annotations

import io
import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.cli._report import summary
from otel_shapecheck.cli.demo._demo import TRACES_FILE, demo_output, run_demo
from otel_shapecheck.otlp._files import parse_spans
from otel_shapecheck.pipeline._offline import check_spans

_SCENARIOS_PER_COPY = 4
_TARGET_TRACES_PER_MINUTE = 2000


def demo_documents() -> list[dict[str, Any]]:
    """The OTLP/JSON documents of one demo run with the hashing embedder."""
    with tempfile.TemporaryDirectory() as directory:
        output = demo_output(Path(directory), None)
        run_demo(output, embedder="hashing", console=Console(file=io.StringIO()))
        text = (Path(directory) / TRACES_FILE).read_text()
    return [json.loads(line) for line in text.splitlines()]


def copied_traces(documents: list[dict[str, Any]], copies: int, seed: int = 11) -> bytes:
    """``copies`` copies of ``documents`` as OTLP/JSON Lines, with new ids and a numbered user question."""
    generator = random.Random(seed)
    template = json.dumps(documents)
    lines = []
    for copy in range(copies):
        ids: dict[str, str] = {}

        def fresh(old: str, length: int, ids: dict[str, str] = ids) -> str:
            return ids.setdefault(old, f"{generator.getrandbits(length * 4):0{length}x}")

        documents_copy = json.loads(template)
        for document in documents_copy:
            _rewrite(document, fresh, copy)
            lines.append(json.dumps(document, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


def _rewrite(node: Any, fresh: Callable[[str, int], str], copy: int) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "traceId" and value:
                node[key] = fresh(value, 32)
            elif key in ("spanId", "parentSpanId") and value:
                node[key] = fresh(value, 16)
            elif key == "stringValue" and isinstance(value, str) and '"role":"user"' in value:
                node[key] = value.replace('?"', f' (ticket {copy})?"')
            else:
                _rewrite(value, fresh, copy)
    elif isinstance(node, list):
        for item in node:
            _rewrite(item, fresh, copy)


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def _measure(
    documents: list[dict[str, Any]], copies: int, evaluated_per_copy: int, embedder: str = "hashing"
) -> dict[str, Any]:
    data = copied_traces(documents, copies)
    traces = copies * _SCENARIOS_PER_COPY
    spans = parse_spans(data, "bench")
    baseline = min(_seconds(lambda: parse_spans(data, "bench")) for _ in range(3))
    checks = build_checks(embedder)
    checked: list[Any] = []
    elapsed = _seconds(lambda: checked.extend(check_spans(parse_spans(data, "bench"), checks)))
    assert len(checked) == len(spans)
    counts = summary(checked)
    assert counts["evaluated"] == copies * evaluated_per_copy, counts
    return {
        "name": f"check: {traces} traces ({len(spans)} spans), {embedder} embedder",
        "value": round(traces / elapsed * 60),
        "unit": "traces/min",
        "baseline": round(traces / baseline * 60),
        "ratio": round(baseline / elapsed, 2),
        "target": f"> {_TARGET_TRACES_PER_MINUTE} traces/min",
        "seconds": round(elapsed, 2),
        "flagged": counts["flagged"],
    }


def run() -> list[dict[str, Any]]:
    """The benchmark rows: 400 and 2 000 traces with the hashing embedder, 400 with MiniLM."""
    documents = demo_documents()
    one = summary(check_spans(parse_spans(copied_traces(documents, 1), "bench"), build_checks("hashing")))
    return [
        _measure(documents, 100, one["evaluated"]),
        _measure(documents, 500, one["evaluated"]),
        _measure(documents, 100, one["evaluated"], embedder="minilm"),
    ]


def main() -> None:
    """Print the rows as a table."""
    for row in run():
        print(
            f"{row['name']:<52} {row['value']:>8} {row['unit']} in {row['seconds']:.2f} s"
            f"  baseline read-only {row['baseline']:>8} {row['unit']}  ratio {row['ratio']:>6.2f}x"
            f"  target {row['target']}  (flagged {row['flagged']})"
        )


if __name__ == "__main__":
    main()

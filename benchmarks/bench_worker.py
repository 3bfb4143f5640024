"""Worker CPU per GenAI chat span: evaluating it (every built-in check, hashing embedder) in the worker.

The spans are the hot-path benchmark's GenAI chat spans (``opentelemetry-util-genai``, content on the
span, a two-tool menu, one tool call each, a distinct question per span). Both sides replay them through
the offline pipeline (span processor, ledger, worker, enrichment, a collecting downstream) in the same
process: once with the built-in checks, once with none; the difference per span is what evaluation
costs (reading the span, building the subject, the checks, the verdicts and the enriched copy). The
figure is the best of three interleaved rounds of process CPU time. Run alone with
``python -m benchmarks worker``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from benchmarks.bench_hot_path import genai_spans
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import check_spans

_SPANS = 4000


def run() -> list[dict[str, Any]]:
    """One row: evaluation CPU per GenAI chat span with the hashing embedder."""
    spans = genai_spans(_SPANS)
    checks = build_checks("hashing")
    check_spans(spans[:200], checks)  # warm: numpy, the menu plan, the embedder's word cache

    def evaluated() -> None:
        check_spans(spans, checks)

    def forwarded() -> None:
        check_spans(spans, [])

    best: list[float] = [float("inf"), float("inf")]
    actions: list[Callable[[], None]] = [evaluated, forwarded]
    for _ in range(3):
        for i, action in enumerate(actions):
            start = time.process_time()
            action()
            best[i] = min(best[i], time.process_time() - start)
    per_span_us = (best[0] - best[1]) / len(spans) * 1e6
    return [
        {
            "name": "worker.genai_chat_evaluation_cpu[hashing-512]",
            "value": round(per_span_us, 1),
            "unit": "µs/span",
            "baseline": round(best[1] / len(spans) * 1e6, 1),
            "ratio": round(best[0] / best[1], 3),
            "target": "<= 150 µs (value: evaluated minus forwarded; baseline: the pipeline without checks)",
        }
    ]


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))

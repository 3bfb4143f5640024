"""Figures check cost per answer: an answer of 30 figures against tool results of 50, 5 000 and 50 000 rows
(past the carried bound the rest of a result is neither parsed nor walked, so 50 000 rows cost the
first 5 000-odd rows read and folded), and
the extended derivations against the closed set at N = 50, 500 and 5 000 carried numbers.

Each row times ``check_figures`` end to end (parse the JSON tool result, fold it into the basis, ask
every figure) and compares it with a baseline measured in the same run: a plain ``json.loads`` of the
same result, the least any check that reads the result must pay, or for the extended rows the same
answer under ``derivations="closed"``. All are CPU time of the measuring thread, so other processes on
the same cores do not inflate them; the wall-clock median is reported too. Run alone with
``python -m benchmarks.bench_figures``.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._findings import check_figures

FIELDS = ("total_tb", "used_tb", "free_tb", "read_iops", "write_iops", "read_ms", "write_ms", "cpu_pct")
_GROUPS = ("CLUSTER-A01", "CLUSTER-A02", "CLUSTER-B01", "CLUSTER-B02", "CLUSTER-C01")


def capacity_rows(count: int, numeric_fields: int = 10, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` pool rows of ``numeric_fields`` numbers, a cluster (5 values) and a unique pool name."""
    generator = random.Random(seed)
    names = [*FIELDS, *(f"extra{index}_gb" for index in range(max(0, numeric_fields - len(FIELDS))))]
    rows = []
    for index in range(count):
        row: dict[str, Any] = {"cluster": _GROUPS[index % len(_GROUPS)], "pool": f"pool-{index:05d}"}
        row.update({name: round(generator.uniform(1, 5000), 1) for name in names[:numeric_fields]})
        row["used_tb"] = round(row["total_tb"] * generator.uniform(0.2, 0.9), 1)
        row["free_tb"] = round(row["total_tb"] - row["used_tb"], 1)
        rows.append(row)
    return rows


def answer_with_30_figures(rows: list[dict[str, Any]]) -> str:
    """An answer of 30 distinct figures: read, rounded, summed, scaled, ratios, and invented ones."""
    used = sum(row["used_tb"] for row in rows)
    total = sum(row["total_tb"] for row in rows)
    parts = [f"{rows[i]['read_iops']:,} IOPS" for i in range(8)]  # read as written
    parts += [f"{round(rows[i]['read_ms'])} ms" for i in range(8, 14)]  # rounded
    parts += [f"{used:,.1f} TB", f"{total:,.1f} TB", f"{total / 1000:.1f} PB"]  # sums, scaled sum
    parts += [f"{100 * used / total:.1f}%", f"{100 - 100 * used / total:.1f}%", f"{total - used:,.1f} TB"]
    parts += [f"{12.34 + 0.5 * i:.2f}%" for i in range(6)]  # invented percentages
    parts += [f"{98_765 + 10 * i:,} IOPS" for i in range(4)]  # invented counts
    return "Summary: " + "; ".join(parts) + "."


def _samples_ns(action: Callable[[], object], repeats: int, clock: Callable[[], int]) -> list[int]:
    action()  # warm caches (regexes, allocator) before timing
    samples = []
    for _ in range(repeats):
        start = clock()
        action()
        samples.append(clock() - start)
    return samples


def _median_ns(action: Callable[[], object], repeats: int, clock: Callable[[], int]) -> float:
    return statistics.median(_samples_ns(action, repeats, clock))


def _measure(name: str, rows: list[dict[str, Any]], repeats: int, target_ms: float | None) -> dict[str, Any]:
    """One row: the median CPU time of this thread per answer (steady when other processes share the
    cores), its ratio to ``json.loads`` of the same result timed the same way, and the wall-clock median."""
    content = json.dumps({"rows": rows})
    result = ToolResult(content, call_id="call_1", name="get_capacity")
    answer = answer_with_30_figures(rows)
    finding = check_figures(answer, [result])
    assert finding.checked == 30, finding.checked
    samples = _samples_ns(lambda: check_figures(answer, [result]), repeats, time.thread_time_ns)
    elapsed = statistics.median(samples)
    baseline = _median_ns(lambda: json.loads(content), repeats, time.thread_time_ns)
    wall = _median_ns(lambda: check_figures(answer, [result]), repeats, time.perf_counter_ns)
    return {
        "name": name,
        "value": round(elapsed / 1e6, 3),
        "worst_ms": round(max(samples) / 1e6, 3),
        "unit": "ms/answer (CPU)",
        "baseline": round(baseline / 1e6, 3),
        "baseline_of": "json.loads",
        "ratio": round(elapsed / baseline, 2),
        "target": f"< {target_ms:g} ms" if target_ms is not None else "bounded",
        "wall_ms": round(wall / 1e6, 3),
        "computed": len(finding.computed),
        "inferred": len(finding.inferred),
        "unsupported": len(finding.unsupported),
        "truncated": finding.truncated,
    }


def answer_needing_the_extended_layer(rows: list[dict[str, Any]]) -> str:
    """Four figures no closed derivation gives: a percent change and a difference of one row's cells, an
    average of another row's, and an invented percentage, so the extended layer is built and asked."""
    first, second = rows[0], rows[-1]
    change = 100 * (first["read_iops"] - first["write_iops"]) / first["write_iops"]
    return (
        f"Reads ran {change:.2f}% above writes; reads led by {first['read_ms'] - first['write_ms']:.1f} ms; "
        f"latency averaged {(second['read_ms'] + second['write_ms']) / 2:.2f} ms; CPU peaked at 87.13%."
    )


def _measure_extended(numbers: int, repeats: int, target_ms: float | None) -> dict[str, Any]:
    """One row: extended against closed on the same answer and a result of ``numbers`` carried numbers."""
    rows = capacity_rows(numbers // 10)
    content = json.dumps({"rows": rows})
    result = ToolResult(content, call_id="call_1", name="get_capacity")
    answer = answer_needing_the_extended_layer(rows)

    def extended() -> object:
        return check_figures(answer, [result], derivations="extended")

    def closed() -> object:
        return check_figures(answer, [result], derivations="closed")

    finding = check_figures(answer, [result])
    elapsed = _median_ns(extended, repeats, time.thread_time_ns)
    baseline = _median_ns(closed, repeats, time.thread_time_ns)
    wall = _median_ns(extended, repeats, time.perf_counter_ns)
    return {
        "name": f"figures: extended vs closed, N = {numbers} carried numbers, 4 figures",
        "value": round(elapsed / 1e6, 3),
        "unit": "ms/answer (CPU)",
        "baseline": round(baseline / 1e6, 3),
        "baseline_of": "derivations=closed",
        "ratio": round(elapsed / baseline, 2),
        "target": f"≤ {target_ms:g} ms" if target_ms is not None else "bounded",
        "wall_ms": round(wall / 1e6, 3),
        "computed": len(finding.computed),
        "inferred": len(finding.inferred),
        "unsupported": len(finding.unsupported),
        "truncated": finding.truncated,
    }


def _measure_text(name: str, text: str, answer: str, repeats: int) -> dict[str, Any]:
    """One row for a plain-text tool result, against ``str.split`` of the same text."""
    result = ToolResult(text)
    finding = check_figures(answer, [result])
    elapsed = _median_ns(lambda: check_figures(answer, [result]), repeats, time.thread_time_ns)
    baseline = _median_ns(text.split, repeats, time.thread_time_ns)
    wall = _median_ns(lambda: check_figures(answer, [result]), repeats, time.perf_counter_ns)
    return {
        "name": name,
        "value": round(elapsed / 1e6, 3),
        "unit": "ms/answer (CPU)",
        "baseline": round(baseline / 1e6, 3),
        "baseline_of": "str.split",
        "ratio": round(elapsed / baseline, 2),
        "target": "bounded",
        "wall_ms": round(wall / 1e6, 3),
        "computed": len(finding.computed),
        "inferred": len(finding.inferred),
        "unsupported": len(finding.unsupported),
        "truncated": finding.truncated,
    }


def log_text(size: int, seed: int = 11) -> str:
    """About ``size`` characters of log-like prose: host names, times and a few measurements."""
    generator = random.Random(seed)
    lines: list[str] = []
    length = 0
    while length < size:
        lines.append(
            f"node-{generator.randrange(100):02d} at 12:{generator.randrange(60):02d} reported status ok "
            f"for volume vol_{generator.randrange(1000)} with latency {generator.uniform(1, 9):.1f} ms"
        )
        length += len(lines[-1]) + 1
    return "\n".join(lines)


def run() -> list[dict[str, Any]]:
    """Rows for 50, 5 000 and 50 000 rows × 10 numeric fields, plus the worst case the bounds allow."""
    return [
        _measure("figures: 30 figures vs 50 rows x 10 fields", capacity_rows(50), 300, 1.0),
        _measure("figures: 30 figures vs 5000 rows x 10 fields", capacity_rows(5000), 15, 100.0),
        _measure("figures: 30 figures vs 50000 rows x 10 fields", capacity_rows(50_000), 5, 100.0),
        _measure("figures: 30 figures vs 5000 rows x 64 fields (bounds)", capacity_rows(5000, 64), 5, None),
        _measure_text(
            "figures: 30 figures vs 1 MB log text",
            log_text(1_000_000),
            answer_with_30_figures(capacity_rows(50)),
            5,
        ),
        _measure_extended(50, 300, 5.0),
        _measure_extended(500, 60, None),
        _measure_extended(5000, 10, None),
    ]


def main() -> None:
    """Print the rows as a table; rows timed over many runs name their slowest run too."""
    for row in run():
        worst = f" (slowest {row['worst_ms']:.1f})" if "worst_ms" in row else ""
        print(
            f"{row['name']:<58} {row['value']:>9.3f} {row['unit']}{worst}"
            f"  baseline {row['baseline_of']} {row['baseline']:>8.3f} ms  wall {row['wall_ms']:>9.3f} ms"
            f"  ratio {row['ratio']:>6.2f}x  target {row['target']}  "
            f"(computed {row['computed']}, inferred {row['inferred']}, unsupported {row['unsupported']}, "
            f"truncated {row['truncated']})"
        )


if __name__ == "__main__":
    main()

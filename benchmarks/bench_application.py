"""What the application feels: its own request loop, wall clock, with the processor and without.

Each request runs one :mod:`benchmarks._fleet` agent run (live spans through the provider: an HTTP
span, the agent, two chat calls, a tool execution, database spans) plus about a millisecond of its own
Python work, so the loop keeps the interpreter busy and every thread of ours competes with it for the
lock. Rounds alternate: the loop with a bare ``BatchSpanProcessor``, then the same loop (same seed)
with ``ShapecheckSpanProcessor`` in front of one, its worker evaluating the loop's spans. Rows, for
each embedder:

- **per request**: wall-clock and application-thread CPU p50 and p99 per request, ours against bare;
- **whole loop**: the sum of the rounds' wall time, ours against bare (the target), with each round's
  own ratio, the median of them, the loop's CPU ratios (the application thread's, and the whole
  process's: every thread of ours that ran meanwhile), how much of it the garbage collector took on
  each side, how many full collections ran, how many tracked objects each request left alive (what a
  later full collection walks, and what brings it sooner), how many evaluations finished while the
  loop ran (the worker paces itself while the application is busy) and how long the shutdown took to
  finish the rest;
- **slowest requests**: what the slowest 1 % of requests (those at or past the p99) spent their time
  on, on each side: their own CPU, the collector's time on the application's thread, and the CPU each
  other thread (our evaluation worker and recording thread, the downstream exporter's thread) used
  while they ran, waiting for the lock meanwhile;
- **kept alive**: the tracked objects a long stretch of traffic (3 000 runs, pausing now and then as an
  application waiting on its model does) leaves alive once flushed, ours against bare: what every later
  full collection of the application's heap walks.

Both sides run in one process, and so share one garbage collector: each round starts with a full
collection, so that it pays for the collections its own spans set off rather than for what the round
before promoted. Run alone with ``python -m benchmarks application``.
"""

from __future__ import annotations

import gc
import json
import random
import statistics
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from benchmarks._fleet import agent_run, fleet
from benchmarks._rows import row
from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._options import ProcessorOptions

APPLICATION_WORK = 8_000
"""Squares the request's own Python sums: about a millisecond."""
REQUESTS = 300
ROUNDS = 8
STEADY_REQUESTS = 3000
PAUSE_EVERY = 50
TARGET = "≤ 1.3× (baseline: bare BatchSpanProcessor)"


class _Discard(SpanExporter):
    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return SpanExportResult.SUCCESS


class _Collections:
    """Garbage-collector time and full collections while it is on (a ``gc.callbacks`` entry), and the
    part of its time spent on the thread that made it (the application's)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self.on_application = 0.0
        self._started = 0.0
        self._application = threading.get_ident()

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        spent = time.perf_counter() - self._started
        self.seconds += spent
        self.full += info["generation"] == 2
        if threading.get_ident() == self._application:
            self.on_application += spent


class _ThreadClocks:
    """CPU clocks of the process's other threads (our worker and recorder, the exporter's thread), by
    name, so a slow request can say which of them ran while it waited (Unix only: none elsewhere)."""

    def __init__(self) -> None:
        current = threading.current_thread()
        getclock = getattr(time, "pthread_getcpuclockid", None)
        self._clocks = {
            thread.name: getclock(thread.ident)
            for thread in threading.enumerate()
            if getclock is not None and thread is not current and thread.ident is not None
        }

    def read(self) -> dict[str, float]:
        """Each thread's CPU seconds so far."""
        return {name: time.clock_gettime(clock) for name, clock in self._clocks.items()}


class _Loop:
    """What one round of the application's request loop measured."""

    def __init__(self) -> None:
        self.wall_ms: list[float] = []
        """Wall-clock milliseconds of each request."""
        self.cpu_ms: list[float] = []
        """The application thread's own CPU milliseconds of each request."""
        self.collector_ms: list[float] = []
        """Milliseconds the collector ran on the application's thread during each request."""
        self.others_ms: list[dict[str, float]] = []
        """CPU milliseconds each other thread used during each request, by thread name."""
        self.evaluated_in_loop = 0
        """Spans the processor evaluated while the loop ran (the rest at its shutdown, after the loop)."""
        self.process_cpu_s = 0.0
        """CPU-seconds of the whole process (every thread) while the loop ran."""
        self.collector_s = 0.0
        """Seconds the garbage collector ran while the loop ran (on any thread)."""
        self.full_collections = 0
        self.kept_alive = 0
        """Objects the collector tracks that the loop left alive (held spans, their facts, queues): what
        later full collections walk, and what makes them come sooner."""
        self.shutdown_s = 0.0
        """Wall-seconds of the provider's shutdown: the deferred evaluations' end."""


def fleet_traffic(processor: SpanProcessor, seed: int) -> tuple[TracerProvider, Callable[[int], None]]:
    """A provider whose spans go through ``processor``, and a call that makes fleet agent run
    ``number`` through it (agents picked by ``seed``). One run is made and flushed first, so the checks
    are built and the model is loaded before any clock starts."""
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("bench.application")
    rng = random.Random(seed)
    agents = fleet()
    menus = {agent.name: json.dumps(list(agent.tools)) for agent in agents}
    agent_run(tracer, random.Random(-seed), agents[0], menus[agents[0].name], -1)
    provider.force_flush()

    def one_run(number: int) -> None:
        agent = rng.choice(agents)
        agent_run(tracer, rng, agent, menus[agent.name], number)

    return provider, one_run


def request_loop(processor: SpanProcessor, requests: int, seed: int) -> _Loop:
    """Each request of an application loop whose spans go through ``processor``."""
    provider, one_run = fleet_traffic(processor, seed)
    loop = _Loop()
    # A full collection first: each round pays for the collections its own spans set off, not for
    # objects the round before promoted (both sides share one process, and so one collector).
    gc.collect()
    tracked = len(gc.get_objects())
    collections = _Collections()
    clocks = _ThreadClocks()
    gc.callbacks.append(collections)
    process_cpu = time.process_time()
    try:
        for number in range(requests):
            others, collected = clocks.read(), collections.on_application
            start, cpu = time.perf_counter(), time.thread_time()
            one_run(number)
            sum(i * i for i in range(APPLICATION_WORK))  # the request's own work
            loop.wall_ms.append(1000 * (time.perf_counter() - start))
            loop.cpu_ms.append(1000 * (time.thread_time() - cpu))
            loop.collector_ms.append(1000 * (collections.on_application - collected))
            loop.others_ms.append(
                {name: 1000 * (used - others[name]) for name, used in clocks.read().items()}
            )
    finally:
        gc.callbacks.remove(collections)
    loop.process_cpu_s = time.process_time() - process_cpu
    loop.collector_s, loop.full_collections = collections.seconds, collections.full
    loop.kept_alive = len(gc.get_objects()) - tracked
    if isinstance(processor, ShapecheckSpanProcessor):
        loop.evaluated_in_loop = processor.counts().evaluated
    start = time.perf_counter()
    provider.shutdown()
    loop.shutdown_s = time.perf_counter() - start
    return loop


def application_feel(name: str, requests: int = REQUESTS, rounds: int = ROUNDS) -> list[dict[str, Any]]:
    """Per-request and whole-loop rows with the processor against a bare ``BatchSpanProcessor``.

    Wall-clock rows are what the application feels; the CPU rows (the application thread's own CPU
    per request) say how much of it is the hot path's own cost rather than waiting for the interpreter
    lock, and hold up better on a shared machine.
    """
    bare: list[_Loop] = []
    wrapped: list[_Loop] = []
    for round_number in range(rounds):
        seed = 100 + round_number
        bare.append(request_loop(BatchSpanProcessor(_Discard()), requests, seed))
        processor = ShapecheckSpanProcessor(
            BatchSpanProcessor(_Discard()),
            checks=build_checks(name),
            options=ProcessorOptions(shutdown_timeout_millis=30_000),
        )
        wrapped.append(request_loop(processor, requests, seed))
    rows = []
    for kind in ("wall", "cpu"):
        ours = [value for loop in wrapped for value in getattr(loop, f"{kind}_ms")]
        theirs = [value for loop in bare for value in getattr(loop, f"{kind}_ms")]
        for label, quantile in (("p50", 0.5), ("p99", 0.99)):
            mine, base = _quantile(ours, quantile), _quantile(theirs, quantile)
            rows.append(
                row(
                    f"application.request_{kind}_ms_{label}[{name}]",
                    mine,
                    "ms" if kind == "wall" else "ms (application thread CPU)",
                    base,
                    TARGET if kind == "wall" else "report",
                )
            )
    rows.append(_slowest_row(name, wrapped, bare))
    round_ratios = [
        sum(ours.wall_ms) / sum(theirs.wall_ms) for ours, theirs in zip(wrapped, bare, strict=True)
    ]
    rows.append(
        row(
            f"application.loop_wall_s[{name}]",
            sum(sum(loop.wall_ms) for loop in wrapped) / 1000,
            "s",
            sum(sum(loop.wall_ms) for loop in bare) / 1000,
            TARGET,
            requests=requests * rounds,
            round_ratios=[round(ratio, 2) for ratio in round_ratios],
            median_round_ratio=round(statistics.median(round_ratios), 3),
            loop_cpu_ratio=_ratio(wrapped, bare, lambda loop: sum(loop.cpu_ms)),
            process_cpu_ratio=_ratio(wrapped, bare, lambda loop: loop.process_cpu_s),
            collector_s=[round(sum(loop.collector_s for loop in side), 3) for side in (wrapped, bare)],
            full_collections=[sum(loop.full_collections for loop in side) for side in (wrapped, bare)],
            kept_alive_per_request=[
                round(sum(loop.kept_alive for loop in side) / (requests * rounds), 1)
                for side in (wrapped, bare)
            ],
            evaluated_in_loop=sum(loop.evaluated_in_loop for loop in wrapped),
            evaluated=2 * requests * rounds,
            shutdown_s=round(sum(loop.shutdown_s for loop in wrapped), 2),
        )
    )
    return rows


def _slowest_row(name: str, wrapped: Sequence[_Loop], bare: Sequence[_Loop]) -> dict[str, Any]:
    """What the requests at or past the p99 spent their time on, on each side (means, milliseconds)."""

    def slowest(side: Sequence[_Loop]) -> dict[str, Any]:
        requests = [
            (wall, cpu, collector, others)
            for loop in side
            for wall, cpu, collector, others in zip(
                loop.wall_ms, loop.cpu_ms, loop.collector_ms, loop.others_ms, strict=True
            )
        ]
        threshold = _quantile([wall for wall, *_ in requests], 0.99)
        tail = [request for request in requests if request[0] >= threshold]
        threads = sorted({thread for *_, others in tail for thread in others})
        return {
            "requests": len(tail),
            "wall_ms": _mean(wall for wall, *_ in tail),
            "own_cpu_ms": _mean(cpu for _, cpu, *_ in tail),
            "collector_ms": _mean(collector for _, _, collector, _ in tail),
            "with_a_collection": sum(collector > 0.2 for _, _, collector, _ in tail),
            "other_threads_cpu_ms": {
                thread: _mean(others.get(thread, 0.0) for *_, others in tail) for thread in threads
            },
        }

    ours = slowest(wrapped)
    return row(
        f"application.slowest_requests_ms[{name}]",
        ours["wall_ms"],
        "ms (mean of the requests at or past the p99)",
        None,
        "report (what they waited for: the collector on the application's thread, and other threads)",
        ours=ours,
        bare=slowest(bare),
    )


def _mean(values: Iterable[float]) -> float:
    collected = list(values)
    return round(sum(collected) / len(collected), 3) if collected else 0.0


def kept_after_traffic(processor: SpanProcessor, requests: int = STEADY_REQUESTS) -> int:
    """Tracked objects a long stretch of traffic leaves alive once flushed: ``requests`` fleet runs
    with a pause every ``PAUSE_EVERY`` (the waits of a real application, in which the worker keeps up)."""
    provider, one_run = fleet_traffic(processor, requests)
    gc.collect()
    tracked = len(gc.get_objects())
    for number in range(requests):
        one_run(number)
        if number % PAUSE_EVERY == 0:
            time.sleep(0.01)
    provider.force_flush()
    gc.collect()
    kept = len(gc.get_objects()) - tracked
    provider.shutdown()
    return kept


def _steady_row(name: str) -> dict[str, Any]:
    bare = kept_after_traffic(BatchSpanProcessor(_Discard()))
    ours = kept_after_traffic(
        ShapecheckSpanProcessor(BatchSpanProcessor(_Discard()), checks=build_checks(name))
    )
    # Bare keeps next to nothing: its count stands beside ours, not as a baseline to divide by.
    return row(
        f"application.kept_alive_after_{STEADY_REQUESTS}_runs[{name}]",
        ours,
        "tracked objects",
        None,
        "report (bare: the same traffic through a bare BatchSpanProcessor; every full collection walks them)",
        bare=bare,
    )


def _ratio(ours: Sequence[_Loop], theirs: Sequence[_Loop], measure: Callable[[_Loop], float]) -> float:
    return round(sum(map(measure, ours)) / sum(map(measure, theirs)), 3)


def _quantile(values: Sequence[float], quantile: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(quantile * len(ordered)))]


def run() -> list[dict[str, Any]]:
    """Rows for the hashing embedder and MiniLM (one intra-op thread), on the fleet's traffic."""
    return application_feel("hashing") + application_feel("minilm") + [_steady_row("hashing")]


if __name__ == "__main__":
    for one in run():
        print(json.dumps(one, ensure_ascii=False))

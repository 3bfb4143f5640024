"""The evaluation worker: one daemon thread that turns released spans into verdicts and enriched copies.

It drains the ledger's ready spans in batches, builds subjects, runs every check once per batch,
forwards each span downstream (an enriched copy when a check had a verdict, else the span as it came),
records the verdict metrics and hands the verdicts to the event sink. It then tells the ledger what each
span counts for in its run, and forwards the batch's runs' agent spans last, with their summaries.
Every failure is counted and logged once per kind; a span always reaches the downstream exactly once.
While the application is busy the thread evaluates in short slices and rests between them, resting
less as its backlog grows (:mod:`~otel_shapecheck.pipeline._pacing`), so the application's threads
are not kept waiting for the interpreter lock and no span goes un-evaluated for it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from otel_shapecheck.checks._base import Check, Subject, Verdict
from otel_shapecheck.outputs._enrich import duplicate_copy, enriched_copy, run_copy
from otel_shapecheck.outputs._sinks import VerdictSink
from otel_shapecheck.pipeline._facts import HeldSpan, Release, attribute_mapping
from otel_shapecheck.pipeline._hot_state import HotPathState
from otel_shapecheck.pipeline._ledger import Ledger
from otel_shapecheck.pipeline._pacing import Pacing
from otel_shapecheck.pipeline._runs import RunTally, coverage, run_attributes, tally_verdicts
from otel_shapecheck.pipeline._subjects import build_subjects
from otel_shapecheck.pipeline._verdict_metrics import VerdictMetrics
from otel_shapecheck.readers._classify import carries_message_content

logger = logging.getLogger(__name__)

THREAD_NAME = "ShapecheckEvaluationWorker"


class EvaluationWorker:
    """Runs the checks off the application's threads and forwards what it evaluated.

    Spans go downstream through the hot-path state's :meth:`~HotPathState.forward`, as every other
    forwarded span does.
    """

    def __init__(
        self,
        state: HotPathState,
        ledger: Ledger,
        checks: Sequence[Check] | None,
        events: VerdictSink | None,
        *,
        batch_size: int,
        schedule_delay_seconds: float,
        max_wait_seconds: float,
        answer_tools: Sequence[str] = (),
        metrics: VerdictMetrics | None = None,
    ) -> None:
        self._ledger = ledger
        self._metrics = metrics
        self._checks = tuple(checks) if checks is not None else None
        self._forward = state.forward
        self._events = events
        self._counters = state.counters
        self._batch_size = batch_size
        self._delay = schedule_delay_seconds
        self._answer_tools = tuple(answer_tools)
        counters = state.counters
        self._pacing = Pacing(
            lambda: counters.seen + counters.passed_at_once,  # spans the application ended
            ledger.backlog,
            batch_size=batch_size,
            max_wait_seconds=max_wait_seconds,
        )
        self._init_thread_state()

    def _init_thread_state(self) -> None:
        self._wake = threading.Event()
        self._urgent = threading.Event()
        """Set by a flush or a stop: ends a rest at once."""
        self._requests_lock = threading.Lock()
        self._flush_requests: list[threading.Event] = []
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=THREAD_NAME, daemon=True)

    @property
    def batch_size(self) -> int:
        """Spans evaluated per batch at most."""
        return self._batch_size

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def restart_after_fork(self) -> None:
        """A forked child has no worker thread: make a fresh one (the ledger was emptied)."""
        self._init_thread_state()
        self._thread.start()

    def is_alive(self) -> bool:
        """Whether the thread runs."""
        return self._thread.is_alive()

    def wake(self) -> None:
        """Have the thread look at the ledger now rather than after the schedule delay."""
        if not self._wake.is_set():  # setting takes the event's lock; the hot path calls this often
            self._wake.set()

    def flush(self, timeout_seconds: float) -> bool:
        """Wait until every span ready now is forwarded; False on timeout or a stopped worker."""
        if not self._thread.is_alive():
            return False
        done = threading.Event()
        with self._requests_lock:
            self._flush_requests.append(done)
        self._urgent.set()
        self._wake.set()
        return done.wait(timeout_seconds)

    def stop(self, timeout_seconds: float) -> bool:
        """Drain everything ready, then end the thread; whether it ended within the timeout."""
        self._stopping = True
        self._urgent.set()
        self._wake.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_seconds)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._delay)
            self._wake.clear()
            self._urgent.clear()  # before the requests are taken: a later flush sets it again
            with self._requests_lock:
                requests, self._flush_requests = self._flush_requests, []
            try:
                self._release_expired()
                self._drain_paced()
            except Exception:  # a bug here must not end the thread that forwards held spans
                self._counters.error("worker", "Evaluation worker failed; continuing")
            for request in requests:
                request.set()
            if self._stopping and not self._ledger.ready_count():
                with self._requests_lock:
                    for request in self._flush_requests:
                        request.set()
                return

    def _release_expired(self) -> None:
        for span in self._ledger.release_expired(time.monotonic()):
            self._forward(span)

    def _drain_paced(self) -> None:
        """Evaluate ready spans until none is ready, in short slices with rests while the application
        is busy (whole batches, no rests, when a flush or a stop waits)."""
        while True:
            urgent = self._stopping or bool(self._flush_requests)  # a racy read: a late one sets _urgent
            size = self._pacing.next_slice(urgent, time.monotonic())
            started = time.thread_time()
            releases = self._ledger.take_ready(size)
            if not releases:
                return
            self.evaluate(releases)
            spans = sum(len(release.spans) for release in releases)
            rest = self._pacing.rest_after(time.thread_time() - started, spans)
            if rest > 0:
                due = time.monotonic() + rest
                if self._urgent.wait(rest):
                    continue
                self._pacing.rested(time.monotonic() - due)  # late: another thread held the lock
                self._release_expired()

    def drain_if_stopped(self) -> bool:
        """Evaluate on the calling thread when the thread is gone (shut down, or not yet restarted);
        whether everything ready was forwarded so."""
        if self._thread.is_alive():
            return False
        try:
            self.drain()
        except Exception:
            self._counters.error("worker", "Evaluating on the flushing thread failed")
            return False
        return True

    def drain(self) -> None:
        """Evaluate and forward ready spans, batch by batch, until none is ready."""
        while releases := self._ledger.take_ready(self._batch_size):
            self.evaluate(releases)

    def forward_leftovers(self) -> None:
        """Forward every ready span un-evaluated, on the calling thread (the worker did not stop in time)."""
        while releases := self._ledger.take_ready(self._batch_size):
            for release in releases:
                for held in release.spans:
                    self._counters.forwarded_unevaluated += 1
                    self._forward(held.span)

    def evaluate(self, releases: Sequence[Release]) -> None:
        """Evaluate one batch and forward every span in it, exactly once whatever fails.

        Runs' agent spans go last: the spans of their runs in the same batch count for them first.
        """
        runs = [held for release in releases for held in release.spans if held.run is not None]
        spans = [release for release in releases if release.spans[0].run is None]
        unforwarded = {id(held): held for release in spans for held in release.spans}
        tallies: dict[int, RunTally] = {}
        try:
            if self._checks_to_run():
                self._evaluate(spans, unforwarded, tallies)
            else:
                tallies = {key: RunTally() for key in unforwarded}
        except Exception:  # a bug here must cost the batch its verdicts, never its spans
            self._counters.error("worker", "Evaluating a batch failed; forwarding its spans as they are")
        for held in unforwarded.values():
            self._forward(held.span)
        self._count_for_runs(spans, tallies)
        for held in runs:
            self._finish_run(held)

    def _count_for_runs(self, releases: Sequence[Release], tallies: dict[int, RunTally]) -> None:
        """Tell the ledger what each span counts for in its run (``None``: it was not evaluated)."""
        results: list[tuple[HeldSpan, RunTally | None]] = [
            (held, tallies.get(id(held)))
            for release in releases
            for held in release.spans
            if held.run_of is not None or held.unclaimed is not None
        ]
        if not results:
            return
        try:
            overflow = self._ledger.members_done(results)
        except Exception:
            self._counters.error("worker", "Counting evaluated spans for their runs failed")
            return
        for span in overflow:
            self._forward(span)

    def _finish_run(self, held: HeldSpan) -> None:
        """Forward a run's agent span with its run summary (as it came if building the copy fails)."""
        try:
            tally, incomplete = self._ledger.finish_run(held)
            copy = run_copy(held.span, run_attributes(tally, incomplete))
        except Exception:
            self._counters.error("run", "Summarising a run failed; forwarding its agent span as it is")
            self._forward(held.span)
            return
        if incomplete:
            self._counters.runs_incomplete += 1
        self._forward(copy)
        if self._metrics is not None:
            try:
                self._metrics.record_run(
                    coverage(tally, incomplete), tally.flagged > 0, attribute_mapping(held.span)
                )
            except Exception:
                self._counters.error("metrics", "Recording verdict metrics failed")

    def _evaluate(
        self, releases: Sequence[Release], unforwarded: dict[int, HeldSpan], tallies: dict[int, RunTally]
    ) -> None:
        held_spans: list[HeldSpan] = []
        subjects: list[Subject] = []
        for release in releases:
            try:
                built = build_subjects(release, self._answer_tools)
            except Exception:
                self._counters.error(
                    "read", "Reading spans for evaluation failed; forwarding them as they are"
                )
                continue
            held_spans.extend(release.spans)
            subjects.extend(built)
        if not subjects:
            return
        duplicates = [(held, s) for held, s in zip(held_spans, subjects, strict=True) if s.duplicate_of]
        for held, subject in duplicates:
            del unforwarded[id(held)]
            self._counters.duplicates += 1
            tallies[id(held)] = RunTally(duplicates=1)
            self._forward(duplicate_copy(held.span, subject.duplicate_of or ""))
        pairs = [(held, s) for held, s in zip(held_spans, subjects, strict=True) if not s.duplicate_of]
        if not pairs:
            return
        verdicts = self._run_checks([subject for _, subject in pairs])
        self._counters.evaluated += len(pairs)
        for (held, subject), span_verdicts in zip(pairs, verdicts, strict=True):
            del unforwarded[id(held)]
            tallies[id(held)] = tally_verdicts(
                span_verdicts, incomplete=held.incomplete, model_call=held.llm_call, call=subject.llm_call
            )
            self._finish(held, span_verdicts)

    def _checks_to_run(self) -> tuple[Check, ...]:
        """The checks; the built-in ones are built on first use, on this thread, so that numpy, FAISS and
        the embedder load off the application's start-up path."""
        if self._checks is None:
            from otel_shapecheck.checks._builtin import builtin_checks

            self._checks = tuple(builtin_checks())
        return self._checks

    def _run_checks(self, subjects: Sequence[Subject]) -> list[list[Verdict]]:
        verdicts: list[list[Verdict]] = [[] for _ in subjects]
        for check in self._checks_to_run():
            name = getattr(check, "name", type(check).__name__)
            try:
                results = list(check.evaluate(subjects))
                if len(results) != len(subjects):
                    raise ValueError(f"returned {len(results)} results for {len(subjects)} subjects")
            except Exception:
                self._counters.error(
                    f"check:{name}", "Check %s failed; its verdicts are left out of this batch", name
                )
                continue
            for slot, result in zip(verdicts, results, strict=True):
                if isinstance(result, Verdict):
                    slot.append(result)
        return verdicts

    def _finish(self, held: HeldSpan, verdicts: Sequence[Verdict]) -> None:
        span = held.span
        if not verdicts:
            self._forward(span)
            return
        try:
            on_span = verdicts
            if not carries_message_content(span.attributes or {}, span.events):
                # Content the instrumentation kept off this span must not come back on it through us;
                # the event sink applies its own switch (include_content).
                on_span = [verdict.without_content() for verdict in verdicts]
            copy = enriched_copy(span, on_span)
        except Exception:
            self._counters.error("enrich", "Building an enriched copy failed; forwarding the span as it is")
            self._forward(span)
            return
        self._counters.enriched += 1
        if any(verdict.flagged for verdict in verdicts):
            self._counters.flagged += 1
        self._forward(copy)
        if self._metrics is not None:
            try:
                self._metrics.record(verdicts, attribute_mapping(span), held.agents)
            except Exception:
                self._counters.error("metrics", "Recording verdict metrics failed")
        if self._events is not None and span.context is not None:
            try:
                self._events.emit(span.context, verdicts)
            except Exception:
                self._counters.error("events", "The event sink failed to take verdicts")

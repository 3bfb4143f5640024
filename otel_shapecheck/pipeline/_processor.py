"""The span processor users register: it wraps their own processor and forwards every span to it.

Usage::

    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from otel_shapecheck import ShapecheckSpanProcessor

    provider.add_span_processor(ShapecheckSpanProcessor(BatchSpanProcessor(OTLPSpanExporter())))

Register the wrapper only, not the downstream as well. A span with nothing to evaluate goes to the
downstream at once, untouched, from ``on_end``; a GenAI span is held in the ledger until it is final,
evaluated on the worker thread and forwarded as an enriched copy. A run's agent span (the outermost
agent span of a trace) is held until the spans of its run are evaluated, and forwarded with their
summary (``shapecheck.run.*``). Every span handed to ``on_end`` reaches ``downstream.on_end`` exactly once.

The application's thread spends in ``on_end`` a test of the span's attribute keys and, for a span
the checks may care about, one append to a queue: a recording thread (:class:`LedgerIntake`) classifies
it, walks its live ancestors and records it in the ledger, in end order, and forwards it when it is not
held. The application's thread never waits for that thread, the checks, embeddings or the downstream's
handling of held spans. Ordinary spans are handed to the downstream on the caller's thread, as if it were
registered itself (except a span with analyst attempts under it, which is held for evaluation).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Final, NamedTuple

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_shapecheck._attributes import ANALYST_ATTEMPT
from otel_shapecheck.checks._base import Check
from otel_shapecheck.otlp._sdk_fields import NO_OP_ON_ENDING, NO_OP_ON_START, SPAN_FIELDS
from otel_shapecheck.outputs._bounded_call import BoundedCall
from otel_shapecheck.outputs._sinks import VerdictSink
from otel_shapecheck.pipeline._hot_state import IS_REMOTE, SPAN_ID, TRACE_ID, HotPathState
from otel_shapecheck.pipeline._intake import LedgerIntake
from otel_shapecheck.pipeline._ledger import Ledger
from otel_shapecheck.pipeline._metrics import ProcessorCounters, ProcessorCounts
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._recorder import SpanRecorder
from otel_shapecheck.pipeline._verdict_metrics import VerdictMetrics
from otel_shapecheck.pipeline._worker import EvaluationWorker
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS
from otel_shapecheck.readers._genai import EXECUTE_TOOL_SPAN_PREFIX

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider

logger = logging.getLogger(__name__)

_AFTER_TOOL_SPAN_NAMES: Final = EXECUTE_TOOL_SPAN_PREFIX[:-1] + chr(ord(EXECUTE_TOOL_SPAN_PREFIX[-1]) + 1)
"""The first string after every name that starts with the tool-span prefix (in code-point order)."""


class ProcessorInternals(NamedTuple):
    """What the package's own modules share with a processor (see :func:`internals`)."""

    state: HotPathState
    """Its hot-path state: the gateway's pass-through asks it which plain spans must go through."""
    ledger: Ledger
    """Its ledger: its log-record processor records content into it."""


class ShapecheckSpanProcessor(SpanProcessor):
    """Evaluates GenAI spans with the checks and forwards every span, enriched where a check applied.

    Args:
        downstream: the processor spans go to (typically ``BatchSpanProcessor(OTLPSpanExporter())``).
        events: where verdicts go besides the span (e.g. a ``EvaluationEventEmitter``); ``None`` for none.
        checks: the checks to run; ``None`` runs every built-in check with its defaults.
        options: the processor's bounds (default: :class:`ProcessorOptions` from the environment).
        meter_provider: where the counters (observable counters) and the verdict metrics are recorded
            (default: the global one).

    Time bounds: while the recording thread keeps up, ``on_end`` takes no lock: it queues a GenAI span
    for that thread and calls ``downstream.on_end`` itself only for ordinary spans, as the downstream
    would be called without the wrapper. With ``max_queue_size`` spans queued it records the oldest one
    itself (bookkeeping only, waiting at most 0.5 s for a recording under way), else forwards its span
    as it came.
    ``force_flush`` records what is queued and returns within ``timeout_millis`` even when the
    downstream or the event sink hangs (their flushes run on a helper thread). ``shutdown`` waits at
    most ``shutdown_timeout_millis`` for the recording thread and the worker, then forwards what is left
    un-evaluated, then calls the downstream's and the sink's own ``shutdown``.

    Raises:
        ValueError: ``downstream`` is not a span processor, or a check lacks ``name``/``evaluate``.
    """

    def __init__(
        self,
        downstream: SpanProcessor,
        *,
        events: VerdictSink | None = None,
        checks: Sequence[Check] | None = None,
        options: ProcessorOptions | None = None,
        meter_provider: MeterProvider | None = None,
    ) -> None:
        if not isinstance(downstream, SpanProcessor):
            raise ValueError(f"downstream={downstream!r} is not a valid value: it must be a SpanProcessor")
        options = options if options is not None else ProcessorOptions()
        if not isinstance(options, ProcessorOptions):
            raise ValueError(f"options={options!r} is not a valid value: it must be a ProcessorOptions")
        self._options = options
        if checks is not None and not all(isinstance(check, Check) for check in checks):
            raise ValueError(
                f"checks={checks!r} is not a valid value: every check needs a name and evaluate()"
            )
        self._downstream = downstream
        self._downstream_starts = _overrides(downstream, "on_start", NO_OP_ON_START)
        """Whether ``on_start`` is passed on: not to a downstream whose ``on_start`` is the SDK's no-op."""
        self._downstream_endings = _overrides(downstream, "_on_ending", NO_OP_ON_ENDING)
        """Whether ``_on_ending`` is passed on: not to a downstream whose ``_on_ending`` is a no-op."""
        self._events = events
        self._counters = counters = ProcessorCounters()
        self._state = state = HotPathState(counters, downstream.on_end, max_live=options.max_pending_spans)
        self._ledger = Ledger(
            state,
            max_wait_seconds=options.max_wait_seconds,
            max_pending_spans=options.max_pending_spans,
            max_queue_size=options.max_queue_size,
            max_traces=options.max_traces,
            max_facts_per_trace=options.max_facts_per_trace,
            max_fact_bytes=options.max_fact_bytes,
            max_finished_traces=options.max_finished_traces,
            wake_at=options.max_evaluation_batch_size,
        )
        self._worker = EvaluationWorker(
            state,
            self._ledger,
            None if checks is None else list(checks),
            events,
            batch_size=options.max_evaluation_batch_size,
            schedule_delay_seconds=options.schedule_delay_seconds,
            max_wait_seconds=options.max_wait_seconds,
            answer_tools=options.answer_tools,
            metrics=VerdictMetrics(meter_provider, tool_names=options.metrics_tool_names),
        )
        self._recorder = SpanRecorder(state, self._ledger, self._worker.wake)
        self._intake = LedgerIntake(state, self._recorder, max_size=options.max_queue_size)
        self._downstream_on_end = downstream.on_end
        self._flush_downstream = BoundedCall(
            "ShapecheckDownstreamFlush",
            downstream.force_flush,
            on_error=lambda: self._counters.error("downstream", "Flushing the downstream failed"),
        )
        self._flush_events = (
            BoundedCall(
                "ShapecheckEventsFlush",
                events.force_flush,
                on_error=lambda: self._counters.error("events", "Flushing the event sink failed"),
            )
            if events is not None
            else None
        )
        self._flush_metrics: BoundedCall | None = None
        self._owned_meter_provider: SdkMeterProvider | None = None
        self._shutdown_lock = threading.Lock()
        self._is_shutdown = False
        self._counters.observe_with(meter_provider)
        self._worker.start()
        self._intake.start()
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_weak_call(weakref.WeakMethod(self._at_fork_reinit)))

    def _own_meter_provider(self, meter_provider: SdkMeterProvider) -> None:
        """Flush and shut down ``meter_provider`` with this processor (``configure()`` built it for it).

        It shuts down after the worker, so the verdicts of the last spans are recorded before the final
        export.
        """
        self._owned_meter_provider = meter_provider
        self._flush_metrics = BoundedCall(
            "ShapecheckMetricsFlush",
            lambda millis: meter_provider.force_flush(millis),
            on_error=lambda: self._counters.error("metrics", "Flushing the verdict metrics failed"),
        )

    def counts(self) -> ProcessorCounts:
        """What the processor did so far (spans seen, forwarded, held, evaluated, released, errors),
        and what it holds now: a read-only snapshot."""
        ledger = self._ledger
        return replace(
            self._counters.snapshot(), ready_spans=ledger.ready_count(), fact_bytes=ledger.fact_bytes
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Keep a reference to the starting span (a possible menu ancestor), then hand it downstream.

        The one place a start is kept (``check`` replays exported spans' starts through it too), written
        here rather than in a call: it runs for every span the application starts."""
        try:
            state = self._state
            state.sees_starts = True
            live = state.live
            if len(live) < state.max_live:
                context = span._context if SPAN_FIELDS else span.context
                live[context[SPAN_ID]] = span  # type: ignore[index]  # a started span has a context
            else:
                self._counters.started_untracked += 1
        except Exception:
            self._counters.error("on_start", "Keeping a started span failed")
        if self._downstream_starts:
            try:
                self._downstream.on_start(span, parent_context=parent_context)
            except Exception:
                self._counters.error("downstream", "The downstream span processor failed in on_start")

    def _on_ending(self, span: Span) -> None:
        """Pass the SDK's ending hook on, so a downstream implementing it works behind the wrapper."""
        if not self._downstream_endings:
            return
        try:
            self._downstream._on_ending(span)
        except Exception:
            self._counters.error("downstream", "The downstream span processor failed in _on_ending")

    def on_end(self, span: ReadableSpan) -> None:
        """Forward an ordinary span at once; queue one the checks may care about for the recording thread."""
        try:
            # Every span the application ends comes through here, so the span is read through its
            # fields, not its properties (each a Python call; `attributes` builds a view per call):
            # ReadableSpan's properties return these fields, which otlp/_sdk_fields.py checks at import
            # (SPAN_FIELDS), with the properties where an SDK release lacks them. A SpanContext is a
            # tuple; its span id is item 1.
            if SPAN_FIELDS:
                stored = span._attributes
                attributes = stored._dict if type(stored) is BoundedAttributes else (span.attributes or {})
                name = span._name
            else:
                attributes = span.attributes or {}
                name = span.name
            # This test is the whole cost an ordinary span pays: without any classifying key and a
            # tool-span name, classify_span() would answer OTHER. The name test is
            # name.startswith(EXECUTE_TOOL_SPAN_PREFIX) as two string comparisons (no method call).
            if CLASSIFYING_KEYS.isdisjoint(attributes) and not (
                EXECUTE_TOOL_SPAN_PREFIX <= name < _AFTER_TOOL_SPAN_NAMES
            ):
                context = span._context if SPAN_FIELDS else span.context
                state = self._state
                if context is None:
                    self._counters.passed_at_once += 1
                elif context[SPAN_ID] in state.attempt_parents:  # held: its attempts are still queued
                    if self._intake.put_span(span, False):
                        return
                else:
                    span_id = context[SPAN_ID]
                    # A local root finishes its trace: the ledger lets go of its facts once enough later
                    # roots ended and nothing of it is held. Its end is queued only when the trace has
                    # facts to let go of. HotPathState.is_local_root() inlined: it runs for every span.
                    parent = span._parent if SPAN_FIELDS else span.parent
                    local_root = state.sees_starts and (
                        parent is None or (parent[IS_REMOTE] and parent[SPAN_ID] not in state.live)
                    )
                    if (
                        state.queued
                        or not state.recording_idle
                        or span_id in state.awaited_ends
                        or (local_root and context[TRACE_ID] in state.fact_traces)
                    ):
                        # Spans queued before it must be recorded against its being live; a span held
                        # for its end learns of it in order. Forwarded now, queued as its context.
                        self._intake.put_end(context, local_root)
                    else:
                        state.live.pop(span_id, None)
                    self._counters.passed_at_once += 1
            elif self._intake.put_span(span, ANALYST_ATTEMPT in attributes):
                return  # the recording thread forwards it, enriched or as it came
        except Exception:
            self._counters.error("on_end", "Recording an ended span failed; forwarding it as it is")
        try:  # HotPathState.forward() inlined: one call less for every span that is not queued
            self._downstream_on_end(span)
        except Exception:
            self._counters.error("downstream", "The downstream span processor failed in on_end")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Evaluate and forward every ready span, then flush the downstream and the event sink, in time."""
        deadline = time.monotonic() + max(timeout_millis, 0) / 1000
        flushed = self._intake.flush(_remaining(deadline))
        flushed = (self._worker.flush(_remaining(deadline)) or self._worker.drain_if_stopped()) and flushed
        if not flushed:
            self._counters.error(
                "flush_timeout",
                "force_flush timed out after %d ms with spans still being evaluated or forwarded",
                timeout_millis,
                exc_info=False,
            )
        flushed = self._bounded_flush("downstream", self._flush_downstream, deadline) and flushed
        if self._flush_events is not None:
            flushed = self._bounded_flush("events", self._flush_events, deadline) and flushed
        if self._flush_metrics is not None:
            flushed = self._bounded_flush("metrics", self._flush_metrics, deadline) and flushed
        return flushed

    def _bounded_flush(self, name: str, flush: BoundedCall, deadline: float) -> bool:
        if flush(_millis(deadline)):
            return True
        if flush.hung:  # counted once per call that found it hung or left it hanging
            self._counters.error(
                f"flush_hung:{name}",
                "The %s's force_flush did not return in time; later flushes return at once until it does",
                name,
                exc_info=False,
            )
        return False

    def shutdown(self) -> None:
        """Evaluate every held span (incomplete where facts are missing), forward it, then shut down.

        Returns within ``shutdown_timeout_millis`` whatever the downstream or the event sink do: each
        call into them runs on a helper thread (:class:`BoundedCall`), and one that hangs is counted
        and left to finish on its own; spans it had not yet taken are still handed to it from there.
        """
        with self._shutdown_lock:
            if self._is_shutdown:
                return
            self._is_shutdown = True
        timeout = self._options.shutdown_timeout_seconds
        deadline = time.monotonic() + timeout
        unrecorded = self._intake.close(timeout)
        if unrecorded:
            self._counters.error(
                "shutdown_timeout:record",
                "Recording ended spans did not finish within %.1f s; forwarding %d of them as they are",
                timeout,
                len(unrecorded),
                exc_info=False,
            )
            self._state.count_unrecorded(len(unrecorded))
            self._bounded_shutdown_step("unrecorded", lambda: self._state.forward_all(unrecorded), deadline)
        self._ledger.close()
        if not self._worker.stop(_remaining(deadline)):
            self._counters.error(
                "shutdown_timeout",
                "The evaluation worker did not finish within %.1f s; forwarding what is left un-evaluated",
                timeout,
                exc_info=False,
            )
            self._bounded_shutdown_step("leftovers", self._worker.forward_leftovers, deadline)
        else:
            self._ledger.forget_facts()
        self._bounded_shutdown_step("downstream", self._downstream.shutdown, deadline)
        if self._events is not None:
            self._bounded_shutdown_step("events", self._events.shutdown, deadline)
        if self._owned_meter_provider is not None:
            self._bounded_shutdown_step("metrics", self._owned_meter_provider.shutdown, deadline)

    def _bounded_shutdown_step(self, name: str, step: Callable[[], object], deadline: float) -> None:
        call = BoundedCall(
            f"ShapecheckShutdown-{name}",
            lambda _millis: step(),
            on_error=lambda: self._counters.error(name, "Shutting down (%s) failed", name),
        )
        if not call(_millis(deadline)) and call.hung:
            self._counters.error(
                f"shutdown_timeout:{name}",
                "Shutting down (%s) did not finish within the shutdown timeout; it goes on in the background",
                name,
                exc_info=False,
            )

    def _at_fork_reinit(self) -> None:
        """A forked child starts empty: the parent's spans and counts are the parent's."""
        self._shutdown_lock = threading.Lock()
        self._state.clear()
        self._ledger.reset_after_fork()
        if not self._is_shutdown:
            self._intake.restart_after_fork()
        self._flush_downstream.reset_after_fork()
        if self._flush_events is not None:
            self._flush_events.reset_after_fork()
        if self._flush_metrics is not None:
            self._flush_metrics.reset_after_fork()
        if not self._is_shutdown:
            self._worker.restart_after_fork()


def internals(processor: ShapecheckSpanProcessor) -> ProcessorInternals:
    """The parts of ``processor`` the package's own modules work with; not part of its public surface."""
    return ProcessorInternals(processor._state, processor._ledger)


def _overrides(downstream: SpanProcessor, hook: str, no_ops: frozenset[object]) -> bool:
    """Whether ``downstream``'s ``hook`` may do anything: not one of ``no_ops``, or set on the instance."""
    return getattr(type(downstream), hook, None) not in no_ops or hook in vars(downstream)


def _weak_call(method: weakref.WeakMethod[Callable[[], None]]) -> Callable[[], None]:
    """A callable that runs ``method`` while its object lives (fork hooks cannot be unregistered)."""

    def call() -> None:
        bound = method()
        if bound is not None:
            bound()

    return call


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _millis(deadline: float) -> int:
    return int(_remaining(deadline) * 1000)

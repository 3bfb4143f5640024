"""Run the checks over exported spans, through the same span processor the live pipeline uses.

Spans read from an export are replayed into :class:`ShapecheckSpanProcessor` in the order they ended
(as a live ``TracerProvider`` would have handed them over), with a collecting downstream; a flush then
evaluates everything, and the downstream holds every span, enriched where a check applied. Verdicts
already present from an earlier run are removed first, so checking an enriched export again gives the
same verdicts instead of doubled events.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import cast

from opentelemetry.context import Context
from opentelemetry.sdk._logs import ReadWriteLogRecord
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from otel_shapecheck.checks._base import Check
from otel_shapecheck.otlp._span_copy import copy_span
from otel_shapecheck.outputs._enrich import is_verdict_attribute, is_verdict_event
from otel_shapecheck.pipeline._log_processor import ShapecheckLogRecordProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from otel_shapecheck.pipeline._run_book import CLOCK_SLACK_NS

_NO_DEADLINE_MILLIS = 24 * 3600 * 1000


class CollectingSpanProcessor(SpanProcessor):
    """Keeps every span handed to ``on_end``, in arrival order: the downstream of an offline run.

    Unlike ``SimpleSpanProcessor`` it keeps unsampled spans too, since an export holds only spans that
    were recorded. ``on_collect`` is called once per span (from whichever thread forwards it).
    """

    def __init__(self, on_collect: Callable[[ReadableSpan], None] | None = None) -> None:
        self._spans: list[ReadableSpan] = []
        self._lock = threading.Lock()
        self._on_collect = on_collect

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do: an offline run has no live spans."""

    def on_end(self, span: ReadableSpan) -> None:
        """Keep the span."""
        with self._lock:
            self._spans.append(span)
        if self._on_collect is not None:
            self._on_collect(span)

    @property
    def spans(self) -> list[ReadableSpan]:
        """The spans collected so far (a copy)."""
        with self._lock:
            return list(self._spans)


def check_spans(
    spans: Sequence[ReadableSpan],
    checks: Sequence[Check],
    *,
    log_records: Sequence[ReadWriteLogRecord] = (),
    on_span_done: Callable[[ReadableSpan], None] | None = None,
) -> list[ReadableSpan]:
    """Evaluate ``spans`` with ``checks`` and return every span, enriched where a check applied.

    ``log_records`` are exported log records: GenAI content events among them reach the checks through
    the log-record companion processor, as they do live. The result holds every input span once (a span
    read twice, from overlapping exports, is checked once), re-ordered by end time; ``on_span_done`` is
    called as each one comes out of the processor, e.g. to drive a progress bar.
    """
    collector = CollectingSpanProcessor(on_span_done)
    ordered = _end_ordered([_without_verdicts(span) for span in _distinct(spans)])
    # Every input span is known up front: size the processor's bounds to the input so none of them is
    # released early or forwarded un-evaluated for want of room, which live traffic has to risk.
    room = len(ordered) + 1
    traces = len({span.context.trace_id for span in ordered if span.context}) + 1
    processor = ShapecheckSpanProcessor(
        collector,
        checks=list(checks),
        options=ProcessorOptions(
            max_wait_millis=_NO_DEADLINE_MILLIS,
            max_pending_spans=room,
            max_queue_size=room,
            max_traces=traces,
            max_finished_traces=traces,  # a service's spans may end after another's root: keep all
            shutdown_timeout_millis=_NO_DEADLINE_MILLIS,
        ),
    )
    content = ShapecheckLogRecordProcessor(processor)
    try:
        # Content events are emitted before the span they describe ends; replay them first, in order.
        for record in sorted(log_records, key=_emit_order):
            content.on_emit(record)
        # Spans start in start order and a started span is a possible menu ancestor until it ends.
        for span in sorted(ordered, key=_start_order):
            if span.context is not None:  # on_start reads only the fields a ReadableSpan has
                processor.on_start(cast(Span, span))
        for span in ordered:
            processor.on_end(span)
        processor.force_flush(_NO_DEADLINE_MILLIS)
    finally:
        processor.shutdown()
    return collector.spans


def _distinct(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The spans with repeats of the same (trace id, span id) left out, first occurrence kept."""
    seen: set[tuple[int, int]] = set()
    distinct = []
    for span in spans:
        key = (span.context.trace_id, span.context.span_id) if span.context else (0, id(span))
        if key not in seen:
            seen.add(key)
            distinct.append(span)
    return distinct


def _emit_order(record: ReadWriteLogRecord) -> int:
    return record.log_record.timestamp or record.log_record.observed_timestamp or 0


def _start_order(span: ReadableSpan) -> int:
    return span.start_time or span.end_time or 0


def _end_order(span: ReadableSpan) -> int:
    return span.end_time or span.start_time or 0


_MAX_DEPTH = 32
"""Ancestors followed when a late child moves its parent's end (a deeper chain keeps its times)."""


def _end_ordered(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    """The spans in end order, each after its descendants that end at most :data:`CLOCK_SLACK_NS` later
    or that the input lists before it.

    Such a child ended first: its SDK takes start times from a millisecond wall clock and durations
    from a finer one (OpenTelemetry JS), so its end time can pass its parent's by up to a millisecond,
    or by more when the wall clock moved in between, while the exporter wrote it first. Replayed before
    its parent's end, it is recorded under its live parent, as a gateway receiving the export's request
    in the exporter's order records it in its run.
    """
    by_id = {(span.context.trace_id, span.context.span_id): span for span in spans if span.context}
    listed = {key: index for index, key in enumerate(by_id)}
    ends = {key: _end_order(span) for key, span in by_id.items()}
    depth = dict.fromkeys(by_id, 0)
    for key, span in sorted(by_id.items(), key=lambda item: _end_order(item[1])):
        end, parent = ends[key], span.parent
        for level in range(1, _MAX_DEPTH + 1):
            if parent is None or parent.is_remote:
                break
            parent_key = (key[0], parent.span_id)
            ancestor = by_id.get(parent_key)
            if ancestor is None:
                break
            depth[key] = max(depth[key], level)
            if end > ends[parent_key] and (
                end - _end_order(ancestor) <= CLOCK_SLACK_NS or listed[key] < listed[parent_key]
            ):
                ends[parent_key] = end
            parent = ancestor.parent
    unkeyed = [span for span in spans if not span.context]

    def order(span: ReadableSpan) -> tuple[int, int]:
        key = (span.context.trace_id, span.context.span_id)
        return (ends[key], -depth[key])

    return sorted([span for span in spans if span.context], key=order) + unkeyed


def _without_verdicts(span: ReadableSpan) -> ReadableSpan:
    """The span as the application emitted it: without the verdict attributes and events of an earlier run."""
    attributes = span.attributes or {}
    stale_attributes = any(is_verdict_attribute(key) for key in attributes)
    stale_events = any(is_verdict_event(event.name, event.attributes) for event in span.events)
    if not stale_attributes and not stale_events:
        return span
    return copy_span(
        span,
        attributes={key: value for key, value in attributes.items() if not is_verdict_attribute(key)},
        events=[event for event in span.events if not is_verdict_event(event.name, event.attributes)],
    )

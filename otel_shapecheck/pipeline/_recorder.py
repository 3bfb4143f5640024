"""What recording an ended span means: its live ancestors, its class, and its entry in the ledger.

The recording thread (:mod:`~otel_shapecheck.pipeline._intake`) calls :meth:`SpanRecorder.record_ended`
for each queued span and :meth:`SpanRecorder.record_forwarded_end` for the end of a span ``on_end``
forwarded at once, in end order; the application's thread records such an end itself, out of order,
only when the queue stayed full. The recorder keeps the started spans whose end is not yet recorded
(``live``): an LLM call takes its menu and its run from them, as they were when it ended.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Final

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import SpanContext

from otel_shapecheck.pipeline._facts import attribute_mapping
from otel_shapecheck.pipeline._ledger import UNKNOWN_ANCESTRY, Ancestry, Ledger
from otel_shapecheck.pipeline._metrics import ProcessorCounters
from otel_shapecheck.readers._classify import (
    OTHER,
    ROLE_AGENT,
    ROLE_LLM_CALL,
    SpanClass,
    classify_span,
    is_agent_span,
    names_own_tool_calls,
)
from otel_shapecheck.readers._genai_events import events_name_tool_calls
from otel_shapecheck.readers._menus import has_own_menu, menu_attributes

_MAX_ANCESTOR_DEPTH = 32
"""Ancestors looked at for a menu, nearest first."""

TRACE_ID: Final = 0
SPAN_ID: Final = 1
IS_REMOTE: Final = 2
"""Items of a ``SpanContext`` (a tuple): reading them skips the property calls on the hot path."""


class SpanRecorder:
    """Records ended spans in the ledger against the spans that were live when they ended.

    Args:
        ledger: where spans are recorded.
        counters: the processor's counters.
        wake_worker: called when the ledger has a batch ready for the evaluation worker.
        max_live: started spans kept at most (``max_pending_spans``); past it a start is counted as
            ``started_untracked`` and not kept.
    """

    def __init__(
        self,
        ledger: Ledger,
        counters: ProcessorCounters,
        wake_worker: Callable[[], None],
        *,
        max_live: int,
    ) -> None:
        self._ledger = ledger
        self._counters = counters
        self._wake_worker = wake_worker
        self.max_live = max_live
        self.live: dict[int, ReadableSpan | Span] = {}
        """Started spans whose end is not yet recorded, by span id. ``on_start`` stores into it directly;
        a span queued for recording stays here until it is recorded, so every span is recorded against
        its ancestors as they were at its end."""
        self.attempt_parents: dict[int, None] = {}
        """Parents of queued analyst attempts (by span id) until their own end is recorded: ``on_end``
        must hold such a span for evaluation although its attempts are not yet in the ledger."""
        self.sees_starts = False
        """Whether spans are handed over at their start (live, and ``check``), not only at their end."""

    def reset_after_fork(self) -> None:
        """Forget the parent process's spans (in place: the processor keeps references to both maps)."""
        self.live.clear()
        self.attempt_parents.clear()

    def span_started(self, span: ReadableSpan | Span) -> None:
        """Keep ``span`` as a possible menu ancestor until its end is recorded (never raises)."""
        try:
            context = span.context
            if context is None:
                return
            self.sees_starts = True
            live = self.live
            if len(live) >= self.max_live:
                self._counters.started_untracked += 1
                return
            live[context.span_id] = span
        except Exception:
            self._counters.error("on_start", "Keeping a started span failed")

    def record_ended(self, span: ReadableSpan) -> Sequence[ReadableSpan]:
        """Record a queued span in the ledger; the spans to forward (itself, unless the ledger holds it)."""
        held = False
        overflow: Sequence[ReadableSpan] = ()
        try:
            context = span._context
            if context is not None:
                span_id = context[SPAN_ID]
                self.live.pop(span_id, None)
                self.attempt_parents.pop(span_id, None)
            attributes = attribute_mapping(span)
            held, overflow = self._record(span, classify_span(span._name, attributes), attributes)
        except Exception:
            self._counters.error("on_end", "Recording an ended span failed; forwarding it as it is")
        return overflow if held else (span, *overflow)

    def record_forwarded_end(
        self, context: SpanContext, *, out_of_order: bool = False
    ) -> Sequence[ReadableSpan]:
        """Record the end of a span ``on_end`` forwarded: it is no longer live, held spans may wait for it.

        ``out_of_order``: recorded on the application's thread because the queue stayed full, so spans
        that ended before it may still be queued; its trace's facts then note its end whether or not a
        held span waits for it yet, for those to find it there. Returns the spans its end released into
        a full worker queue, to forward as they are.
        """
        span_id = context[SPAN_ID]
        self.live.pop(span_id, None)
        if not out_of_order and not self._ledger.concerns(span_id):
            return ()
        wake, overflow = self._ledger.span_forwarded(context[TRACE_ID], span_id, out_of_order=out_of_order)
        if wake:
            self._wake_worker()
        return overflow

    def _record(
        self, span: ReadableSpan, classified: SpanClass, attributes: Mapping[str, object]
    ) -> tuple[bool, Sequence[ReadableSpan]]:
        role = classified.role
        if classified is not OTHER:
            self._counters.count_class(classified.label)
        llm_call = role is ROLE_LLM_CALL
        context = span._context
        menu: dict[str, object] | None = None
        ancestry = UNKNOWN_ANCESTRY
        if (
            llm_call
            or role is ROLE_AGENT
            or (context is not None and self._ledger.has_attempts(context[SPAN_ID]))
        ):
            menu, ancestry = self._ancestors(span, llm_call and not has_own_menu(attributes))
        held, wake, overflow = self._ledger.span_ended(
            span,
            classified,
            names_own_tool_calls=llm_call
            and (
                names_own_tool_calls(attributes)
                or (bool(span._events) and events_name_tool_calls(span.events))
            ),
            parent_ended=llm_call and self._parent_ended(span),
            ancestor_menu=menu,
            ancestry=ancestry,
        )
        counters = self._counters
        if held:
            counters.seen += 1
        else:  # the recording thread forwards it: an ordinary span's count
            counters.passed_at_once += 1
        if wake:
            self._wake_worker()
        return held, overflow or ()

    def _parent_ended(self, span: ReadableSpan) -> bool:
        """Whether the span's local parent already ended: it started here and is no longer live.

        Only a processor that sees spans start can tell: the gateway receives ended spans only. Once a
        start went untracked (``max_pending_spans`` live spans were already kept) a parent missing from
        the live spans may still be open, so from then on the child waits as before.
        """
        parent = span._parent
        if not self.sees_starts or parent is None or parent[IS_REMOTE] or parent[SPAN_ID] in self.live:
            return False
        return self._counters.started_untracked == 0

    def _ancestors(self, span: ReadableSpan, want_menu: bool) -> tuple[dict[str, object] | None, Ancestry]:
        """One walk up the span's live local ancestors: the nearest one's menu, and the run above it.

        ``want_menu``: copy the menu attributes of the nearest ancestor with a menu (for an LLM call with
        none of its own). The run is the outermost agent span found; the ancestry is *known* when every
        ancestor up to the local root (or a remote parent) is live, or the span has no local parent. A
        processor that sees no starts (the gateway), an ancestor that already ended or went untracked,
        or a chain deeper than the walk leaves it unknown, and the ledger falls back to time windows.
        """
        parent = span.parent
        live = self.live
        menu: dict[str, object] | None = None
        outermost: int | None = None
        outermost_span: ReadableSpan | None = None
        nearest: ReadableSpan | None = None
        known = True
        for _ in range(_MAX_ANCESTOR_DEPTH):
            if parent is None or parent.is_remote:
                break
            ancestor = live.get(parent.span_id)
            if ancestor is None:
                known = False
                break
            ancestor_attributes = attribute_mapping(ancestor)
            if want_menu and menu is None:
                menu = menu_attributes(ancestor_attributes)
            if is_agent_span(ancestor_attributes):
                outermost, outermost_span = parent.span_id, ancestor
                nearest = nearest or ancestor
            parent = ancestor.parent
        else:
            known = False
        if menu is not None:
            self._counters.ancestor_menus += 1
        if outermost is None:  # an agent span with no agent above it runs its own run
            return menu, Ancestry(None, known)
        return menu, Ancestry(outermost, known, (nearest, outermost_span))

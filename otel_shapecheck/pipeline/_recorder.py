"""What recording an ended span means: its live ancestors, its class, and its entry in the ledger.

The recording thread (:mod:`~otel_shapecheck.pipeline._intake`) calls :meth:`SpanRecorder.record_ended`
for each queued span and :meth:`SpanRecorder.record_forwarded_end` for the end of a span ``on_end``
forwarded at once, in end order; the application's thread records such an end itself, out of order,
only when the queue stayed full. The started spans whose end is not yet recorded are the hot-path
state's ``live`` map: an LLM call takes its menu and its run from them, as they were when it ended.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.trace import SpanContext

from otel_shapecheck.otlp._sdk_fields import (
    own_attributes,
    span_context,
    span_events,
    span_name,
    span_parent,
)
from otel_shapecheck.pipeline._hot_state import IS_REMOTE, SPAN_ID, TRACE_ID, HotPathState
from otel_shapecheck.pipeline._ledger import Ledger
from otel_shapecheck.pipeline._run_book import UNKNOWN_ANCESTRY, Ancestry
from otel_shapecheck.readers._classify import (
    OTHER,
    ROLE_AGENT,
    ROLE_LLM_CALL,
    classify_span,
    is_agent_span,
    names_own_tool_calls,
)
from otel_shapecheck.readers._genai_events import events_name_tool_calls
from otel_shapecheck.readers._menus import has_own_menu, menu_attributes

_MAX_ANCESTOR_DEPTH = 32
"""Ancestors looked at for a menu, nearest first."""
_NO_RUN = Ancestry(None, True)
"""Every ancestor seen, none an agent span (one shared instance: a run's agent span finds this)."""


class SpanRecorder:
    """Records ended spans in the ledger against the spans that were live when they ended.

    Args:
        state: the hot path's state (the live spans, the queued attempts' parents, the counters).
        ledger: where spans are recorded.
        wake_worker: called when the ledger has a batch ready for the evaluation worker.
    """

    def __init__(self, state: HotPathState, ledger: Ledger, wake_worker: Callable[[], None]) -> None:
        self._state = state
        self._ledger = ledger
        self._wake_worker = wake_worker

    def record_ended(self, span: ReadableSpan) -> Sequence[ReadableSpan]:
        """Record a queued span in the ledger; the spans to forward (itself, unless the ledger holds it).

        Runs for every queued span on the recording thread: each value is read once (the span's
        fields, the state's maps) and handed on, rather than read again by each step.
        """
        held = False
        overflow: Sequence[ReadableSpan] | None = None
        state = self._state
        try:
            context = span_context(span)
            span_id = -1
            if context is not None:
                span_id = context[SPAN_ID]
                state.live.pop(span_id, None)
                if state.attempt_parents:
                    state.attempt_parents.pop(span_id, None)
            attributes = own_attributes(span)
            parent = span_parent(span)
            classified = classify_span(span_name(span), attributes)
            role = classified.role
            counters = state.counters
            if classified is not OTHER:
                counters.count_class(classified.label)
            llm_call = role is ROLE_LLM_CALL
            menu: dict[str, object] | None = None
            ancestry = UNKNOWN_ANCESTRY
            if llm_call or role is ROLE_AGENT or span_id in state.analyst_parents:
                menu, ancestry = self._ancestors(parent, llm_call and not has_own_menu(attributes))
            held, wake, overflow = self._ledger.span_ended(
                span,
                context,
                parent,
                classified,
                local_root=state.is_local_root(parent),
                names_own_tool_calls=llm_call
                and (
                    names_own_tool_calls(attributes)
                    or (bool(span_events(span)) and events_name_tool_calls(span.events))
                ),
                parent_ended=llm_call and self._parent_ended(parent),
                ancestor_menu=menu,
                ancestry=ancestry,
                attributes=attributes,
            )
            if held:
                counters.seen += 1
            else:  # the recording thread forwards it: an ordinary span's count
                counters.passed_at_once += 1
            if wake:
                self._wake_worker()
        except Exception:
            state.counters.error("on_end", "Recording an ended span failed; forwarding it as it is")
        if held:
            return overflow or ()
        return (span, *overflow) if overflow else (span,)

    def record_forwarded_end(
        self,
        context: SpanContext,
        *,
        out_of_order: bool = False,
        unrecorded: ReadableSpan | None = None,
        local_root: bool = False,
    ) -> Sequence[ReadableSpan]:
        """Record the end of a span ``on_end`` forwarded: it is no longer live, held spans may wait for it.

        ``out_of_order``: recorded on the application's thread because the queue stayed full, so spans
        that ended before it may still be queued; its trace's facts then note its end whether or not a
        held span waits for it yet, for those to find it there. ``unrecorded``: the span itself, which
        was to be recorded (its facts are lost; its trace notes when). ``local_root``: the span has no
        parent here (none, or a remote one not live here), so its trace is finished (unless recorded
        out of order). Returns the spans its end released into a full worker queue, to forward as they
        are.
        """
        span_id = context[SPAN_ID]
        state = self._state
        state.live.pop(span_id, None)
        if (
            not out_of_order
            and not local_root
            and span_id not in state.awaited_ends
            and span_id not in state.analyst_parents
        ):
            return ()  # Ledger.concerns(), read here: most ends concern no held span
        wake, overflow = self._ledger.span_forwarded(
            context[TRACE_ID],
            span_id,
            out_of_order=out_of_order,
            unrecorded=unrecorded,
            # Recorded out of order (no room in the queue), the root's end may pass spans of its trace
            # still queued: finishing the trace then could forget the facts they will need (its end).
            local_root=local_root and not out_of_order,
        )
        if wake:
            self._wake_worker()
        return overflow

    def _parent_ended(self, parent: SpanContext | None) -> bool:
        """Whether a span's local parent (``parent``) already ended: it started here and is no longer live.

        Only a processor that sees spans start can tell: the gateway receives ended spans only. Once a
        start went untracked (``max_pending_spans`` live spans were already kept) a parent missing from
        the live spans may still be open, so from then on the child waits as before.
        """
        state = self._state
        if not state.sees_starts or parent is None or parent[IS_REMOTE] or parent[SPAN_ID] in state.live:
            return False
        return state.counters.started_untracked == 0

    def _ancestors(
        self, parent: SpanContext | None, want_menu: bool
    ) -> tuple[dict[str, object] | None, Ancestry]:
        """One walk up a span's live local ancestors from its ``parent``: the nearest one's menu, and the
        run above it.

        A parent whose context is marked remote is walked when it is a live span of this process
        (instrumentations that re-attach a carried context, or end streamed responses under one, mark
        it so); only a remote parent that is not live here ends the walk at the local root.

        ``want_menu``: copy the menu attributes of the nearest ancestor with a menu (for an LLM call with
        none of its own). The run is the outermost agent span found; the ancestry is *known* when every
        ancestor up to the local root (or a remote parent not live here) is live, or the span has no
        local parent. A processor that sees no starts (the gateway), an ancestor that already ended or
        went untracked, or a chain deeper than the walk leaves it unknown, and the ledger falls back to
        time windows.
        """
        live = self._state.live
        menu: dict[str, object] | None = None
        outermost: int | None = None
        outermost_span: ReadableSpan | None = None
        nearest: ReadableSpan | None = None
        known = True
        for _ in range(_MAX_ANCESTOR_DEPTH):
            if parent is None:
                break
            parent_id = parent[SPAN_ID]
            ancestor = live.get(parent_id)
            if parent[IS_REMOTE] and (ancestor is None or not _same_trace(ancestor, parent)):
                break  # another process's span: the local root is reached
            if ancestor is None:
                known = False
                break
            ancestor_attributes = own_attributes(ancestor)
            if want_menu and menu is None:
                menu = menu_attributes(ancestor_attributes)
            if is_agent_span(ancestor_attributes):
                outermost, outermost_span = parent_id, ancestor
                nearest = nearest or ancestor
            parent = span_parent(ancestor)
        else:
            known = False
        if menu is not None:
            self._state.counters.ancestor_menus += 1
        if outermost is None:  # an agent span with no agent above it runs its own run
            return menu, _NO_RUN if known else UNKNOWN_ANCESTRY
        return menu, Ancestry(outermost, known, (nearest, outermost_span))


def _same_trace(span: ReadableSpan | Span, parent: SpanContext) -> bool:
    """Whether a live span is the span ``parent`` names (its trace too: a remote id is not ours to trust)."""
    context = span_context(span)
    return context is not None and context[TRACE_ID] == parent[TRACE_ID]

"""The one way a ``ReadableSpan`` is made after the fact: a span read from an export, or a copy of an
ended span (enriched, marked a duplicate, a run summary, or stripped of an earlier run's verdicts).

An ended span cannot be changed (the SDK freezes it before any processor sees it,
opentelemetry-python#5614), so every change is a new span. The SDK's ``ReadableSpan`` derives its
dropped counts from its own bounded containers, which a rebuilt span does not have; :class:`RebuiltSpan`
reports the counts of the span it stands for instead, so no copy or re-read exports zeros.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind
from opentelemetry.trace.status import Status
from opentelemetry.util.types import AttributeValue

DroppedCounts = tuple[int, int, int]
"""Attributes, events and links a span dropped."""

NONE_DROPPED: Final[DroppedCounts] = (0, 0, 0)


class RebuiltSpan(ReadableSpan):
    """A span made after the fact, reporting the dropped counts of the span it stands for.

    The counts are set by :func:`rebuilt_span` once the span is made: an ``__init__`` of its own would
    pass every argument on a second time, a cost paid per span read and per span enriched.
    """

    _dropped_counts: DroppedCounts = NONE_DROPPED
    """Attributes, events and links dropped before this span was made (none unless set)."""

    @property
    def dropped_attributes(self) -> int:
        """Attributes the span this one stands for dropped (a rebuilt span drops none of its own)."""
        return self._dropped_counts[0]

    @property
    def dropped_events(self) -> int:
        """Events the span this one stands for dropped."""
        return self._dropped_counts[1]

    @property
    def dropped_links(self) -> int:
        """Links the span this one stands for dropped."""
        return self._dropped_counts[2]


def rebuilt_span(
    name: str,
    context: SpanContext | None,
    parent: SpanContext | None,
    resource: Resource,
    scope: InstrumentationScope | None,
    kind: SpanKind,
    start_time: int | None,
    end_time: int | None,
    status: Status,
    attributes: Mapping[str, AttributeValue],
    events: Sequence[Event],
    links: Sequence[Link],
    dropped: DroppedCounts,
) -> RebuiltSpan:
    """A span of every field given, reporting ``dropped`` as its dropped counts.

    ``attributes`` are stored as given (an ended span's frozen ``BoundedAttributes``, or a plain
    mapping nothing else holds): the caller has validated them.
    """
    span = RebuiltSpan(
        name=name,
        context=context,
        parent=parent,
        resource=resource,
        attributes=attributes,
        events=events,
        links=links,
        kind=kind,
        status=status,
        start_time=start_time,
        end_time=end_time,
        instrumentation_scope=scope,
    )
    if dropped != NONE_DROPPED:
        span._dropped_counts = dropped
    return span


def copy_span(
    span: ReadableSpan,
    *,
    attributes: Mapping[str, AttributeValue] | None = None,
    events: Sequence[Event] | None = None,
) -> RebuiltSpan:
    """A copy of ``span`` with every field kept, its attributes or events replaced where given.

    Kept: name, the same resource object (the OTLP encoder groups spans by it), scope, context,
    parent, kind, times, status, attributes, events, links, and the original's dropped counts.
    """
    return rebuilt_span(
        span.name,
        span.context,
        span.parent,
        span.resource,
        span.instrumentation_scope,
        span.kind,
        span.start_time,
        span.end_time,
        span.status,
        (span.attributes or {}) if attributes is None else attributes,
        span.events if events is None else tuple(events),
        span.links,
        (span.dropped_attributes, span.dropped_events, span.dropped_links),
    )

"""Enriched copies: a new ``ReadableSpan`` carrying the verdicts, since an ended span cannot be changed.

The SDK freezes a span's attributes before any processor sees it (opentelemetry-python#5614), and the
same span object is shared by every processor. So the verdicts go on a copy that keeps everything
else: the same resource object (the OTLP encoder groups spans by it), scope, context, parent, links,
kind, status, times and the original's dropped counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.util.types import AnyValue, AttributeValue

from otel_shapecheck._attributes import DUPLICATE_OF, EVALUATION_EVENT, EVALUATION_NAME, FLAGGED, FLAGS
from otel_shapecheck.checks._base import Verdict, enrichment_attributes


class EnrichedSpan(ReadableSpan):
    """A copy of an ended span with extra attributes and events, reporting the original's dropped counts."""

    def __init__(
        self,
        original: ReadableSpan,
        attributes: BoundedAttributes | Mapping[str, AttributeValue],
        events: Sequence[Event],
    ) -> None:
        super().__init__(
            name=original.name,
            context=original.context,
            parent=original.parent,
            resource=original.resource,
            attributes=attributes,
            events=tuple(events),
            links=tuple(original.links),
            kind=original.kind,
            status=original.status,
            start_time=original.start_time,
            end_time=original.end_time,
            instrumentation_scope=original.instrumentation_scope,
        )
        self._original_dropped = (
            original.dropped_attributes,
            original.dropped_events,
            original.dropped_links,
        )

    @property
    def dropped_attributes(self) -> int:
        """Attributes the original span dropped (the copy drops none of its own)."""
        return self._original_dropped[0]

    @property
    def dropped_events(self) -> int:
        """Events the original span dropped."""
        return self._original_dropped[1]

    @property
    def dropped_links(self) -> int:
        """Links the original span dropped."""
        return self._original_dropped[2]


def enriched_copy(span: ReadableSpan, verdicts: Sequence[Verdict]) -> EnrichedSpan:
    """``span`` plus the verdicts' attributes and one ``gen_ai.evaluation.result`` span event per verdict.

    The events are stamped with the span's end time, so they fall inside the span in every viewer.
    """
    # Only the verdicts' attributes go through the SDK's validation: the span's own were validated when
    # it was built, and re-cleaning them cost a third of the worker's time per span.
    added = BoundedAttributes(attributes=enrichment_attributes(verdicts), immutable=True, max_value_len=None)
    attributes: dict[str, AttributeValue] = {**_own_attributes(span), **added}
    timestamp = span.end_time
    events = list(span.events)
    events.extend(
        Event(
            EVALUATION_EVENT,
            BoundedAttributes(attributes=verdict.event_attributes(), immutable=True),
            timestamp,
        )
        for verdict in verdicts
    )
    return EnrichedSpan(span, attributes, events)


def _own_attributes(span: ReadableSpan) -> Mapping[str, AttributeValue]:
    """The span's attributes; an ended span's frozen ``BoundedAttributes`` read as its plain dict.

    (The public property wraps them in a new view whose iteration runs Python code per key; see
    ``pipeline._facts.attribute_mapping``, which this module cannot import without a cycle.)
    """
    stored = span._attributes
    if type(stored) is BoundedAttributes:
        own: Mapping[str, AttributeValue] = stored._dict
        return own
    return span.attributes or {}


def duplicate_copy(span: ReadableSpan, original_span_id: str) -> EnrichedSpan:
    """``span`` marked as a second record of the call evaluated on ``original_span_id`` (nothing else)."""
    attributes = BoundedAttributes(
        attributes={**(span.attributes or {}), DUPLICATE_OF: original_span_id},
        immutable=True,
        max_value_len=None,
    )
    return EnrichedSpan(span, attributes, list(span.events))


_NAMESPACE = "shapecheck."
_VERDICT_PREFIXES = (
    "shapecheck.tool_choice.",
    "shapecheck.conformance.",
    "shapecheck.figures.",
    "shapecheck.run.",
)
_VERDICT_KEYS = frozenset({FLAGGED, FLAGS, DUPLICATE_OF})


def is_verdict_attribute(key: str) -> bool:
    """Whether ``key`` is an attribute a check writes (not one an application wrote as input)."""
    return key in _VERDICT_KEYS or key.startswith(_VERDICT_PREFIXES)


def is_verdict_event(name: str, attributes: Mapping[str, AnyValue] | None) -> bool:
    """Whether a span event is one of our ``gen_ai.evaluation.result`` events."""
    evaluation = (attributes or {}).get(EVALUATION_NAME)
    return name == EVALUATION_EVENT and isinstance(evaluation, str) and evaluation.startswith(_NAMESPACE)

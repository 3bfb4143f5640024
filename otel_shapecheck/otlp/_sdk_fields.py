"""What the hot path may read of the SDK's spans directly, probed once at import.

``on_end`` runs for every span the application ends, so it reads a span's fields (``_attributes``,
``_name``, ``_context``, ``_parent`` and ``BoundedAttributes._dict``) rather than its properties, each a
Python call. Those fields are not public API: every SDK release we support has them, but a release that
renames one must cost speed, never spans. So the fields are probed here on a real span; when any is
missing or disagrees with its public property, :data:`SPAN_FIELDS` is false and the hot path reads the
public properties instead. The SDK's private ``_on_ending`` hook (added in opentelemetry-sdk 1.40) is
probed the same way: on releases without it there is nothing to pass on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter
from typing import Any, Final

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanContext, TraceFlags
from opentelemetry.util.types import AttributeValue

logger = logging.getLogger(__name__)


def _span_fields_readable() -> bool:
    """Whether a real SDK span exposes the fields the hot path reads, with its properties' values."""
    context = SpanContext(0x1, 0x2, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    parent = SpanContext(0x1, 0x3, is_remote=True)
    attributes = BoundedAttributes(attributes={"probe": 1})
    span = ReadableSpan(name="probe", context=context, parent=parent, attributes=attributes)
    try:
        fields: Any = span
        return (
            fields._name == span.name
            and fields._context is span.context
            and fields._parent is span.parent
            and fields._attributes is attributes
            and attributes._dict == {"probe": 1}
            and fields._context[1] == context.span_id  # a SpanContext is a tuple; item 1 is the span id
        )
    except (AttributeError, IndexError, TypeError):
        return False


SPAN_FIELDS: Final[bool] = _span_fields_readable()
"""Whether ``on_end`` may read span fields directly (else the public properties, slower but complete)."""

if not SPAN_FIELDS:
    logger.info(
        "This opentelemetry-sdk's spans do not have the fields otel-shapecheck reads on its hot path; "
        "reading their public properties instead (slower, nothing else changes)"
    )

HAS_ON_ENDING: Final[bool] = hasattr(SpanProcessor, "_on_ending")
"""Whether this SDK calls the private ``_on_ending`` hook of span processors."""

NO_OP_ON_START: Final = frozenset(
    {SpanProcessor.on_start, BatchSpanProcessor.on_start, SimpleSpanProcessor.on_start}
)
"""The SDK's ``on_start`` implementations that do nothing: a downstream using one is not called."""

NO_OP_ON_ENDING: Final = frozenset(
    getattr(processor, "_on_ending", None)
    for processor in (SpanProcessor, BatchSpanProcessor, SimpleSpanProcessor)
)
"""The SDK's ``_on_ending`` implementations that do nothing (``{None}`` on an SDK without the hook)."""

_FIELD_NAMES: Final = (
    ("_context", "_parent", "_name", "_events")
    if SPAN_FIELDS
    else (
        "context",
        "parent",
        "name",
        "events",
    )
)

span_context: Final[Callable[[ReadableSpan], SpanContext | None]] = attrgetter(_FIELD_NAMES[0])
"""A span's context: its field where the SDK has it, else the public property (off the hot path)."""
span_parent: Final[Callable[[ReadableSpan], SpanContext | None]] = attrgetter(_FIELD_NAMES[1])
"""A span's parent context, read like :data:`span_context`."""
span_name: Final[Callable[[ReadableSpan], str]] = attrgetter(_FIELD_NAMES[2])
"""A span's name, read like :data:`span_context`."""
span_events: Final[Callable[[ReadableSpan], Sequence[Event]]] = attrgetter(_FIELD_NAMES[3])
"""A span's events, read like :data:`span_context`."""


def own_attributes(span: ReadableSpan) -> Mapping[str, AttributeValue]:
    """A span's attributes: an ended span's frozen ``BoundedAttributes`` read as its plain dict.

    The public property wraps them in a new read-only view on every call, and iterating that view runs
    Python code per key; an ended span's ``BoundedAttributes`` is frozen, so reading its dict is safe and
    about twice as fast. Anything else (a span built from a plain mapping, an SDK without the fields)
    takes the public property.
    """
    if SPAN_FIELDS:
        stored = span._attributes
        if type(stored) is BoundedAttributes:
            own: Mapping[str, AttributeValue] = stored._dict
            return own
    return span.attributes or {}

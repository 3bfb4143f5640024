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
from typing import Any, Final

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.trace import SpanContext, TraceFlags

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

"""Enriched, duplicate and run copies: new ``ReadableSpan`` values carrying the verdicts, since an
ended span cannot be changed.

The SDK freezes a span's attributes before any processor sees it (opentelemetry-python#5614), and the
same span object is shared by every processor. So the verdicts go on a copy
(:func:`~otel_shapecheck.otlp._span_copy.copy_span`) that keeps everything else: the same resource
object, scope, context, parent, links, kind, status, times and the original's dropped counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.util.types import AnyValue, AttributeValue

from otel_shapecheck._attributes import DUPLICATE_OF, EVALUATION_EVENT, EVALUATION_NAME, FLAGGED, FLAGS
from otel_shapecheck.checks._base import Verdict, enrichment_attributes
from otel_shapecheck.otlp._sdk_fields import own_attributes
from otel_shapecheck.otlp._span_copy import copy_span


def enriched_copy(span: ReadableSpan, verdicts: Sequence[Verdict]) -> ReadableSpan:
    """``span`` plus the verdicts' attributes and one ``gen_ai.evaluation.result`` span event per verdict.

    The events are stamped with the span's end time, so they fall inside the span in every viewer.
    """
    # Only the verdicts' attributes are validated: the span's own were validated when it was built, and
    # re-cleaning them cost a third of the worker's time per span. The verdicts' are plain values, which
    # the SDK's cleaning would keep as they are (see ``_bounded``).
    added = _bounded(enrichment_attributes(verdicts))
    attributes: dict[str, AttributeValue] = {**own_attributes(span), **added}
    timestamp = span.end_time
    events = list(span.events)
    events.extend(
        Event(EVALUATION_EVENT, _bounded(verdict.event_attributes()), timestamp) for verdict in verdicts
    )
    return copy_span(span, attributes=attributes, events=events)


_PLAIN_TYPES = frozenset({str, bool, int, float})
"""Scalars every supported SDK keeps as they are (releases differ on bytes, decoded before 1.40, and
None, dropped before 1.40), so anything else goes through the SDK's own cleaning."""


def _is_plain(value: AttributeValue) -> bool:
    """Whether the SDK's cleaning keeps ``value`` as it is: a plain scalar, or a tuple of one plain type."""
    kind = type(value)
    if kind in _PLAIN_TYPES:
        return True
    if kind is not tuple or not value:
        return False
    first = type(value[0])  # type: ignore[index]
    return first in _PLAIN_TYPES and all(type(item) is first for item in value)  # type: ignore[union-attr]


def _bounded(attributes: Mapping[str, AttributeValue]) -> BoundedAttributes:
    """Immutable, unlimited ``BoundedAttributes`` of ``attributes``, as the SDK's constructor builds them.

    The constructor cleans every value through generic ``Sequence``/``Mapping`` checks, most of the
    copy's cost for a dozen verdict attributes; when every key is a non-empty string and every value is
    plain (:func:`_is_plain`) that cleaning would return the same values, so they are stored directly.
    Anything else goes through the constructor.
    """
    bounded = BoundedAttributes(immutable=True, max_value_len=None)
    stored = getattr(bounded, "_dict", None)
    plain = all(type(key) is str and key and _is_plain(value) for key, value in attributes.items())
    if not plain or type(stored) is not dict or stored:
        return BoundedAttributes(attributes=attributes, immutable=True, max_value_len=None)
    stored.update(attributes)
    return bounded


def duplicate_copy(span: ReadableSpan, original_span_id: str) -> ReadableSpan:
    """``span`` marked as a second record of the call evaluated on ``original_span_id`` (nothing else)."""
    return copy_span(span, attributes={**own_attributes(span), DUPLICATE_OF: original_span_id})


def run_copy(span: ReadableSpan, summary: Mapping[str, AttributeValue]) -> ReadableSpan:
    """``span`` (a run's agent span) with its run summary (``shapecheck.run.*``, from
    :func:`~otel_shapecheck.pipeline._runs.run_attributes`); its own attributes and events are kept."""
    return copy_span(span, attributes={**own_attributes(span), **summary})


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

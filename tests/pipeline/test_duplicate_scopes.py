"""Whether a trace's LLM-call spans can hold a second record of one call at all: only across scopes."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope

from otel_shapecheck.pipeline._duplicates import could_record_one_call, one_instrumentation


def _span(scope: InstrumentationScope | None, start: int = 10, end: int = 20) -> ReadableSpan:
    return ReadableSpan(name="chat", instrumentation_scope=scope, start_time=start, end_time=end)


def test_spans_of_one_scope_are_one_instrumentation_and_never_pair() -> None:
    scope = InstrumentationScope("openinference", "1.0")
    first, second = _span(scope, 10, 30), _span(InstrumentationScope("openinference", "1.0"), 12, 40)
    assert one_instrumentation([first, second])
    assert not could_record_one_call(first, second)


def test_another_scope_or_version_may_record_the_same_call() -> None:
    first = _span(InstrumentationScope("openinference", "1.0"), 10, 30)
    for other in (InstrumentationScope("openllmetry", "1.0"), InstrumentationScope("openinference", "2.0")):
        second = _span(other, 12, 40)
        assert not one_instrumentation([first, second])
        assert could_record_one_call(first, second)


def test_a_span_without_a_scope_is_never_settled_as_one_instrumentation() -> None:
    first, second = _span(None, 10, 30), _span(None, 12, 40)
    assert not one_instrumentation([first, second])
    assert could_record_one_call(first, second)

"""The ledger's byte budget on facts (the gateway's bound): big tool results cannot pile up in memory."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags

from otel_shapecheck.pipeline._ledger import Ledger
from otel_shapecheck.pipeline._metrics import ProcessorCounters
from otel_shapecheck.pipeline._sizes import fact_bytes
from otel_shapecheck.readers._classify import classify_span

RESULT = "x" * 100_000


def _tool_span(trace_id: int, span_id: int) -> ReadableSpan:
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "lookup",
        "gen_ai.tool.call.result": RESULT,
    }
    return ReadableSpan(
        name="execute_tool lookup",
        context=SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)),
        attributes=attributes,
    )


def _ledger(max_fact_bytes: int | None) -> tuple[Ledger, ProcessorCounters]:
    counters = ProcessorCounters()
    ledger = Ledger(
        counters,
        max_wait_seconds=30,
        max_pending_spans=100,
        max_queue_size=100,
        max_traces=1000,
        max_facts_per_trace=512,
        max_fact_bytes=max_fact_bytes,
    )
    return ledger, counters


def _record(ledger: Ledger, traces: int) -> None:
    for trace in range(1, traces + 1):
        span = _tool_span(trace, trace)
        ledger.span_ended(span, classify_span(span.name, span.attributes or {}))


def test_a_tool_span_weighs_about_its_text() -> None:
    """The estimate of a span with a 100 kB result is about 100 kB."""
    assert 100_000 <= fact_bytes(_tool_span(1, 1)) < 101_000


def test_past_the_byte_budget_the_least_recently_active_traces_are_dropped() -> None:
    """Ten traces of 100 kB facts under a 350 kB budget: the oldest go, the newest three stay, counted."""
    ledger, counters = _ledger(350_000)
    _record(ledger, 10)
    assert counters.facts_dropped == 7
    assert ledger._fact_bytes <= 350_000  # noqa: SLF001 - the bound itself


def test_without_a_byte_budget_only_counts_bound_the_facts() -> None:
    """The in-process default: no byte budget, every trace's facts are kept up to max_traces."""
    ledger, counters = _ledger(None)
    _record(ledger, 10)
    assert counters.facts_dropped == 0

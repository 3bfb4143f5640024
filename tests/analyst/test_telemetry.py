"""Spans the retry wrapper writes: one analyst span per analyze(), one child span per attempt."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from otel_shapecheck import AnalystConformanceRecord, ConformanceCheck, Subject, with_shape_collapse_retry
from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    CONFORMANCE_ATTEMPTS,
    CONFORMANCE_RATE,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
)
from otel_shapecheck._model import AnalystRun
from otel_shapecheck.checks.conformance._record import conformance_attributes
from otel_shapecheck.readers._classify import SpanRole, classify_span
from otel_shapecheck.readers._read import read_analyst_attempt

from .analysts import AsyncScriptedAnalyst, RecordingContext, ScriptedAnalyst, Step, collapse, success


def _split(spans: Sequence[ReadableSpan]) -> tuple[ReadableSpan, list[ReadableSpan]]:
    """The analyst span and its attempt spans (in attempt order) among the exported spans."""
    analyst = [span for span in spans if span.name == "analyst probe"]
    attempts = [span for span in spans if span.name == "analyst probe attempt"]
    assert len(analyst) == 1
    return analyst[0], sorted(attempts, key=lambda span: span.attributes[ANALYST_ATTEMPT])  # type: ignore[index]


@pytest.mark.parametrize("flavour", [ScriptedAnalyst, AsyncScriptedAnalyst], ids=["sync", "async"])
def test_analyst_and_attempt_spans_carry_the_contract(
    flavour: type[ScriptedAnalyst], tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """A collapse then a recovery: two attempt spans under the analyst span, which carries the record."""
    records: list[AnalystConformanceRecord] = []
    wrapped = with_shape_collapse_retry(
        flavour([collapse(4), Step(emitted=3, accepted=2, findings=["a", "b"])]),
        on_conformance=records.append,
        tracer_provider=tracer_provider,
    )
    result = wrapped.analyze({}, RecordingContext())
    if asyncio.iscoroutine(result):
        asyncio.run(result)

    analyst, attempts = _split(span_exporter.get_finished_spans())
    assert [dict(span.attributes or {}) for span in attempts] == [
        {ANALYST_ID: "probe", ANALYST_ATTEMPT: 1, ROWS_EMITTED: 4, ROWS_ACCEPTED: 0},
        {ANALYST_ID: "probe", ANALYST_ATTEMPT: 2, ROWS_EMITTED: 3, ROWS_ACCEPTED: 2},
    ]
    for attempt in attempts:
        assert attempt.parent is not None
        assert attempt.parent.span_id == analyst.context.span_id
        assert attempt.context.trace_id == analyst.context.trace_id
        assert classify_span(attempt.name, attempt.attributes or {}).role is SpanRole.ANALYST_ATTEMPT
    assert classify_span(analyst.name, analyst.attributes or {}).role is not SpanRole.ANALYST_ATTEMPT
    expected = AnalystConformanceRecord(
        analyst_id="probe",
        attempts=2,
        emitted_peak=4,
        emitted_final=3,
        accepted=2,
        collapsed=True,
        recovered=True,
        conformance_rate=2 / 3,
    )
    assert dict(analyst.attributes or {}) == {ANALYST_ID: "probe", **conformance_attributes(expected)}
    assert records[0].conformance_rate == analyst.attributes[CONFORMANCE_RATE]  # type: ignore[index]


def test_spans_of_the_analysts_own_work_nest_under_the_attempt(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """An LLM call made inside analyze() is a child of that attempt's span."""
    tracer = tracer_provider.get_tracer("app")

    class Calling:
        id = "probe"

        def analyze(self, _input: object, ctx: Any) -> list[int]:
            with tracer.start_as_current_span("chat model"):
                ctx.log("rows", {"emitted": 1, "accepted": 1})
            return [1]

    with_shape_collapse_retry(Calling(), tracer_provider=tracer_provider).analyze({}, RecordingContext())
    spans = {span.name: span for span in span_exporter.get_finished_spans()}
    assert spans["chat model"].parent is not None
    assert spans["chat model"].parent.span_id == spans["analyst probe attempt"].context.span_id


def test_a_raising_attempt_ends_its_spans_with_the_error(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """The exception propagates, and both spans end with status ERROR and an exception event."""

    class Failing:
        id = "probe"

        def analyze(self, _input: object, ctx: Any) -> list[int]:
            ctx.log("rows", {"emitted": 2, "accepted": 0})
            raise ConnectionError("model endpoint down")

    with pytest.raises(ConnectionError):
        with_shape_collapse_retry(Failing(), tracer_provider=tracer_provider).analyze({}, RecordingContext())
    analyst, attempts = _split(span_exporter.get_finished_spans())
    assert len(attempts) == 1
    assert attempts[0].attributes[ROWS_EMITTED] == 2  # type: ignore[index]
    for span in (analyst, attempts[0]):
        assert span.status.status_code is StatusCode.ERROR
        assert [event.name for event in span.events] == ["exception"]
    assert CONFORMANCE_ATTEMPTS not in (analyst.attributes or {})


def test_the_check_rebuilds_the_wrappers_record_from_its_spans(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """Read back through the span readers, the attempt spans give the check the same record."""
    for script in ([collapse(2), collapse(5), success(4)], [collapse(3)], [success(2)], [Step(0, 0)]):
        span_exporter.clear()
        with_shape_collapse_retry(
            ScriptedAnalyst(script), max_retries=2, tracer_provider=tracer_provider
        ).analyze({}, RecordingContext())
        analyst, attempt_spans = _split(span_exporter.get_finished_spans())
        attempts = tuple(read_analyst_attempt(span) for span in reversed(attempt_spans))
        assert all(attempt is not None for attempt in attempts)
        run = AnalystRun(
            span_id=format(analyst.context.span_id, "016x"),
            trace_id=format(analyst.context.trace_id, "032x"),
            attempts=attempts,  # type: ignore[arg-type]
        )
        (verdict,) = ConformanceCheck().evaluate(
            [Subject(span_id=run.span_id, trace_id=run.trace_id, analyst_run=run)]
        )
        assert verdict is not None
        on_span = {key: value for key, value in (analyst.attributes or {}).items() if key != ANALYST_ID}
        assert dict(verdict.attributes) == on_span


def test_without_a_provider_passed_in_the_record_is_still_delivered() -> None:
    """With only the global provider (possibly none configured) the wrapper works the same."""
    records: list[AnalystConformanceRecord] = []
    findings = with_shape_collapse_retry(
        ScriptedAnalyst([collapse(), success()]), on_conformance=records.append
    ).analyze({}, RecordingContext())
    assert len(findings) == 3
    assert records[0].recovered is True


def test_concurrent_async_runs_keep_their_own_spans_and_records(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """Five interleaved analyze() calls on one wrapper: five records, each attempt under its own run."""

    class Interleaving:
        id = "probe"

        def __init__(self) -> None:
            self.seen: dict[int, int] = {}

        async def analyze(self, input: int, ctx: Any) -> list[int]:
            self.seen[input] = self.seen.get(input, 0) + 1
            await asyncio.sleep(0)
            collapsed = self.seen[input] <= input % 3
            ctx.log("rows", {"emitted": 2, "accepted": 0 if collapsed else 2})
            await asyncio.sleep(0)
            return [] if collapsed else [input, input]

    records: list[AnalystConformanceRecord] = []
    wrapped = with_shape_collapse_retry(
        Interleaving(), on_conformance=records.append, tracer_provider=tracer_provider
    )

    async def main() -> list[Any]:
        return list(await asyncio.gather(*(wrapped.analyze(n, RecordingContext()) for n in range(5))))

    assert asyncio.run(main()) == [[n, n] for n in range(5)]
    assert sorted(record.attempts for record in records) == sorted(1 + n % 3 for n in range(5))
    spans = span_exporter.get_finished_spans()
    runs = {span.context.span_id: span for span in spans if span.name == "analyst probe"}
    assert len(runs) == 5
    for span in spans:
        if span.name == "analyst probe attempt":
            assert span.parent is not None
            run = runs[span.parent.span_id]
            assert span.attributes[ANALYST_ATTEMPT] <= run.attributes[CONFORMANCE_ATTEMPTS]  # type: ignore[index,operator]
    assert sum(run.attributes[CONFORMANCE_ATTEMPTS] for run in runs.values()) == len(spans) - 5  # type: ignore[misc,index]

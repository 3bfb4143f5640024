"""Conformance honesty: counts read as logged, unreadable counts never taken for a genuine empty, and an
unrecovered collapse never scored as a success."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any

import pytest
from analyst.analysts import RecordingContext
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_shapecheck import AnalystConformanceRecord, ConformanceCheck, Subject, with_shape_collapse_retry
from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    CONFORMANCE_RATE,
    CONFORMANCE_UNREADABLE,
    FLAG_CONFORMANCE_COLLAPSED,
    FLAG_CONFORMANCE_UNREADABLE,
    FLAG_CONFORMANCE_UNRECOVERED,
    ROWS_UNREADABLE,
)
from otel_shapecheck._model import AnalystAttempt, AnalystRun, read_row_count
from otel_shapecheck.checks._base import Verdict
from otel_shapecheck.readers._read import read_analyst_attempt

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
RUN_SPAN_ID = "00f067aa0ba902b7"


class LoggingAnalyst:
    """An analyst that logs the given ``{emitted, accepted}`` fields per call and returns ``findings``."""

    id = "probe"

    def __init__(self, script: Sequence[tuple[dict[str, Any], list[Any]]]) -> None:
        self.script = list(script)
        self.calls = 0

    def analyze(self, _input: object, ctx: Any) -> list[Any]:
        fields, findings = self.script[min(self.calls, len(self.script) - 1)]
        self.calls += 1
        ctx.log("rows", fields)
        return findings


def _run(
    analyst: LoggingAnalyst, tracer_provider: TracerProvider | None = None
) -> list[AnalystConformanceRecord]:
    records: list[AnalystConformanceRecord] = []
    wrapped = with_shape_collapse_retry(
        analyst, max_retries=2, on_conformance=records.append, tracer_provider=tracer_provider
    )
    wrapped.analyze(None, RecordingContext())
    return records


def _verdict_from_spans(spans: Sequence[ReadableSpan]) -> Verdict:
    """The conformance check's verdict on the run, read back from the attempt spans alone."""
    attempts = [attempt for span in spans if (attempt := read_analyst_attempt(span)) is not None]
    run = AnalystRun(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, attempts=tuple(attempts))
    (verdict,) = ConformanceCheck().evaluate(
        [Subject(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, analyst_run=run)]
    )
    assert verdict is not None
    return verdict


class TestReadRowCount:
    @pytest.mark.parametrize(
        ("value", "count"), [(3, 3), (3.0, 3), ("3", 3), (" 12 ", 12), ("4.0", 4), (0, 0)]
    )
    def test_counts(self, value: object, count: int) -> None:
        """Whole numbers ≥ 0, as numbers or as numeric strings, are counts."""
        assert read_row_count(value) == count

    @pytest.mark.parametrize(
        "value", ["abc", "", "3 rows", math.nan, math.inf, -1, "-2", 1.5, "1.5", True, [1]]
    )
    def test_not_counts(self, value: object) -> None:
        """Text, NaN, infinities, negatives, fractions, booleans and containers are not counts."""
        assert read_row_count(value) is None


class TestNumericStrings:
    def test_numeric_string_counts_make_a_collapse_visible(self) -> None:
        """'3' emitted and '0' accepted with no findings is a collapse: re-sampled, and recorded as one."""
        analyst = LoggingAnalyst(
            [({"emitted": "3", "accepted": "0"}, []), ({"emitted": "3", "accepted": "3"}, [1])]
        )
        (record,) = _run(analyst)
        assert analyst.calls == 2
        assert (record.collapsed, record.recovered, record.emitted_peak) == (True, True, 3)


class TestUnreadableCounts:
    def test_unreadable_counts_are_counted_and_logged(
        self,
        tracer_provider: TracerProvider,
        span_exporter: InMemorySpanExporter,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        """Each unreadable count is logged and counted on the attempt span; it adds nothing to the counts."""
        analyst = LoggingAnalyst([({"emitted": "abc", "accepted": math.nan}, [])])
        with caplog.at_level(logging.WARNING, logger="otel_shapecheck.analyst._retry"):
            (record,) = _run(analyst, tracer_provider)
        assert (record.emitted_final, record.accepted) == (0, 0)
        warnings = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
        assert len(warnings) == 2
        assert "'abc'" in warnings[0]
        spans = span_exporter.get_finished_spans()
        (attempt,) = [span for span in spans if ANALYST_ATTEMPT in (span.attributes or {})]
        assert attempt.attributes is not None and attempt.attributes[ROWS_UNREADABLE] == 2
        (analyst_span,) = [span for span in spans if span.name == "analyst probe"]
        assert analyst_span.attributes is not None and analyst_span.attributes[CONFORMANCE_UNREADABLE] == 2

    def test_unreadable_empty_is_not_a_genuine_empty(
        self, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
    ) -> None:
        """A run whose only counts were unreadable is labelled unreadable and flagged, not nothing to find."""
        _run(LoggingAnalyst([({"emitted": "abc"}, [])]), tracer_provider)
        verdict = _verdict_from_spans(span_exporter.get_finished_spans())
        assert verdict.label == "unreadable"
        assert verdict.flags == (FLAG_CONFORMANCE_UNREADABLE,)
        assert verdict.score is None
        assert "nothing to find" not in verdict.explanation
        assert verdict.attributes[CONFORMANCE_UNREADABLE] == 1

    def test_an_unreadable_extra_field_beside_readable_counts_is_noted(self) -> None:
        """Readable counts still decide the outcome; the unreadable one is named in the explanation."""
        run = _attempt_run((3, 3, 1))
        verdict = _verdict(run)
        assert (verdict.label, verdict.score, verdict.flags) == ("conformant", 1.0, ())
        assert verdict.explanation.endswith("; 1 reported row count could not be read.")

    def test_reader_takes_numeric_string_attributes_and_counts_bad_ones(
        self, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
    ) -> None:
        """A foreign emitter's attempt span with '3' emitted and 'n/a' accepted: 3 emitted, 1 unreadable."""
        tracer = tracer_provider.get_tracer("foreign")
        attributes = {
            "shapecheck.analyst.id": "probe",
            "shapecheck.analyst.attempt": 1,
            "shapecheck.rows.emitted": "3",
            "shapecheck.rows.accepted": "n/a",
        }
        with tracer.start_as_current_span("attempt", attributes=attributes):
            pass
        (span,) = span_exporter.get_finished_spans()
        attempt = read_analyst_attempt(span)
        assert attempt is not None
        assert (attempt.emitted, attempt.accepted, attempt.unreadable) == (3, 0, 1)


def _attempt_run(*counts: tuple[int, int, int]) -> AnalystRun:
    attempts = tuple(
        AnalystAttempt(
            span_id=f"{index + 1:016x}",
            trace_id=TRACE_ID,
            analyst_id="triage",
            attempt=index + 1,
            emitted=emitted,
            accepted=accepted,
            unreadable=unreadable,
            parent_id=RUN_SPAN_ID,
        )
        for index, (emitted, accepted, unreadable) in enumerate(counts)
    )
    return AnalystRun(span_id=RUN_SPAN_ID, trace_id=TRACE_ID, attempts=attempts)


def _verdict(run: AnalystRun) -> Verdict:
    (verdict,) = ConformanceCheck().evaluate(
        [Subject(span_id=run.span_id, trace_id=TRACE_ID, analyst_run=run)]
    )
    assert verdict is not None
    return verdict


class TestUnrecoveredCollapseScore:
    def test_collapse_then_empty_resample_scores_zero(self) -> None:
        """Rows all rejected, then an empty re-sample: the record keeps rate 1, the score is 0."""
        verdict = _verdict(_attempt_run((3, 0, 0), (0, 0, 0)))
        assert verdict.attributes[CONFORMANCE_RATE] == 1.0
        assert (verdict.label, verdict.score) == ("collapsed", 0.0)
        assert verdict.flags == (FLAG_CONFORMANCE_COLLAPSED, FLAG_CONFORMANCE_UNRECOVERED)

    def test_wrapper_record_keeps_the_reference_rate(self) -> None:
        """The wrapper's record of the same run still has the reference's conformance_rate of 1."""
        analyst = LoggingAnalyst([({"emitted": 3, "accepted": 0}, []), ({"emitted": 0, "accepted": 0}, [])])
        (record,) = _run(analyst)
        assert (record.collapsed, record.recovered, record.conformance_rate) == (True, False, 1.0)

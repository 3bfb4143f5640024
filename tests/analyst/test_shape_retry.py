"""The shape-collapse retry wrapper: when it re-samples, what it reports, and what it leaves alone."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Mapping
from dataclasses import asdict
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_shapecheck import AnalystConformanceRecord, with_shape_collapse_retry

from .analysts import AsyncScriptedAnalyst, RecordingContext, ScriptedAnalyst, Step, collapse, success


class _SilentContext:
    """The seed tests' ``{ log: () => {} }``."""

    def log(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        pass


class TestSeedParity:
    """The two parity tests of the original request, ported one to one."""

    def test_resamples_a_collapsed_response_and_reports_recovery(self) -> None:
        """A first sample whose 3 rows are all rejected is re-sampled once and reported as recovered."""
        calls = 0

        class Base:
            id = "probe"

            async def analyze(self, _input: object, ctx: Any) -> list[dict[str, str]]:
                nonlocal calls
                calls += 1
                ctx.log("rows", {"emitted": 3, "accepted": 0 if calls == 1 else 3})
                return [] if calls == 1 else [{"subject": "a"}, {"subject": "b"}, {"subject": "c"}]

        records: list[AnalystConformanceRecord] = []
        wrapped = with_shape_collapse_retry(Base(), max_retries=3, on_conformance=records.append)
        findings = asyncio.run(wrapped.analyze({}, _SilentContext()))  # type: ignore[arg-type]
        assert len(findings) == 3
        assert calls == 2
        assert [asdict(record) for record in records] == [
            {
                "analyst_id": "probe",
                "attempts": 2,
                "emitted_peak": 3,
                "emitted_final": 3,
                "accepted": 3,
                "collapsed": True,
                "recovered": True,
                "conformance_rate": 1,
            }
        ]

    def test_passes_a_genuine_empty_through_without_resampling(self) -> None:
        """An attempt that emitted nothing is returned as-is, with no re-sample."""
        calls = 0

        class Base:
            id = "probe"

            async def analyze(self, _input: object, ctx: Any) -> list[object]:
                nonlocal calls
                calls += 1
                ctx.log("rows", {"emitted": 0, "accepted": 0})
                return []

        wrapped = with_shape_collapse_retry(Base(), max_retries=3)
        assert asyncio.run(wrapped.analyze({}, _SilentContext())) == []  # type: ignore[arg-type]
        assert calls == 1


def _run(analyst: ScriptedAnalyst, **options: Any) -> tuple[list[Any], list[AnalystConformanceRecord]]:
    """Wrap ``analyst``, run one analyze() (awaiting it if async) and return findings and records."""
    records: list[AnalystConformanceRecord] = []
    wrapped = with_shape_collapse_retry(analyst, on_conformance=records.append, **options)
    result = wrapped.analyze({"doc": 1}, RecordingContext())
    findings = asyncio.run(result) if asyncio.iscoroutine(result) else result  # type: ignore[arg-type]
    return list(findings), records


@pytest.fixture(name="flavour", params=[ScriptedAnalyst, AsyncScriptedAnalyst], ids=["sync", "async"])
def _flavour(request: pytest.FixtureRequest) -> type[ScriptedAnalyst]:
    flavour: type[ScriptedAnalyst] = request.param
    return flavour


class TestRetryPolicy:
    """Re-sampling happens only for a collapse and only within the budget, for both flavours."""

    def test_collapse_never_recovered_uses_the_whole_budget(self, flavour: type[ScriptedAnalyst]) -> None:
        """A collapse on every sample takes 1 + max_retries attempts and is reported unrecovered."""
        analyst = flavour([collapse(4)])
        findings, records = _run(analyst, max_retries=2)
        assert findings == []
        assert analyst.calls == 3
        assert records == [
            AnalystConformanceRecord(
                analyst_id="probe",
                attempts=3,
                emitted_peak=4,
                emitted_final=4,
                accepted=0,
                collapsed=True,
                recovered=False,
                conformance_rate=0.0,
            )
        ]

    def test_no_collapse_takes_one_attempt(self, flavour: type[ScriptedAnalyst]) -> None:
        """Findings on the first sample: one attempt, conformant, rate accepted / emitted."""
        analyst = flavour([Step(emitted=4, accepted=3, findings=[1, 2, 3])])
        findings, records = _run(analyst)
        assert findings == [1, 2, 3]
        assert analyst.calls == 1
        assert records[0].attempts == 1
        assert records[0].collapsed is False
        assert records[0].recovered is False
        assert records[0].conformance_rate == 0.75

    def test_peak_and_final_differ_when_the_resample_is_smaller(self, flavour: type[ScriptedAnalyst]) -> None:
        """emitted_peak is the largest attempt, emitted_final the last one."""
        analyst = flavour([collapse(5), Step(emitted=2, accepted=1, findings=["x"])])
        findings, records = _run(analyst)
        assert findings == ["x"]
        record = records[0]
        assert (record.attempts, record.emitted_peak, record.emitted_final, record.accepted) == (2, 5, 2, 1)
        assert record.collapsed and record.recovered
        assert record.conformance_rate == 0.5

    def test_resample_that_comes_back_empty_is_not_a_recovery(self, flavour: type[ScriptedAnalyst]) -> None:
        """A collapse followed by an attempt that emits nothing stops re-sampling and is unrecovered."""
        analyst = flavour([collapse(3), Step(emitted=0, accepted=0)])
        findings, records = _run(analyst)
        assert findings == []
        assert analyst.calls == 2
        assert records[0].collapsed is True
        assert records[0].recovered is False
        assert records[0].conformance_rate == 1.0

    def test_analyst_that_never_logs_counts_is_not_resampled(self, flavour: type[ScriptedAnalyst]) -> None:
        """Without counts an empty result reads as a genuine empty: no retry, emitted 0."""
        analyst = flavour([Step(emitted=None, accepted=None)])
        findings, records = _run(analyst)
        assert findings == []
        assert analyst.calls == 1
        assert records == [
            AnalystConformanceRecord(
                "probe", 1, 0, 0, 0, collapsed=False, recovered=False, conformance_rate=1.0
            )
        ]

    def test_counts_of_several_logs_in_one_attempt_add_up(self) -> None:
        """Two batches logged by one attempt count as their sum."""

        class TwoBatches:
            id = "batches"

            def analyze(self, _input: object, ctx: Any) -> list[int]:
                ctx.log("rows", {"emitted": 2, "accepted": 1})
                ctx.log("rows", {"emitted": 3, "accepted": 2})
                ctx.log("unrelated", {"emitted": "many", "accepted": math.nan})
                ctx.log("no fields")
                return [1, 2, 3]

        records: list[AnalystConformanceRecord] = []
        with_shape_collapse_retry(TwoBatches(), on_conformance=records.append).analyze(
            None, RecordingContext()
        )
        assert (records[0].emitted_final, records[0].accepted) == (5, 3)

    def test_rows_accepted_but_no_findings_is_resampled(self) -> None:
        """The re-sample rule reads the findings: emitted > 0 and nothing returned is re-sampled."""
        analyst = ScriptedAnalyst([Step(emitted=3, accepted=3), success()])
        findings, records = _run(analyst)
        assert len(findings) == 3
        assert analyst.calls == 2
        assert records[0].attempts == 2
        assert records[0].collapsed is False

    @pytest.mark.parametrize("bad", [math.nan, -1, -0.5, math.inf, "2", None, True, [1]], ids=repr)
    def test_bad_max_retries_falls_back_to_three(
        self, bad: object, flavour: type[ScriptedAnalyst], caplog: pytest.LogCaptureFixture
    ) -> None:
        """NaN, negatives, infinities and non-numbers cannot disable retries: the default 3 applies."""
        analyst = flavour([collapse()])
        with caplog.at_level(logging.WARNING, logger="otel_shapecheck.analyst._retry"):
            _, records = _run(analyst, max_retries=bad)
        assert analyst.calls == 4
        assert records[0].attempts == 4
        assert "max_retries" in caplog.text

    @pytest.mark.parametrize(("value", "attempts"), [(0, 1), (1, 2), (2.9, 3), (5, 6)])
    def test_valid_max_retries_sets_the_budget(self, value: float, attempts: int) -> None:
        """Zero means no re-sample; a fractional budget is rounded down."""
        analyst = ScriptedAnalyst([collapse()])
        _, records = _run(analyst, max_retries=value)
        assert analyst.calls == attempts
        assert records[0].attempts == attempts

    def test_on_retry_receives_the_collapsed_attempt(self) -> None:
        """on_retry is called before each re-sample with the collapsed attempt's number and counts."""
        calls: list[tuple[int, int, int]] = []
        analyst = ScriptedAnalyst([collapse(3), Step(emitted=2, accepted=0), success(1)])
        _run(analyst, on_retry=lambda attempt, emitted, accepted: calls.append((attempt, emitted, accepted)))
        assert calls == [(1, 3, 0), (2, 2, 0)]

    def test_on_retry_is_not_called_when_the_budget_is_spent(self) -> None:
        """The last collapsed attempt of an exhausted budget triggers no on_retry."""
        calls: list[int] = []
        _run(ScriptedAnalyst([collapse()]), max_retries=1, on_retry=lambda attempt, *_: calls.append(attempt))
        assert calls == [1]

    @settings(max_examples=60, deadline=None)
    @given(
        script=st.lists(
            st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 3)), min_size=1, max_size=6
        ),
        max_retries=st.integers(0, 4),
    )
    def test_attempts_follow_the_rule_for_any_script(
        self, script: list[tuple[int, int, int]], max_retries: int
    ) -> None:
        """For any script: re-sample exactly while emitted > 0 and no findings, within the budget."""
        steps = [Step(emitted=e, accepted=a, findings=list(range(f))) for e, a, f in script]
        analyst = ScriptedAnalyst(steps)
        findings, records = _run(analyst, max_retries=max_retries)
        played = _cycle(steps)
        expected = 1
        while expected <= max_retries and not played[expected - 1].findings and played[expected - 1].emitted:
            expected += 1
        assert analyst.calls == expected
        assert len(records) == 1
        assert records[0].attempts == expected
        assert findings == list(played[expected - 1].findings)


def _cycle(steps: list[Step]) -> list[Step]:
    """The steps a scripted analyst plays over 8 calls (its last step repeats)."""
    return [steps[min(i, len(steps) - 1)] for i in range(8)]


class TestPassThrough:
    """What the wrapper must not change: the context's logs, its attributes, exceptions, the flavour."""

    def test_every_log_reaches_the_callers_context(self) -> None:
        """Logs are teed, not swallowed: the caller's context sees each one of every attempt."""
        ctx = RecordingContext()
        with_shape_collapse_retry(ScriptedAnalyst([collapse(2), success(2)])).analyze({}, ctx)
        assert ctx.logs == [("rows", {"emitted": 2, "accepted": 0}), ("rows", {"emitted": 2, "accepted": 2})]

    def test_other_context_attributes_are_visible_to_the_analyst(self) -> None:
        """The analyst still reads the application's own context attributes through the tee."""
        analyst = ScriptedAnalyst([success()])
        with_shape_collapse_retry(analyst).analyze({}, RecordingContext(budget=42))
        assert analyst.contexts[0].budget == 42

    def test_sync_base_gives_sync_wrapper_and_async_base_gives_async_wrapper(self) -> None:
        """A plain analyze() returns findings directly; an async one returns an awaitable."""
        sync_result = with_shape_collapse_retry(ScriptedAnalyst([success()])).analyze({}, RecordingContext())
        assert isinstance(sync_result, list)
        async_result = with_shape_collapse_retry(AsyncScriptedAnalyst([success()])).analyze(
            {}, RecordingContext()
        )
        assert asyncio.iscoroutine(async_result)
        assert len(asyncio.run(async_result)) == 3

    def test_wrapper_keeps_the_analyst_id(self) -> None:
        """The wrapped analyst answers to the base's id."""
        assert with_shape_collapse_retry(ScriptedAnalyst([success()], analyst_id="triage")).id == "triage"

    @pytest.mark.parametrize("flavour", [ScriptedAnalyst, AsyncScriptedAnalyst], ids=["sync", "async"])
    def test_exception_from_the_base_propagates_unchanged(self, flavour: type[ScriptedAnalyst]) -> None:
        """The base's own exception object reaches the caller after a collapse; no record, no retry of it."""
        boom = RuntimeError("model unavailable")

        class Failing(flavour):  # type: ignore[valid-type,misc]
            def _play(self, ctx: Any) -> list[Any]:
                rows = super()._play(ctx)
                if self.calls == 2:
                    raise boom
                return rows

        analyst = Failing([collapse()])
        records: list[AnalystConformanceRecord] = []
        wrapped = with_shape_collapse_retry(analyst, on_conformance=records.append)
        with pytest.raises(RuntimeError) as raised:
            result = wrapped.analyze({}, RecordingContext())
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        assert raised.value is boom
        assert analyst.calls == 2
        assert records == []

    def test_failing_callbacks_do_not_disturb_the_analysis(self, caplog: pytest.LogCaptureFixture) -> None:
        """A raising on_retry or on_conformance is logged; the findings still come back."""

        def broken(*_: object) -> None:
            raise ValueError("sink down")

        wrapped = with_shape_collapse_retry(
            ScriptedAnalyst([collapse(), success()]), on_retry=broken, on_conformance=broken
        )
        with caplog.at_level(logging.ERROR, logger="otel_shapecheck.analyst._retry"):
            findings = wrapped.analyze({}, RecordingContext())
        assert len(findings) == 3
        assert caplog.text.count("callback failed") == 2

    def test_sync_analyze_returning_an_awaitable_is_a_type_error(self) -> None:
        """A plain analyze() that returns a coroutine is reported as a wiring error, clearly."""

        class Confused:
            id = "confused"

            def analyze(self, _input: object, _ctx: object) -> Any:
                async def rows() -> list[int]:
                    return [1]

                return rows()

        with pytest.raises(TypeError, match="async def"):
            with_shape_collapse_retry(Confused()).analyze({}, RecordingContext())

    @pytest.mark.parametrize("base", [object(), type("NoId", (), {"analyze": lambda self, i, c: []})()])
    def test_a_base_that_is_not_an_analyst_is_rejected(self, base: Any) -> None:
        """Wrapping something without a string id and an analyze method raises ValueError at once."""
        with pytest.raises(ValueError, match="analyst"):
            with_shape_collapse_retry(base)

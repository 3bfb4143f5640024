"""Shape-collapse retry: re-sample an analyst whose rows were all rejected, and say what happened.

An analyst whose model answers in the wrong shape returns an empty finding list, which reads exactly
like "nothing to find". The wrapper reads the ``emitted``/``accepted`` counts the analyst logs, takes
another sample while rows were emitted but no finding came back, and reports one
:class:`~otel_shapecheck.checks.conformance._record.AnalystConformanceRecord` per ``analyze()``.

When a tracer provider is configured (the global one, or one passed in), each ``analyze()`` is an
``analyst <id>`` span with one child span per attempt carrying ``shapecheck.analyst.id``,
``shapecheck.analyst.attempt``, ``shapecheck.rows.emitted`` and ``shapecheck.rows.accepted``; the analyst
span gets the ``shapecheck.conformance.*`` attributes before it ends.

Usage::

    analyst = with_shape_collapse_retry(MyAnalyst(), max_retries=2, on_conformance=records.append)
    findings = analyst.analyze(document, ctx)
"""

from __future__ import annotations

import inspect
import logging
import math
import numbers
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence, Sized
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, overload

from opentelemetry import trace
from opentelemetry.trace import Span, Tracer, TracerProvider

from otel_shapecheck._attributes import (
    ANALYST_ATTEMPT,
    ANALYST_ID,
    ROWS_ACCEPTED,
    ROWS_EMITTED,
    ROWS_UNREADABLE,
)
from otel_shapecheck._model import read_row_count
from otel_shapecheck._version import __version__
from otel_shapecheck.analyst._protocol import (
    ACCEPTED_FIELD,
    EMITTED_FIELD,
    Analyst,
    AnalystContext,
    AsyncAnalyst,
    SyncAnalyst,
)
from otel_shapecheck.checks.conformance._record import (
    AnalystConformanceRecord,
    AttemptCounts,
    build_conformance_record,
    conformance_attributes,
    unreadable_counts,
)

logger = logging.getLogger(__name__)

_DEFAULT_MAX_RETRIES = 3

OnRetry = Callable[[int, int, int], object]
"""Called before each re-sample with the collapsed attempt's number (1-based), emitted and accepted counts."""

OnConformance = Callable[[AnalystConformanceRecord], object]
"""Called once per ``analyze()`` with the settled record."""


@overload
def with_shape_collapse_retry(
    base: AsyncAnalyst,
    *,
    max_retries: float = ...,
    on_retry: OnRetry | None = ...,
    on_conformance: OnConformance | None = ...,
    tracer_provider: TracerProvider | None = ...,
) -> AsyncAnalyst: ...


@overload
def with_shape_collapse_retry(
    base: SyncAnalyst,
    *,
    max_retries: float = ...,
    on_retry: OnRetry | None = ...,
    on_conformance: OnConformance | None = ...,
    tracer_provider: TracerProvider | None = ...,
) -> SyncAnalyst: ...


@overload
def with_shape_collapse_retry(
    base: Analyst,
    *,
    max_retries: float = ...,
    on_retry: OnRetry | None = ...,
    on_conformance: OnConformance | None = ...,
    tracer_provider: TracerProvider | None = ...,
) -> Analyst: ...


def with_shape_collapse_retry(
    base: Analyst,
    *,
    max_retries: float = _DEFAULT_MAX_RETRIES,
    on_retry: OnRetry | None = None,
    on_conformance: OnConformance | None = None,
    tracer_provider: TracerProvider | None = None,
) -> Analyst:
    """Wrap ``base`` so a shape collapse is re-sampled and every run reports a conformance record.

    Args:
        base: the analyst to wrap; an ``async def analyze`` gives an async wrapper.
        max_retries: re-samples allowed after the first attempt (default 3). NaN, infinities, negatives
            and non-numbers fall back to the default, so a bad value cannot disable retries; a fractional
            value is rounded down.
        on_retry: called before each re-sample as ``on_retry(attempt, emitted, accepted)``.
        on_conformance: called with the record once retries settle (not when ``base`` raises).
        tracer_provider: where the analyst and attempt spans go; the global provider when omitted.

    Raises:
        ValueError: ``base`` has no string ``id`` or no callable ``analyze``.
    """
    analyst_id = getattr(base, "id", None)
    if not isinstance(analyst_id, str):
        raise ValueError(f"base must be an analyst with a string id, got id={analyst_id!r}")
    if not callable(getattr(base, "analyze", None)):
        raise ValueError(f"base analyst {analyst_id!r} has no callable analyze(input, ctx)")
    settings = _RetrySettings(
        analyst_id=analyst_id,
        max_retries=_retry_budget(max_retries),
        on_retry=on_retry,
        on_conformance=on_conformance,
        tracer=trace.get_tracer(__name__, __version__, tracer_provider=tracer_provider),
    )
    if inspect.iscoroutinefunction(base.analyze):
        return _AsyncShapeRetryAnalyst(base, settings)
    return _ShapeRetryAnalyst(base, settings)


def _retry_budget(value: object) -> int:
    """``value`` as a re-sample count, or the default when it is not a finite number ≥ 0."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        number = float(value)
        if math.isfinite(number) and number >= 0:
            return int(number)
    logger.warning(
        "max_retries=%r is not a finite number >= 0; using the default %d", value, _DEFAULT_MAX_RETRIES
    )
    return _DEFAULT_MAX_RETRIES


def _finding_count(findings: object) -> int:
    """How many findings an attempt returned; ``None`` counts as none."""
    if isinstance(findings, Sized):
        return len(findings)
    return 0 if findings is None else 1


class _CountingContext:
    """The context an attempt sees: every ``log`` is passed to the caller's context, and counted.

    Each log carrying ``emitted``/``accepted`` reports one batch of rows; an attempt's counts are the sums
    over its logs. A count is a whole number ≥ 0 or a string of one (``"3"``); any other value (``"abc"``,
    NaN, a negative) is counted as unreadable and logged, never read as 0. Any other attribute is read
    from the caller's context.
    """

    def __init__(self, ctx: object, analyst_id: str, attempt: int) -> None:
        self._ctx = ctx
        self._analyst_id = analyst_id
        self._attempt = attempt
        self.emitted = 0
        self.accepted = 0
        self.unreadable = 0

    def log(self, message: str, fields: Mapping[str, Any] | None = None) -> None:
        """Count the rows ``fields`` reports, then pass the log on."""
        if isinstance(fields, Mapping):
            self.emitted += self._read(fields, EMITTED_FIELD)
            self.accepted += self._read(fields, ACCEPTED_FIELD)
        forward = getattr(self._ctx, "log", None)
        if callable(forward):
            forward(message, fields)

    def _read(self, fields: Mapping[str, Any], name: str) -> int:
        """The count under ``name`` (0 when absent); an unreadable one is counted apart and logged."""
        value = fields.get(name)
        if value is None:
            return 0
        count = read_row_count(value)
        if count is None:
            self.unreadable += 1
            logger.warning(
                "Analyst %r attempt %d logged an unreadable %s count %r: counted as unreadable, not as 0",
                self._analyst_id,
                self._attempt,
                name,
                value,
            )
            return 0
        return count

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._ctx, name)

    def counts(self) -> AttemptCounts:
        """What this attempt reported so far."""
        return AttemptCounts(emitted=self.emitted, accepted=self.accepted, unreadable=self.unreadable)


@dataclass(frozen=True, kw_only=True)
class _RetrySettings:
    """The wrapper's configuration, shared by the sync and async flavours."""

    analyst_id: str
    max_retries: int
    on_retry: OnRetry | None
    on_conformance: OnConformance | None
    tracer: Tracer


class _Run:
    """The bookkeeping of one ``analyze()``: attempt spans, counts, the retry decision, the record."""

    def __init__(self, settings: _RetrySettings, ctx: object) -> None:
        self._settings = settings
        self._ctx = ctx
        self._attempts: list[AttemptCounts] = []

    @contextmanager
    def analyst_span(self) -> Iterator[Span]:
        """The span of the whole ``analyze()``."""
        with self._settings.tracer.start_as_current_span(
            f"analyst {self._settings.analyst_id}", attributes={ANALYST_ID: self._settings.analyst_id}
        ) as span:
            yield span

    @contextmanager
    def attempt(self) -> Iterator[_CountingContext]:
        """One sample: its span, and the counting context the base analyst gets."""
        number = len(self._attempts) + 1
        counting = _CountingContext(self._ctx, self._settings.analyst_id, number)
        attributes: dict[str, str | int] = {ANALYST_ID: self._settings.analyst_id, ANALYST_ATTEMPT: number}
        with self._settings.tracer.start_as_current_span(
            f"analyst {self._settings.analyst_id} attempt", attributes=attributes
        ) as span:
            try:
                yield counting
            finally:
                counts = counting.counts()
                self._attempts.append(counts)
                span.set_attributes({ROWS_EMITTED: counts.emitted, ROWS_ACCEPTED: counts.accepted})
                if counts.unreadable:
                    span.set_attribute(ROWS_UNREADABLE, counts.unreadable)

    def should_resample(self, findings: object) -> bool:
        """Whether the attempt that just ended collapsed and budget remains; tells ``on_retry`` if so."""
        last = self._attempts[-1]
        if _finding_count(findings) > 0 or last.emitted == 0:
            return False
        if len(self._attempts) > self._settings.max_retries:
            return False
        if self._settings.on_retry is not None:
            _call_hook("on_retry", self._settings.on_retry, len(self._attempts), last.emitted, last.accepted)
        return True

    def settle(self, span: Span) -> None:
        """Build the record, put it on the analyst span and hand it to ``on_conformance``."""
        record = build_conformance_record(self._settings.analyst_id, self._attempts)
        span.set_attributes(conformance_attributes(record, unreadable_counts(self._attempts)))
        if self._settings.on_conformance is not None:
            _call_hook("on_conformance", self._settings.on_conformance, record)


def _call_hook(name: str, hook: Callable[..., object], *args: object) -> None:
    """Call a user callback; its failure is logged and does not disturb the analysis."""
    try:
        hook(*args)
    except Exception:  # a reporting callback must not turn a finished analysis into a failure
        logger.exception("shape-collapse retry %s callback failed", name)


class _ShapeRetryAnalyst:
    """The wrapper around a synchronous analyst."""

    def __init__(self, base: Analyst, settings: _RetrySettings) -> None:
        self._base = base
        self._settings = settings
        self.id = settings.analyst_id

    def analyze(self, input: Any, ctx: AnalystContext | None = None) -> Sequence[Any]:
        """Run the base analyst, re-sampling shape collapses; exceptions from the base propagate."""
        run = _Run(self._settings, ctx)
        with run.analyst_span() as span:
            while True:
                with run.attempt() as counting:
                    findings = self._base.analyze(input, counting)
                    if inspect.isawaitable(findings):
                        _close(findings)
                        raise TypeError(
                            f"analyst {self.id!r} returned an awaitable from a plain analyze(); "
                            "declare it async def"
                        )
                if not run.should_resample(findings):
                    break
            run.settle(span)
        return findings


class _AsyncShapeRetryAnalyst:
    """The wrapper around an ``async def analyze`` analyst."""

    def __init__(self, base: Analyst, settings: _RetrySettings) -> None:
        self._base = base
        self._settings = settings
        self.id = settings.analyst_id

    async def analyze(self, input: Any, ctx: AnalystContext | None = None) -> Sequence[Any]:
        """Run the base analyst, re-sampling shape collapses; exceptions from the base propagate."""
        run = _Run(self._settings, ctx)
        with run.analyst_span() as span:
            while True:
                with run.attempt() as counting:
                    findings = await _awaited(self._base.analyze(input, counting))
                if not run.should_resample(findings):
                    break
            run.settle(span)
        return findings


async def _awaited(result: Sequence[Any] | Awaitable[Sequence[Any]]) -> Sequence[Any]:
    """The findings of an async analyze() call."""
    if inspect.isawaitable(result):
        return await result
    return result


def _close(awaitable: object) -> None:
    """Close a coroutine nobody will await, so it does not warn about never being awaited."""
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()

"""Every OTEL_SHAPECHECK_* variable: a good value applies; a bad one warns once and the default applies."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

from otel_shapecheck import _settings
from otel_shapecheck import environment_variables as env
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._cache import EmbeddingCache
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.checks.tool_choice._embedders import HashingEmbedder, MiniLMEmbedder
from otel_shapecheck.gateway._settings import (
    gateway_queue_bytes,
    gateway_queue_size,
    max_request_bytes,
    receiving_bytes,
    resolve_retry_after,
    shutdown_timeout,
    spool_max_bytes,
    tls_handshake_timeout,
)
from otel_shapecheck.gateway._spool import spool_flush_seconds
from otel_shapecheck.pipeline._events import EvaluationEventEmitter
from otel_shapecheck.pipeline._options import ProcessorOptions


@pytest.fixture(autouse=True)
def _forget_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bad (variable, value) pair is logged once per process: start every test with none logged."""
    monkeypatch.setattr(_settings, "_warned", set())


def _events() -> EvaluationEventEmitter:
    return EvaluationEventEmitter(InMemoryLogRecordExporter())


def _option(name: str) -> Callable[[], object]:
    return lambda: getattr(ProcessorOptions(), name)


def _event(name: str) -> Callable[[], object]:
    def read() -> object:
        emitter = _events()
        try:
            return getattr(emitter, name)
        finally:
            emitter.shutdown()

    return read


@dataclass(frozen=True)
class Case:
    """How to read one variable's setting, a good value (and what it reads as) and a bad value."""

    variable: str
    read: Callable[[], object]
    default: object
    good: str
    good_reads_as: object
    bad: str


CASES = [
    Case(env.OTEL_SHAPECHECK_MAX_WAIT_MILLIS, _option("max_wait_millis"), 30_000, "5", 5, "soon"),
    Case(env.OTEL_SHAPECHECK_MAX_PENDING_SPANS, _option("max_pending_spans"), 10_000, "7", 7, "-1"),
    Case(env.OTEL_SHAPECHECK_MAX_QUEUE_SIZE, _option("max_queue_size"), 2048, "9", 9, "0"),
    Case(
        env.OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE, _option("max_evaluation_batch_size"), 64, "3", 3, "1.5"
    ),
    Case(env.OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS, _option("schedule_delay_millis"), 200, "10", 10, "x"),
    Case(env.OTEL_SHAPECHECK_MAX_TRACES, _option("max_traces"), 1000, "2", 2, "many"),
    Case(env.OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE, _option("max_facts_per_trace"), 512, "8", 8, "-8"),
    Case(
        env.OTEL_SHAPECHECK_MAX_FACT_BYTES, _option("max_fact_bytes"), 64 * 1024 * 1024, "4096", 4096, "big"
    ),
    Case(
        env.OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS, _option("shutdown_timeout_millis"), 30_000, "50", 50, "0"
    ),
    Case(
        env.OTEL_SHAPECHECK_ANSWER_TOOLS,
        _option("answer_tools"),
        ("final_answer", "final_result", "final_result_*"),
        "submit, Report*",
        ("submit", "Report*"),
        "a,,b",
    ),
    Case(env.OTEL_SHAPECHECK_METRICS_TOOL_NAMES, _option("metrics_tool_names"), False, "True", True, "1"),
    Case(env.OTEL_SHAPECHECK_EVENTS_FORWARD, _event("forward"), "flagged", "ALL", "all", "everything"),
    Case(env.OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT, _event("include_content"), False, "TRUE", True, "yes"),
    Case(env.OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE, _event("max_queue_size"), 2048, "1024", 1024, "big"),
    Case(
        env.OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE, _event("max_export_batch_size"), 512, "16", 16, "0"
    ),
    Case(
        env.OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS,
        _event("schedule_delay_millis"),
        1000,
        "20",
        20,
        "-5",
    ),
    Case(
        env.OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS,
        _event("flush_timeout_millis"),
        10_000,
        "30",
        30,
        "1e3",
    ),
    Case(
        env.OTEL_SHAPECHECK_TOOL_CHOICE_SCORING,
        lambda: ToolChoiceCheck(HashingEmbedder()).scoring,
        "calibrated",
        "SEED",
        "seed",
        "best",
    ),
    Case(
        env.OTEL_SHAPECHECK_MARGIN_THRESHOLD,
        lambda: ToolChoiceCheck(HashingEmbedder()).margin_threshold,
        0.01,
        "0.02",
        0.02,
        "nan",
    ),
    Case(
        env.OTEL_SHAPECHECK_MAX_SLOT_CHARS,
        lambda: ToolChoiceCheck(HashingEmbedder()).max_slot_chars,
        2000,
        "100",
        100,
        "lots",
    ),
    Case(
        env.OTEL_SHAPECHECK_MAX_MENU_TOOLS,
        lambda: ToolChoiceCheck(HashingEmbedder()).max_menu_tools,
        100_000,
        "500",
        500,
        "all",
    ),
    Case(
        env.OTEL_SHAPECHECK_MAX_MENU_BYTES,
        lambda: ToolChoiceCheck(HashingEmbedder()).max_menu_bytes,
        32 * 1024 * 1024,
        "4096",
        4096,
        "-1",
    ),
    Case(
        env.OTEL_SHAPECHECK_EMBEDDER_THREADS,
        lambda: MiniLMEmbedder().intra_op_num_threads,
        1,
        "2",
        2,
        "two",
    ),
    Case(
        env.OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES,
        lambda: EmbeddingCache(HashingEmbedder()).stats().max_entries,
        1024,
        "7",
        7,
        "many",
    ),
    Case(env.OTEL_SHAPECHECK_FIGURES_MIN_DIGITS, lambda: FiguresCheck().min_digits, 4, "3", 3, "four"),
    Case(
        env.OTEL_SHAPECHECK_FIGURES_DERIVATIONS,
        lambda: FiguresCheck().derivations,
        "extended",
        "CLOSED",
        "closed",
        "open",
    ),
    Case(
        env.OTEL_SHAPECHECK_FIGURES_COINCIDENCE, lambda: FiguresCheck().coincidence, 0.1, "0.05", 0.05, "1.5"
    ),
    Case(env.OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE, gateway_queue_size, 16_384, "100", 100, "0"),
    Case(env.OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS, resolve_retry_after, 1.0, "2.5", 2.5, "-1"),
    Case(
        env.OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES, max_request_bytes, 4 * 1024 * 1024, "4096", 4096, "4MB"
    ),
    Case(
        env.OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES, gateway_queue_bytes, 64 * 1024 * 1024, "4096", 4096, "0"
    ),
    Case(
        env.OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES, receiving_bytes, 64 * 1024 * 1024, "8192", 8192, "-5"
    ),
    Case(env.OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES, spool_max_bytes, 1024**3, "65536", 65536, "1GB"),
    Case(env.OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS, spool_flush_seconds, 0.25, "2", 2.0, "-1"),
    Case(env.OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS, shutdown_timeout, 25.0, "3", 3.0, "soon"),
    Case(
        env.OTEL_SHAPECHECK_GATEWAY_TLS_HANDSHAKE_TIMEOUT_SECONDS,
        lambda: tls_handshake_timeout(request_timeout_seconds=15.0),
        5.0,
        "2",
        2.0,
        "-1",
    ),
]


def test_every_variable_has_a_case() -> None:
    """The table below covers every constant of otel_shapecheck.environment_variables."""
    defined = {value for name, value in vars(env).items() if name.startswith("OTEL_SHAPECHECK_")}
    assert defined == {case.variable for case in CASES}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.variable)
class TestVariable:
    def test_unset_reads_the_default(self, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the variable, the setting is its documented default."""
        monkeypatch.delenv(case.variable, raising=False)
        assert case.read() == case.default

    def test_good_value_applies(self, case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
        """A valid value is read (enums case-insensitively)."""
        monkeypatch.setenv(case.variable, case.good)
        assert case.read() == case.good_reads_as

    def test_bad_value_warns_once_and_the_default_applies(
        self, case: Case, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A bad value never raises: one warning names the variable and the value, the default applies."""
        monkeypatch.setenv(case.variable, case.bad)
        with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
            assert case.read() == case.default
            assert case.read() == case.default
        warnings = [record.getMessage() for record in caplog.records if case.variable in record.getMessage()]
        assert len(warnings) == 1
        assert repr(case.bad) in warnings[0]

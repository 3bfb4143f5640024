"""EvaluationEventEmitter over the in-memory log exporter: what becomes a record, and what it carries."""

from __future__ import annotations

import os
import select
import signal
import threading
from collections.abc import Sequence

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.trace import SpanContext

from otel_shapecheck import EvaluationEventEmitter
from otel_shapecheck import _attributes as attrs

from .verdicts import figures_verdict, tool_choice_verdict


def _exporter(memory: InMemoryLogRecordExporter, **kwargs: object) -> EvaluationEventEmitter:
    return EvaluationEventEmitter(memory, schedule_delay_millis=50, **kwargs)  # type: ignore[arg-type]


class TestRecords:
    def test_flagged_verdict_becomes_a_record_parented_to_the_span(self, span_context: SpanContext) -> None:
        """A flagged verdict is one gen_ai.evaluation.result record with the evaluated span's ids."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory)
        events.emit(span_context, [figures_verdict()])
        assert events.force_flush()
        events.shutdown()
        (record,) = [readable.log_record for readable in memory.get_finished_logs()]
        assert record.event_name == attrs.EVALUATION_EVENT
        assert record.trace_id == span_context.trace_id
        assert record.span_id == span_context.span_id
        assert record.severity_number is SeverityNumber.WARN
        attributes = dict(record.attributes or {})
        assert attributes[attrs.EVALUATION_NAME] == attrs.EVALUATION_FIGURES
        assert attributes[attrs.EVALUATION_SCORE_LABEL] == "unsupported"
        assert attributes[attrs.EVALUATION_SCORE_VALUE] == pytest.approx(2 / 3)
        assert attributes[attrs.EVALUATION_EXPLANATION].startswith("1 of 3 figures")
        assert attributes[attrs.RESPONSE_ID] == "chatcmpl-42"
        assert attributes[attrs.FLAGGED] is True
        assert tuple(attributes[attrs.FLAGS]) == (attrs.FLAG_FIGURES_UNSUPPORTED,)
        assert attributes[attrs.FIGURES_CHECKED] == 3

    def test_unflagged_verdicts_stay_in_process_by_default(self, span_context: SpanContext) -> None:
        """With forward="flagged" only flagged verdicts leave; the others are counted as skipped."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory)
        events.emit(span_context, [figures_verdict(flagged=False), tool_choice_verdict(flagged=True)])
        events.shutdown()
        names = [r.log_record.attributes[attrs.EVALUATION_NAME] for r in memory.get_finished_logs()]  # type: ignore[index]
        assert names == [attrs.EVALUATION_TOOL_CHOICE]
        stats = events.stats()
        assert (stats.received, stats.skipped, stats.emitted, stats.exported) == (2, 1, 1, 1)

    def test_forward_all_sends_every_verdict(self, span_context: SpanContext) -> None:
        """forward="all" emits unflagged verdicts too, at INFO severity."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory, forward="all")
        events.emit(span_context, [figures_verdict(flagged=False), tool_choice_verdict(flagged=True)])
        events.shutdown()
        severities = [r.log_record.severity_number for r in memory.get_finished_logs()]
        assert severities == [SeverityNumber.INFO, SeverityNumber.WARN]

    def test_response_id_absent_when_unknown(self, span_context: SpanContext) -> None:
        """gen_ai.response.id is only written when the verdict knows it."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory)
        events.emit(span_context, [tool_choice_verdict()])
        events.shutdown()
        (readable,) = memory.get_finished_logs()
        assert attrs.RESPONSE_ID not in (readable.log_record.attributes or {})


class TestContent:
    def test_answer_figures_are_withheld_by_default(self, span_context: SpanContext) -> None:
        """Values quoted from the answer or tool results do not leave the process without opt-in."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory)
        events.emit(span_context, [figures_verdict()])
        events.shutdown()
        (readable,) = memory.get_finished_logs()
        attributes = readable.log_record.attributes or {}
        assert not {attrs.FIGURES_UNSUPPORTED, attrs.FIGURES_DERIVATIONS} & set(attributes)
        assert all("4200" not in str(value) for value in attributes.values())
        assert not events.include_content

    def test_include_content_sends_them(self, span_context: SpanContext) -> None:
        """include_content=True keeps the unsupported values and derivations on the record."""
        memory = InMemoryLogRecordExporter()
        events = _exporter(memory, include_content=True)
        events.emit(span_context, [figures_verdict()])
        events.shutdown()
        (readable,) = memory.get_finished_logs()
        attributes = readable.log_record.attributes or {}
        assert tuple(attributes[attrs.FIGURES_UNSUPPORTED]) == ("4200 TB",)  # type: ignore[arg-type]
        assert attrs.FIGURES_DERIVATIONS in attributes

    def test_include_content_from_environment(
        self, monkeypatch: pytest.MonkeyPatch, span_context: SpanContext
    ) -> None:
        """OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT=true turns content on when no argument is given."""
        monkeypatch.setenv("OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT", "TRUE")
        events = _exporter(InMemoryLogRecordExporter())
        assert events.include_content
        events.shutdown()


class TestConfiguration:
    def test_needs_exactly_one_destination(self) -> None:
        """Neither or both of log_exporter and logger_provider is a ValueError."""
        with pytest.raises(ValueError, match="exactly one"):
            EvaluationEventEmitter()
        provider = LoggerProvider(shutdown_on_exit=False)
        with pytest.raises(ValueError, match="exactly one"):
            EvaluationEventEmitter(InMemoryLogRecordExporter(), logger_provider=provider)

    @pytest.mark.parametrize(
        ("kwargs", "name"),
        [
            ({"forward": "some"}, "forward"),
            ({"max_queue_size": 0}, "max_queue_size"),
            ({"max_export_batch_size": 10, "max_queue_size": 5}, "max_export_batch_size"),
            ({"flush_timeout_millis": -1}, "flush_timeout_millis"),
            ({"include_content": "yes"}, "include_content"),
        ],
    )
    def test_bad_arguments_name_the_setting(self, kwargs: dict[str, object], name: str) -> None:
        """A bad explicit value raises ValueError naming the setting."""
        with pytest.raises(ValueError, match=name):
            EvaluationEventEmitter(InMemoryLogRecordExporter(), **kwargs)  # type: ignore[arg-type]

    def test_forward_from_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OTEL_SHAPECHECK_EVENTS_FORWARD=all applies when no argument is given; an argument wins."""
        monkeypatch.setenv("OTEL_SHAPECHECK_EVENTS_FORWARD", "all")
        from_env = EvaluationEventEmitter(InMemoryLogRecordExporter())
        explicit = EvaluationEventEmitter(InMemoryLogRecordExporter(), forward="flagged")
        assert (from_env.forward, explicit.forward) == ("all", "flagged")
        from_env.shutdown()
        explicit.shutdown()


class TestLifecycle:
    def test_given_logger_provider_is_used_and_left_running(self, span_context: SpanContext) -> None:
        """Records go through the application's provider; shutting the exporter down does not stop it."""
        memory = InMemoryLogRecordExporter()
        provider = LoggerProvider(shutdown_on_exit=False)
        provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
        events = EvaluationEventEmitter(logger_provider=provider)
        events.emit(span_context, [figures_verdict()])
        events.shutdown()
        provider.get_logger("app").emit(body="still running")
        assert len(memory.get_finished_logs()) == 2
        assert events.logger_provider is provider
        provider.shutdown()

    def test_after_shutdown_records_are_counted_as_dropped(self, span_context: SpanContext) -> None:
        """Verdicts that arrive after shutdown are refused and counted, never raised."""
        events = _exporter(InMemoryLogRecordExporter())
        events.shutdown()
        events.emit(span_context, [figures_verdict(), tool_choice_verdict()])
        stats = events.stats()
        assert (stats.dropped_after_shutdown, stats.dropped, stats.emitted) == (2, 2, 0)
        assert events.force_flush() is False

    def test_emit_never_raises(self, span_context: SpanContext) -> None:
        """Garbage handed to emit is counted as an error instead of escaping."""
        events = _exporter(InMemoryLogRecordExporter())
        events.emit(span_context, None)  # type: ignore[arg-type]
        assert events.stats().errors == 1
        events.shutdown()


class _BlockingExporter(InMemoryLogRecordExporter):
    """Holds every export until released, so records stay counted as queued."""

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.release.wait(5)
        return super().export(batch)


def test_forked_child_starts_with_an_empty_queue(span_context: SpanContext) -> None:
    """A child forked while the parent's queue is full can still emit: its admission count starts at zero."""
    blocking = _BlockingExporter()
    events = EvaluationEventEmitter(
        blocking, max_queue_size=2, max_export_batch_size=1, schedule_delay_millis=10
    )
    for _ in range(6):
        events.emit(span_context, [figures_verdict()])
    assert events.stats().dropped_queue_full > 0
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report how many records the first emit admitted, then leave at once
        before = events.stats().emitted
        events.emit(span_context, [figures_verdict()])
        os.write(write_end, str(events.stats().emitted - before).encode())
        os._exit(0)
    os.close(write_end)
    ready, _, _ = select.select([read_end], [], [], 30)
    admitted = os.read(read_end, 16).decode() if ready else "no answer from the child"
    if not ready:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    os.close(read_end)
    blocking.release.set()
    events.shutdown()
    assert admitted == "1"


class _RaisingExporter(InMemoryLogRecordExporter):
    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        raise ConnectionError("backend went away")


def test_raising_exporter_is_counted_and_logged_once(
    span_context: SpanContext, caplog: pytest.LogCaptureFixture
) -> None:
    """An exporter that raises loses its batches into export_failed, with one log record for all of them."""
    events = _exporter(_RaisingExporter(), max_export_batch_size=1)
    for _ in range(3):
        events.emit(span_context, [figures_verdict()])
        assert events.force_flush()
    events.shutdown()
    assert events.stats().export_failed == 3
    assert sum("Evaluation event export raised" in record.getMessage() for record in caplog.records) == 1


def test_is_a_verdict_sink() -> None:
    """The exporter is what the span processor accepts as ``events``."""
    from otel_shapecheck.outputs._sinks import VerdictSink

    events = _exporter(InMemoryLogRecordExporter())
    assert isinstance(events, VerdictSink)
    events.shutdown()

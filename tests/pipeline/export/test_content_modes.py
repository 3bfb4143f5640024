"""What leaves the process through us in each content mode (docs/attributes.md, "What leaves the process").

One switch governs content: an enriched span quotes values (the answer's figures, tool results' numbers,
tool names the model invented) only when the instrumentation put message content on that span itself;
evaluation events quote them only with ``include_content=True``. Counts, scores, labels and flags always go.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import EvaluationEventEmitter, FiguresCheck, Shapecheck, ToolChoiceCheck
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.embedding._embedders import HashingEmbedder
from pipeline.agent import chat
from pipeline.export.agent_turn import UNSUPPORTED, instrumented, run_capacity_turn


class Run:
    """A capacity turn through the real instrumentation, with the checks attached; what came out."""

    def __init__(self, content: str, *, include_content: bool, forward: str = "flagged") -> None:
        self.spans_out = InMemorySpanExporter()
        self.records_out = InMemoryLogRecordExporter()
        self.provider = TracerProvider(shutdown_on_exit=False)
        self.logger_provider = LoggerProvider(shutdown_on_exit=False)
        events = EvaluationEventEmitter(
            self.records_out, include_content=include_content, forward=forward, schedule_delay_millis=10
        )
        self.shapecheck = Shapecheck(
            SimpleSpanProcessor(self.spans_out),
            events=events,
            checks=[ToolChoiceCheck(HashingEmbedder()), FiguresCheck()],
        )
        self.provider.add_span_processor(self.shapecheck.span_processor)
        self.logger_provider.add_log_record_processor(self.shapecheck.log_processor)
        self.content = content

    def capacity_turn(self) -> Run:
        with instrumented(self.provider, self.logger_provider, content=self.content):
            run_capacity_turn(self.provider)
        return self.finish()

    def finish(self) -> Run:
        assert self.shapecheck.force_flush()
        self.shapecheck.shutdown()
        return self

    def spans(self) -> list[ReadableSpan]:
        return list(self.spans_out.get_finished_spans())

    def answer(self) -> dict[str, Any]:
        (answer,) = [
            dict(s.attributes or {}) for s in self.spans() if attrs.FIGURES_CHECKED in (s.attributes or {})
        ]
        return answer

    def records(self) -> list[dict[str, Any]]:
        return [dict(r.log_record.attributes or {}) for r in self.records_out.get_finished_logs()]


def _quotes(attributes: dict[str, Any], text: str) -> bool:
    return any(text in str(value) for value in attributes.values())


@pytest.fixture(autouse=True)
def _no_event_variables(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT", "OTEL_SHAPECHECK_EVENTS_FORWARD"):
        monkeypatch.delenv(name, raising=False)
    yield


class TestContentOnSpans:
    def test_the_span_quotes_the_figures_the_events_do_not(self) -> None:
        """Content on the span: its enriched copy names the invented figure; events keep to counts."""
        run = Run("SPAN_ONLY", include_content=False).capacity_turn()
        answer = run.answer()
        assert answer[attrs.FIGURES_UNSUPPORTED] == (UNSUPPORTED,)
        assert answer[attrs.FIGURES_UNSUPPORTED_COUNT] == 1
        (record,) = run.records()
        assert record[attrs.FIGURES_UNSUPPORTED_COUNT] == 1
        assert not _quotes(record, UNSUPPORTED)

    def test_include_content_puts_the_figures_on_the_events(self) -> None:
        """include_content=True: the event quotes the figure as the span does."""
        run = Run("SPAN_ONLY", include_content=True).capacity_turn()
        (record,) = run.records()
        assert tuple(record[attrs.FIGURES_UNSUPPORTED]) == (UNSUPPORTED,)


class TestContentOnlyInLogEvents:
    def test_the_span_gains_counts_and_flags_not_values(self) -> None:
        """Content in log events only: the answer is judged, and neither span nor event quotes it."""
        run = Run("EVENT_ONLY", include_content=False).capacity_turn()
        answer = run.answer()
        assert answer[attrs.FLAGGED] is True
        assert answer[attrs.FIGURES_UNSUPPORTED_COUNT] == 1
        assert attrs.FIGURES_UNSUPPORTED not in answer and attrs.FIGURES_DERIVATIONS not in answer
        assert not any(_quotes(dict(span.attributes or {}), UNSUPPORTED) for span in run.spans())
        assert not any(_quotes(record, UNSUPPORTED) for record in run.records())

    def test_include_content_is_the_only_way_out(self) -> None:
        """With include_content=True the event (not the span) carries the values."""
        run = Run("EVENT_ONLY", include_content=True).capacity_turn()
        assert attrs.FIGURES_UNSUPPORTED not in run.answer()
        (record,) = run.records()
        assert tuple(record[attrs.FIGURES_UNSUPPORTED]) == (UNSUPPORTED,)


class TestNoContent:
    def test_nothing_is_quoted_anywhere(self) -> None:
        """Content capture off: no verdict quotes a figure, on spans or events."""
        run = Run("NO_CONTENT", include_content=True, forward="all").capacity_turn()
        assert not any(_quotes(dict(span.attributes or {}), UNSUPPORTED) for span in run.spans())
        assert not any(_quotes(record, UNSUPPORTED) for record in run.records())


class TestInventedToolNames:
    INVENTED = "rm_rf_everything_and_email_the_ceo"

    def _run(self, *, include_content: bool) -> Run:
        run = Run("SPAN_ONLY", include_content=include_content, forward="all")
        chat(TelemetryHandler(tracer_provider=run.provider), tool_call=self.INVENTED)
        return run.finish()

    def test_a_name_not_on_the_menu_stays_off_the_events(self) -> None:
        """A tool name the model wrote that the menu lacks is content: events carry it only with opt-in."""
        run = self._run(include_content=False)
        (chat_span,) = run.spans()
        assert (chat_span.attributes or {})[attrs.TOOL_CHOICE_CHOSEN] == (self.INVENTED,)  # content on span
        (record,) = run.records()
        assert record[attrs.TOOL_CHOICE_SKIPPED] == "chosen-not-offered"
        assert not _quotes(record, self.INVENTED)
        (with_content,) = self._run(include_content=True).records()
        assert tuple(with_content[attrs.TOOL_CHOICE_CHOSEN]) == (self.INVENTED,)

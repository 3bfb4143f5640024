"""The run report read back from enriched spans: the summary counts match the checks' own tallies."""

from __future__ import annotations

import io
from collections.abc import Sequence

import numpy as np
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.trace import SpanContext, TraceFlags
from rich.console import Console

from otel_shapecheck._attributes import EVALUATION_EVENT
from otel_shapecheck._model import AnalystAttempt, AnalystRun, LLMCall, OfferedTool, ToolCall
from otel_shapecheck.checks._base import Subject, Verdict, enrichment_attributes
from otel_shapecheck.checks.conformance._check import ConformanceCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.cli._report import json_report, summary, verdict_rows
from otel_shapecheck.cli._terminal import print_summary
from otel_shapecheck.embedding._embedders import FloatMatrix

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
MENU = (
    OfferedTool("get_fcns", "Read the FC name server database."),
    OfferedTool("influx_get_fcns", "Read the FC name server database history."),
    OfferedTool("send_email", "Send an email message."),
)


class _PlantedEmbedder:
    """The reference's M6 vectors: a text gets the vector of the first key it contains."""

    id = "planted"
    _planted = (("user:", (1.0, 0.1, 0.0)), ("fcns", (1.0, 0.12, 0.0)), ("email", (0.0, 0.0, 1.0)))

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        rows = [next((v for key, v in self._planted if key in text), (0.0, 1.0, 0.0)) for text in texts]
        matrix = np.asarray(rows, dtype=np.float32).reshape(len(texts), 3)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return matrix / np.where(norms == 0, 1, norms)


def _call(span_id: str, chosen: Sequence[str]) -> Subject:
    call = LLMCall(
        span_id=span_id,
        trace_id=TRACE_ID,
        offered_tools=MENU,
        tool_calls=tuple(ToolCall(name, f"call_{index}") for index, name in enumerate(chosen)),
        user_text="why did fc1/3 drop?",
        user_texts=("why did fc1/3 drop?",),
        answer_text=None if chosen else "Nothing to look up.",
    )
    return Subject(span_id=span_id, trace_id=TRACE_ID, llm_call=call)


def _enriched(subject: Subject, verdicts: Sequence[Verdict]) -> ReadableSpan:
    """The span the processor would forward: the verdicts' attributes and one event per verdict."""
    context = SpanContext(int(TRACE_ID, 16), int(subject.span_id, 16), False, TraceFlags(TraceFlags.SAMPLED))
    return ReadableSpan(
        name="chat",
        context=context,
        attributes=BoundedAttributes(attributes=enrichment_attributes(verdicts), immutable=True),
        events=tuple(
            Event(EVALUATION_EVENT, BoundedAttributes(attributes=v.event_attributes()), 1) for v in verdicts
        ),
    )


class TestSummary:
    def test_tool_choice_counts_equal_the_checks_own_summary(self) -> None:
        """M6 (a tie, no tool, a made-up tool): counts read from spans equal ToolChoiceCheck.summary()."""
        check = ToolChoiceCheck(_PlantedEmbedder())
        subjects = [
            _call("a" * 16, ["get_fcns"]),
            _call("b" * 16, []),
            _call("c" * 16, ["hallucinated_tool"]),
        ]
        verdicts = check.evaluate(subjects)
        spans = [_enriched(s, [v]) for s, v in zip(subjects, verdicts, strict=True) if v is not None]
        expected = check.summary()
        assert summary(spans)["tool_choice"] == {
            "llm_calls_with_tools": expected.llm_calls_with_tools,
            "choices": expected.choices,
            "scored": expected.scored,
            "flagged": expected.flagged,
            "narrow": expected.narrow,
            "proxy_disagreement": expected.proxy_disagreement,
            "skipped": expected.skipped,
        }
        assert summary(spans)["tool_choice"]["skipped"] == 2

    def test_conformance_counts(self) -> None:
        """A recovered collapse counts as collapsed and recovered; a clean analyst as neither."""
        runs = [
            AnalystRun("d" * 16, TRACE_ID, (_attempt("e", 1, 3, 0), _attempt("f", 2, 3, 3))),
            AnalystRun("1" * 16, TRACE_ID, (_attempt("2", 1, 2, 2),)),
        ]
        subjects = [Subject(span_id=run.span_id, trace_id=TRACE_ID, analyst_run=run) for run in runs]
        verdicts = ConformanceCheck().evaluate(subjects)
        spans = [_enriched(s, [v]) for s, v in zip(subjects, verdicts, strict=True) if v is not None]
        assert summary(spans)["conformance"] == {"analysts": 2, "collapsed": 1, "recovered": 1}
        assert summary(spans)["flagged"] == 1

    def test_spans_without_verdicts_are_counted_but_not_listed(self) -> None:
        """Un-evaluated spans count in ``spans`` only and are left out of the report's span list."""
        plain = ReadableSpan(name="http", context=SpanContext(1, 2, False))
        check = ToolChoiceCheck(_PlantedEmbedder())
        subject = _call("a" * 16, ["get_fcns"])
        (verdict,) = check.evaluate([subject])
        assert verdict is not None
        report = json_report([plain, _enriched(subject, [verdict])])
        assert report["summary"]["spans"] == 2 and report["summary"]["evaluated"] == 1
        assert [entry["span_id"] for entry in report["spans"]] == ["a" * 16]
        (row,) = verdict_rows([plain, _enriched(subject, [verdict])])
        assert (row.check, row.label, row.flagged) == ("tool_choice", verdict.label, True)


class TestClassified:
    def test_spans_are_counted_by_how_they_were_classified(self) -> None:
        """``summary.classified``: each span's classification label; ordinary spans are not counted."""
        spans = [
            ReadableSpan(
                name="ai.streamText.doStream",
                context=SpanContext(1, 2, False),
                attributes={"ai.operationId": "ai.streamText.doStream"},
            ),
            ReadableSpan(
                name="ai.toolCall",
                context=SpanContext(1, 3, False),
                attributes={"ai.operationId": "ai.toolCall"},
            ),
            ReadableSpan(
                name="chat gpt-4o-mini",
                context=SpanContext(1, 4, False),
                attributes={"gen_ai.input.messages": "[]"},
            ),
            ReadableSpan(name="http", context=SpanContext(1, 5, False)),
        ]
        assert summary(spans)["classified"] == {
            "llm_call:ai-sdk": 1,
            "llm_call:genai-content": 1,
            "tool_execution:ai-sdk": 1,
        }

    def test_the_text_report_says_when_nothing_was_recognised(self) -> None:
        """An export with no span of any convention read says so, instead of only counting zeros."""
        out = io.StringIO()
        print_summary(
            Console(file=out, width=200),
            summary([ReadableSpan(name="http", context=SpanContext(1, 5, False))]),
        )
        assert (
            "classified: no span is a model call, tool execution or agent in a convention read"
            in out.getvalue()
        )


def _attempt(span: str, number: int, emitted: int, accepted: int) -> AnalystAttempt:
    return AnalystAttempt(span * 16, TRACE_ID, "triage", number, emitted, accepted)

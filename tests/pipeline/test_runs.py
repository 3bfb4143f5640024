"""Run summaries: the outermost agent span of a trace waits for its evaluated spans and counts them."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_shapecheck import Subject, Verdict
from otel_shapecheck._attributes import FLAGGED, RUN_EVALUATED, RUN_INCOMPLETE
from otel_shapecheck.checks._base import Check
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor, check_spans
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

from .runs import CHOICE_OUTPUT, CONVENTIONS, GENAI, MODEL, Convention, genai_chat, run

RUN_PREFIX = "shapecheck.run."
EXPECTED_RUN = {
    "evaluated": 2,
    "duplicates": 0,
    "flagged": 1,
    "llm_calls_with_tools": 2,
    "choices": 1,
    "scored": 1,
    "narrow": 0,
    "proxy_disagreement": 0,
    "skipped": 1,
    "answers_checked": 1,
    "answers_skipped": 0,
    "figures_checked": 2,
    "figures_carried": 1,
    "figures_computed": 0,
    "figures_inferred": 0,
    "figures_unsupported": 1,
    "analysts": 0,
    "collapsed": 0,
    "recovered": 0,
    "incomplete": False,
    "llm_calls": 2,
    "coverage": "full",
}
"""The scripted run: a clear choice, and an answer with one carried and one invented figure."""


@contextmanager
def _processor(
    checks: Sequence[Check] | None = None, **options: object
) -> Iterator[tuple[TracerProvider, ShapecheckSpanProcessor, CollectingSpanProcessor]]:
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected,
        checks=build_checks("hashing") if checks is None else checks,
        options=ProcessorOptions(**options),  # type: ignore[arg-type]
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        yield provider, processor, collected
    finally:
        provider.shutdown()


def _summary(span: ReadableSpan) -> dict[str, object]:
    return {
        key.removeprefix(RUN_PREFIX): value
        for key, value in (span.attributes or {}).items()
        if key.startswith(RUN_PREFIX)
    }


def _runs(spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
    return [span for span in spans if RUN_EVALUATED in (span.attributes or {})]


def _ids(spans: Sequence[ReadableSpan]) -> list[int]:
    return [span.context.span_id for span in spans if span.context is not None]


class BlockingCheck:
    """Gives every LLM call a verdict, but only once ``release`` is set; ``entered`` says it is waiting."""

    name = "test.blocking"

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        self.entered.set()
        self.release.wait(30)
        return [
            Verdict(evaluation=self.name, attributes={}, label="seen", explanation="Seen.")
            if subject.llm_call is not None
            else None
            for subject in subjects
        ]


class TestRunSummary:
    @pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda convention: convention.name)
    def test_the_agent_span_carries_its_run(self, convention: Convention) -> None:
        """Each convention's agent span is forwarded once, after its spans, with the run's exact counts."""
        with _processor() as (provider, processor, collected):
            run(provider.get_tracer("app"), convention)
            assert processor.force_flush()
            spans = collected.spans
        (agent,) = _runs(spans)
        assert _summary(agent) == EXPECTED_RUN
        assert (agent.attributes or {})[FLAGGED] is True
        assert _ids(spans).count(agent.context.span_id) == 1
        assert spans[-1] is agent, "the run's agent span leaves after the spans it counts"
        counts = processor.counts()
        assert (counts.runs, counts.runs_incomplete, counts.held, counts.evaluated) == (1, 0, 2, 2)
        assert counts.held + counts.runs + counts.forwarded_untouched == counts.seen

    @pytest.mark.parametrize("convention", CONVENTIONS, ids=lambda convention: convention.name)
    def test_check_gives_the_same_run(self, convention: Convention) -> None:
        """The offline replay of the exported spans summarises the run exactly as the live processor did."""
        exported = CollectingSpanProcessor()
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(exported)
        run(provider.get_tracer("app"), convention)
        provider.shutdown()
        (agent,) = _runs(check_spans(exported.spans, build_checks("hashing")))
        assert _summary(agent) == EXPECTED_RUN

    def test_checking_an_enriched_export_again_gives_the_same_run(self) -> None:
        """Run attributes of an earlier check are dropped before the replay, not summed again."""
        with _processor() as (provider, processor, collected):
            run(provider.get_tracer("app"), GENAI)
            assert processor.force_flush()
            enriched = collected.spans
        (agent,) = _runs(check_spans(enriched, build_checks("hashing")))
        assert _summary(agent) == EXPECTED_RUN

    def test_only_the_outermost_agent_span_is_a_run(self) -> None:
        """A nested agent span is forwarded as it came; the outermost one counts the spans of both."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "planner"):
                run(tracer, GENAI, agent="storage")
            assert processor.force_flush()
            spans = {span.name: span for span in collected.spans}
        assert _summary(spans["invoke_agent planner"]) == EXPECTED_RUN
        assert not any(
            key.startswith("shapecheck.") for key in spans["invoke_agent storage"].attributes or {}
        )
        assert processor.counts().runs == 1

    def test_an_agent_span_with_nothing_evaluated_has_an_empty_complete_run(self) -> None:
        """No LLM call under the agent span: every count is zero, nothing flagged, nothing missing, and
        the coverage says no model call was seen."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "idle"), tracer.start_as_current_span("lookup"):
                pass
            assert processor.force_flush()
            (agent,) = _runs(collected.spans)
        summary = _summary(agent)
        assert summary["incomplete"] is False and (agent.attributes or {})[FLAGGED] is False
        assert summary.pop("coverage") == "none"
        assert {key: value for key, value in summary.items() if key != "incomplete"} == dict.fromkeys(
            (key for key in EXPECTED_RUN if key not in ("incomplete", "coverage")), 0
        )

    def test_calls_outside_any_agent_span_belong_to_no_run(self) -> None:
        """An LLM call with no agent span above it is evaluated as usual and counted in no run."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("app")
            GENAI.choose(tracer)
            with GENAI.agent(tracer, "later"):
                pass
            assert processor.force_flush()
            (agent,) = _runs(collected.spans)
        assert _summary(agent)["evaluated"] == 0
        assert processor.counts().evaluated == 1

    def test_a_duplicate_span_of_a_call_is_counted_once(self) -> None:
        """Two instrumentations of the choosing call: one evaluated span, one duplicate, in the run."""
        with _processor() as (provider, processor, collected):
            app, framework = provider.get_tracer("provider"), provider.get_tracer("framework")
            with GENAI.agent(app, "storage"):
                with framework.start_as_current_span(
                    "framework chat",
                    attributes=genai_chat("r-choose", CHOICE_OUTPUT),  # type: ignore[arg-type]
                ):
                    GENAI.choose(app)
                GENAI.execute(app)
                GENAI.answer(app)
            assert processor.force_flush()
            (agent,) = _runs(collected.spans)
        assert _summary(agent) == {**EXPECTED_RUN, "duplicates": 1}
        assert processor.counts().duplicates == 1


class TestWaiting:
    def test_the_agent_span_waits_while_its_spans_are_being_evaluated(self) -> None:
        """The worker is still judging the run's calls when the agent span ends: it is held until then."""
        check = BlockingCheck()
        with _processor(checks=[check], schedule_delay_millis=10) as (provider, processor, collected):
            run(provider.get_tracer("app"), GENAI)
            assert check.entered.wait(10)
            assert _runs(collected.spans) == [] and len(collected.spans) == 1  # only the tool span
            check.release.set()
            assert processor.force_flush()
            spans = collected.spans
        (agent,) = _runs(spans)
        assert _summary(agent)["evaluated"] == 2 and _summary(agent)["incomplete"] is False
        assert _ids(spans).count(agent.context.span_id) == 1

    def test_a_child_that_never_ends_costs_the_run_its_deadline_not_its_span(self) -> None:
        """A call waits for a parent that never ends: released at max_wait, it lets the agent span go,
        once, before any shutdown, and the run says it is incomplete."""
        with _processor(max_wait_millis=50, schedule_delay_millis=10) as (provider, processor, collected):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "storage"):
                step = tracer.start_span("step that never ends")
                with trace_context(step):
                    # The output is not captured: the call's tool calls would come from sibling spans, so
                    # it waits for its parent's end.
                    attributes = genai_chat("r-choose", CHOICE_OUTPUT)
                    del attributes["gen_ai.output.messages"]
                    with tracer.start_as_current_span(f"chat {MODEL}", attributes=attributes):  # type: ignore[arg-type]
                        pass
            agent = _wait_for_run(processor, collected)
            spans = collected.spans
            counts = processor.counts()
            step.end()
        assert agent is not None, "the agent span must leave without waiting for the child or a shutdown"
        assert _ids(spans).count(agent.context.span_id) == 1
        summary = _summary(agent)
        assert (summary["evaluated"], summary["skipped"], summary["incomplete"]) == (1, 1, True)
        # The call is released at its deadline; the agent span, ended just after it, may reach its own
        # in the same pass of the worker: either way it leaves once, after the call was counted.
        assert counts.released_by_deadline in (1, 2) and counts.runs_incomplete == 1

    def test_an_llm_call_that_never_ends_does_not_hold_the_run(self) -> None:
        """A call still open when the agent span ends is not known yet: the run is summarised without it."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("app")
            with GENAI.agent(tracer, "storage"):
                GENAI.choose(tracer)
                open_call = tracer.start_span(f"chat {MODEL}", attributes={"gen_ai.operation.name": "chat"})
            assert processor.force_flush()
            (agent,) = _runs(collected.spans)
            open_call.end()
        assert _summary(agent)["evaluated"] == 1

    def test_shutdown_forwards_a_waiting_run_once_after_its_spans(self) -> None:
        """At shutdown the waiting spans are evaluated first, then the run's agent span, exactly once."""
        collected = CollectingSpanProcessor()
        processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        tracer = provider.get_tracer("app")
        with GENAI.agent(tracer, "storage"):
            step = tracer.start_span("step that never ends")
            with trace_context(step):
                attributes = genai_chat("r-choose", CHOICE_OUTPUT)
                del attributes["gen_ai.output.messages"]
                with tracer.start_as_current_span(f"chat {MODEL}", attributes=attributes):  # type: ignore[arg-type]
                    pass
        assert processor.force_flush()
        assert _runs(collected.spans) == []  # the run waits for its call, which waits for its parent
        provider.shutdown()
        spans = collected.spans
        (agent,) = _runs(spans)
        assert spans[-1] is agent
        assert (_summary(agent)["evaluated"], _summary(agent)["incomplete"]) == (1, True)
        assert processor.counts().released_by_shutdown == 2
        step.end()


class TestWithoutStarts:
    def test_ended_spans_alone_give_the_same_run(self) -> None:
        """Seeing only ends (the gateway), the agent span claims the calls of its trace inside its time."""
        exported = CollectingSpanProcessor()
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(exported)
        run(provider.get_tracer("app"), GENAI)
        provider.shutdown()
        collected = CollectingSpanProcessor()
        processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
        for span in exported.spans:  # in end order, as a gateway receives them
            processor.on_end(span)
        assert processor.force_flush()
        processor.shutdown()
        (agent,) = _runs(collected.spans)
        assert _summary(agent) == EXPECTED_RUN

    @pytest.mark.parametrize("skew_ns", [900_000, 5_000_000])
    def test_a_call_stamped_past_its_agent_span_stays_in_its_run(self, skew_ns: int) -> None:
        """A call that arrived before its agent span but is stamped up to 1 ms past it (OpenTelemetry JS
        takes start times from a millisecond wall clock, ends from a finer one), or further when the
        wall clock moved meanwhile, ran inside it: the run claims it, by its window or as its child."""
        calls, skewed = _skewed_run(skew_ns)
        collected = CollectingSpanProcessor()
        processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
        for span in (*calls, skewed):
            processor.on_end(span)
        assert processor.force_flush()
        processor.shutdown()
        (summarised,) = _runs(collected.spans)
        assert _summary(summarised) == EXPECTED_RUN

    def test_sequential_runs_of_one_trace_keep_their_own_calls(self) -> None:
        """Two agent spans one after the other under one request: each counts only the calls inside it."""
        exported = CollectingSpanProcessor()
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(exported)
        tracer = provider.get_tracer("app")
        with tracer.start_as_current_span("POST /ask"):
            run(tracer, GENAI, agent="first")
            with GENAI.agent(tracer, "second"):
                GENAI.choose(tracer)
        provider.shutdown()
        collected = CollectingSpanProcessor()
        processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
        for span in exported.spans:
            processor.on_end(span)
        assert processor.force_flush()
        processor.shutdown()
        runs = {span.name: _summary(span) for span in _runs(collected.spans)}
        assert runs["invoke_agent first"] == EXPECTED_RUN
        assert (runs["invoke_agent second"]["evaluated"], runs["invoke_agent second"]["scored"]) == (1, 1)


def _skewed_run(skew_ns: int = 900_000) -> tuple[list[ReadableSpan], ReadableSpan]:
    """The scripted run's spans in end order, the agent span stamped ``skew_ns`` before its last call."""
    exported = CollectingSpanProcessor()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(exported)
    run(provider.get_tracer("app"), GENAI)
    provider.shutdown()
    *calls, agent = exported.spans
    skewed = ReadableSpan(
        name=agent.name,
        context=agent.context,
        parent=agent.parent,
        resource=agent.resource,
        attributes=agent.attributes,
        events=agent.events,
        links=agent.links,
        kind=agent.kind,
        status=agent.status,
        start_time=agent.start_time,
        end_time=max(span.end_time or 0 for span in calls) - skew_ns,
        instrumentation_scope=agent.instrumentation_scope,
    )
    return calls, skewed


@pytest.mark.parametrize(("skew_ns", "listed_first"), [(900_000, False), (5_000_000, True)])
def test_check_replays_a_skewed_call_before_its_agent_span_ends(skew_ns: int, listed_first: bool) -> None:
    """``check`` orders ends by time, but a call stamped within the clock slack after its parent, or
    listed before its parent in the export, ended first: its run counts it, as the gateway does."""
    calls, skewed = _skewed_run(skew_ns)
    spans = [*calls, skewed] if listed_first else [skewed, *calls]
    (summarised,) = _runs(check_spans(spans, build_checks("hashing")))
    assert _summary(summarised) == EXPECTED_RUN


def _wait_for_run(
    processor: ShapecheckSpanProcessor, collected: CollectingSpanProcessor
) -> ReadableSpan | None:
    """The run's agent span once it is forwarded (flushing meanwhile); ``None`` if it never is in 10 s."""
    give_up = time.monotonic() + 10
    while time.monotonic() < give_up:
        processor.force_flush()
        runs = _runs(collected.spans)
        if runs:
            return runs[0]
        time.sleep(0.02)
    return None


@contextmanager
def trace_context(span: object) -> Iterator[None]:
    """Make ``span`` the current span for the block (without ending it)."""
    from opentelemetry import context, trace

    token = context.attach(trace.set_span_in_context(span))  # type: ignore[arg-type]
    try:
        yield
    finally:
        context.detach(token)


def test_run_incomplete_is_a_contract_name() -> None:
    """The incomplete flag is written under its public name."""
    assert RUN_INCOMPLETE == RUN_PREFIX + "incomplete"

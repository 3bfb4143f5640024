"""An answer whose trace lost tool results to a bound is not flagged for a figure the lost ones may hold;
a call whose tool calls are read off its trace's executions is not judged on part of them.

Each bound that lets go of facts is driven for real: a result refused past ``max_facts_per_trace``, a
trace forgotten past ``max_finished_traces`` before a late answer ends under it, and a trace pushed out
past ``max_traces`` while its answer waits for the worker. The figures check then says
``skipped = results-lost`` instead of calling the figure unsupported, and the run reads as partial;
an answer whose figures the kept results support stays ``grounded``. A call whose output did not name
its tool calls, when an execution after it was refused, is ``tool_choice.skipped = incomplete`` rather
than scored on the executions that were kept. A result the SDK's attribute length limit cut is read up
to the cut, and the verdict says its basis was cut.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import (
    FiguresCheck,
    HashingEmbedder,
    ShapecheckSpanProcessor,
    Subject,
    ToolChoiceCheck,
    Verdict,
)
from otel_shapecheck._attributes import (
    FIGURES_CARRIED,
    FIGURES_SKIPPED,
    FIGURES_TRUNCATED,
    FIGURES_UNSUPPORTED_COUNT,
    FLAGGED,
    RUN_COVERAGE,
    TOOL_CHOICE_CHOSEN,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.readers._classify import OPERATION_NAME

from .agent import ANSWER, CountingProcessor, chat, execute_tool, tool_turn


def _pipeline(
    *checks: object, span_limits: SpanLimits | None = None, **options: int
) -> tuple[ShapecheckSpanProcessor, TracerProvider, TelemetryHandler, CountingProcessor]:
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=list(checks) or [FiguresCheck()],  # type: ignore[arg-type]
        options=ProcessorOptions(**options),
    )
    provider = TracerProvider(shutdown_on_exit=False, span_limits=span_limits)
    provider.add_span_processor(processor)
    return processor, provider, TelemetryHandler(tracer_provider=provider), downstream


def _answers(downstream: CountingProcessor, answer: str = ANSWER) -> list[ReadableSpan]:
    """The enriched copies of the chats that gave ``answer``, in the order they were forwarded."""
    return [
        span
        for span in downstream.spans
        if span.attributes is not None and answer in str(span.attributes.get("gen_ai.output.messages"))
    ]


def _many_results(handler: TelemetryHandler, tracer: trace.Tracer, answer: str, **options: int) -> None:
    with tracer.start_as_current_span("invoke_agent capacity", attributes={OPERATION_NAME: "invoke_agent"}):
        chat(handler, tool_call="get_capacity")  # the call that chose the tools: the run's choice is read
        for pool in range(10):
            execute_tool(handler, result={"pool": pool, "usable_tb": 1000 + 111 * pool})
        chat(handler, answer=answer)


def test_a_figure_from_a_result_refused_past_max_facts_per_trace_is_not_flagged() -> None:
    processor, provider, handler, downstream = _pipeline(max_facts_per_trace=4)
    tracer = provider.get_tracer("tests.lost")
    _many_results(handler, tracer, "Pool 9 has 1999 TB usable.")  # the last pool's result was refused
    _many_results(handler, tracer, "Pool 0 has 1000 TB usable.")  # the first pool's was kept
    assert processor.force_flush()
    assert processor.counts().facts_dropped >= 12
    (refused,) = _answers(downstream, "1999 TB")
    assert refused.attributes is not None
    assert refused.attributes[FIGURES_SKIPPED] == "results-lost"
    assert refused.attributes[FLAGGED] is False
    (kept,) = _answers(downstream, "1000 TB")
    assert kept.attributes is not None and kept.attributes[FIGURES_CARRIED] == 1  # what was kept supports it
    coverage = [(span.attributes or {}).get(RUN_COVERAGE) for span in downstream.spans]
    # The first run's answer could not be judged; the second's was, whole, on what was kept.
    assert [value for value in coverage if value is not None] == ["partial", "full"]
    provider.shutdown()


def test_the_same_answers_with_every_result_kept_are_judged() -> None:
    """The control: with room for every result, the figure is carried, and an invented one flagged."""
    processor, provider, handler, downstream = _pipeline()
    tracer = provider.get_tracer("tests.lost")
    _many_results(handler, tracer, "Pool 9 has 1999 TB usable.")
    _many_results(handler, tracer, "Pool 9 has 7342 TB usable.")
    assert processor.force_flush()
    assert processor.counts().facts_dropped == 0
    (carried,) = _answers(downstream, "1999 TB")
    assert carried.attributes is not None and carried.attributes[FIGURES_CARRIED] == 1
    (invented,) = _answers(downstream, "7342 TB")
    assert invented.attributes is not None and invented.attributes[FLAGGED] is True
    provider.shutdown()


def _late_answer(handler: TelemetryHandler, tracer: trace.Tracer, others: int) -> None:
    """A tool runs under a root that then ends; ``others`` traces finish; an answer ends under the root."""
    root = tracer.start_span("POST /ask", context=Context())
    inside = trace.set_span_in_context(root)
    execute_tool(handler, context=inside)
    root.end()
    for _ in range(others):
        with tracer.start_as_current_span("GET /other", context=Context()):
            tool_turn(handler, tracer)
    chat(handler, answer="Lyon: 1200 TB free of the cluster.", context=inside)


def test_a_late_answer_past_max_finished_traces_is_not_flagged_for_the_forgotten_result() -> None:
    processor, provider, handler, downstream = _pipeline(max_finished_traces=3)
    _late_answer(handler, provider.get_tracer("tests.lost"), others=4)
    assert processor.force_flush()
    (late,) = _answers(downstream, "1200 TB free")
    assert late.attributes is not None
    assert late.attributes[FIGURES_SKIPPED] == "results-lost"
    assert late.attributes[FLAGGED] is False
    provider.shutdown()


def test_a_late_answer_within_max_finished_traces_finds_its_result() -> None:
    processor, provider, handler, downstream = _pipeline(max_finished_traces=3)
    _late_answer(handler, provider.get_tracer("tests.lost"), others=2)
    assert processor.force_flush()
    (late,) = _answers(downstream, "1200 TB free")
    assert late.attributes is not None and late.attributes[FIGURES_CARRIED] == 1
    provider.shutdown()


class _HeldUp:
    """The figures check behind a gate its first batch waits at, so the ledger fills meanwhile."""

    name = FiguresCheck.name

    def __init__(self) -> None:
        self._check = FiguresCheck()
        self.entered = threading.Event()
        self.gate = threading.Event()

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        if not self.entered.is_set():
            self.entered.set()
            self.gate.wait(30)
        return self._check.evaluate(subjects)


def test_an_answer_whose_trace_was_pushed_out_past_max_traces_while_it_waited_is_not_flagged() -> None:
    check = _HeldUp()
    processor, provider, handler, downstream = _pipeline(check, max_traces=2)
    tracer = provider.get_tracer("tests.lost")
    try:
        with tracer.start_as_current_span("invoke_agent first", context=Context()):
            chat(handler, answer="Nothing to report.")
        assert check.entered.wait(10)  # the worker is inside its first batch
        with tracer.start_as_current_span("invoke_agent lyon", context=Context()):
            execute_tool(handler)
            chat(handler, answer=ANSWER)
        for _ in range(3):  # three more traces push the Lyon trace's facts out while its answer waits
            with tracer.start_as_current_span("GET /other", context=Context()):
                tool_turn(handler, tracer)
    finally:
        check.gate.set()
    assert processor.force_flush()
    assert processor.counts().facts_dropped >= 1
    lyon = _answers(downstream)[0]  # the Lyon answer, forwarded before the other traces' answers
    assert lyon.context is not None and lyon.attributes is not None
    assert lyon.attributes[FIGURES_SKIPPED] == "results-lost"
    assert lyon.attributes[FLAGGED] is False
    provider.shutdown()


def _calls_two_tools(max_facts_per_trace: int) -> ReadableSpan:
    """A chat whose output is not captured runs two tools under its agent span; its enriched copy."""
    processor, provider, handler, downstream = _pipeline(
        ToolChoiceCheck(embedder=HashingEmbedder()), max_facts_per_trace=max_facts_per_trace
    )
    tracer = provider.get_tracer("tests.lost")
    with tracer.start_as_current_span("invoke_agent storage", attributes={OPERATION_NAME: "invoke_agent"}):
        chat(handler, names_output=False)
        execute_tool(handler, "get_capacity")
        execute_tool(handler, "get_weather")  # refused when the chat and one execution fill the trace
    assert processor.force_flush()
    (copy,) = [span for span in downstream.spans if span.name.startswith("chat")]
    provider.shutdown()
    return copy


def test_a_call_whose_tool_calls_come_from_executions_is_not_scored_on_part_of_them() -> None:
    refused = _calls_two_tools(max_facts_per_trace=2)
    assert refused.attributes is not None
    assert refused.attributes[TOOL_CHOICE_SKIPPED] == "incomplete"
    kept = _calls_two_tools(max_facts_per_trace=64)  # the control: both executions kept, both chosen
    assert kept.attributes is not None
    assert tuple(kept.attributes[TOOL_CHOICE_CHOSEN]) == ("get_capacity", "get_weather")  # type: ignore[arg-type]
    assert TOOL_CHOICE_SKIPPED not in kept.attributes


def test_a_result_cut_by_the_sdks_attribute_length_limit_says_the_basis_is_cut() -> None:
    """The SDK cuts the result's JSON at ``max_span_attribute_length``: the answer's figure past the cut
    is unsupported on what is left, and the verdict says the basis was cut (it can only flag more)."""
    processor, provider, handler, downstream = _pipeline(
        span_limits=SpanLimits(max_span_attribute_length=200)
    )
    tracer = provider.get_tracer("tests.lost")
    _many_results_in_one(handler, tracer, "Pool 9 has 1999 TB usable.")
    assert processor.force_flush()
    (answer,) = _answers(downstream, "1999 TB")
    assert answer.attributes is not None
    assert (answer.attributes[FIGURES_UNSUPPORTED_COUNT], answer.attributes[FIGURES_TRUNCATED]) == (1, True)
    provider.shutdown()


def _many_results_in_one(handler: TelemetryHandler, tracer: trace.Tracer, answer: str) -> None:
    with tracer.start_as_current_span("invoke_agent capacity", attributes={OPERATION_NAME: "invoke_agent"}):
        pools = [{"pool": pool, "usable_tb": 1000 + 111 * pool} for pool in range(10)]
        execute_tool(handler, result={"pools": pools})
        chat(handler, answer=answer)

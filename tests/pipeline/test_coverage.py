"""How much of a run was read: ``shapecheck.run.llm_calls`` and ``shapecheck.run.coverage`` on its agent span.

A run whose framework wrote no model-call span we can read carries all-zero counts; without coverage a
dashboard reads it as a clean run. Spans go through a real SDK ``TracerProvider`` into the real
``ShapecheckSpanProcessor``, and the same spans through ``check_spans``.
"""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_shapecheck._attributes import (
    COVERAGE_FULL,
    COVERAGE_NONE,
    COVERAGE_PARTIAL,
    FLAGGED,
    RUN_COVERAGE,
    RUN_DUPLICATES,
    RUN_LLM_CALLS,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor, check_spans
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

from .runs import GENAI, OPENINFERENCE, TRACELOOP, run

MENU = json.dumps([{"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"}])
QUESTION = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "How much storage in Lyon?"}]}])


def _both_ways(write: object) -> list[list[ReadableSpan]]:
    """The spans ``write(provider)`` produces, enriched by the live processor and by ``check``."""
    collected, exported = CollectingSpanProcessor(), CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(exported)
    write(provider)  # type: ignore[operator]
    provider.shutdown()
    return [collected.spans, check_spans(exported.spans, build_checks("hashing"))]


def _run(spans: list[ReadableSpan]) -> dict[str, object]:
    (run_span,) = [span for span in spans if RUN_LLM_CALLS in (span.attributes or {})]
    return dict(run_span.attributes or {})


def test_a_run_without_a_model_call_says_coverage_none() -> None:
    """An agent span over chains and a tool (Python reprs, no model span): 0 calls seen, coverage none."""

    def write(provider: TracerProvider) -> None:
        tracer = provider.get_tracer("framework")
        with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
            chain = {"openinference.span.kind": "CHAIN", "input.value": "Message(role='user', ...)"}
            tracer.start_span("Chain.run", attributes=chain).end()
            tool = {"openinference.span.kind": "TOOL", "tool.name": "get_capacity", "output.value": "1200"}
            tracer.start_span("get_capacity", attributes=tool).end()

    for spans in _both_ways(write):
        run = _run(spans)
        assert (run[RUN_LLM_CALLS], run[RUN_COVERAGE], run[FLAGGED]) == (0, COVERAGE_NONE, False)


def test_a_run_read_whole_says_full_in_every_convention() -> None:
    """The scripted run (a choice and an answer), written in each convention: two calls, coverage full."""
    for convention in (GENAI, OPENINFERENCE, TRACELOOP):
        for spans in _both_ways(lambda provider, c=convention: run(provider.get_tracer("app"), c)):
            run_attributes = _run(spans)
            assert (run_attributes[RUN_LLM_CALLS], run_attributes[RUN_COVERAGE]) == (2, COVERAGE_FULL)


def test_a_second_span_of_one_call_is_not_a_second_call() -> None:
    """Two instrumentations of one call: one call seen, one duplicate."""

    def write(provider: TracerProvider) -> None:
        outer, inner = provider.get_tracer("framework"), provider.get_tracer("provider")
        output = json.dumps(
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}]
        )
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.tool.definitions": MENU,
            "gen_ai.input.messages": QUESTION,
            "gen_ai.output.messages": output,
        }
        with (
            outer.start_as_current_span(
                "invoke_agent ops", attributes={"gen_ai.operation.name": "invoke_agent"}
            ),
            outer.start_as_current_span("framework chat", attributes=attributes),
        ):
            inner.start_span("provider chat", attributes=attributes).end()

    for spans in _both_ways(write):
        run = _run(spans)
        assert (run[RUN_LLM_CALLS], run[RUN_DUPLICATES], run[RUN_COVERAGE]) == (1, 1, COVERAGE_FULL)


def test_a_call_without_output_or_content_makes_the_run_partial() -> None:
    """One call read whole, one whose output (or whole content) was not captured: partial."""
    for missing in ({"gen_ai.tool.definitions": MENU, "gen_ai.input.messages": QUESTION}, {}):

        def write(provider: TracerProvider, missing: dict[str, str] = missing) -> None:
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span(
                "invoke_agent ops", attributes={"gen_ai.operation.name": "invoke_agent"}
            ):
                answer = json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Hello."}]}])
                read = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": QUESTION,
                    "gen_ai.output.messages": answer,
                }
                tracer.start_span("chat", attributes=read).end()
                tracer.start_span("chat", attributes={"gen_ai.operation.name": "chat", **missing}).end()

        for spans in _both_ways(write):
            run = _run(spans)
            assert (run[RUN_LLM_CALLS], run[RUN_COVERAGE]) == (2, COVERAGE_PARTIAL), missing


def test_the_skip_reasons_for_missing_content_are_the_checks_own() -> None:
    """The run summary names the checks' skip values without importing the checks (numpy): pinned here."""
    from otel_shapecheck._attributes import FIGURES_SKIPPED, TOOL_CHOICE_SKIPPED
    from otel_shapecheck.checks.figures import _check as figures
    from otel_shapecheck.checks.tool_choice import _labels as tool_choice
    from otel_shapecheck.pipeline._runs import _SKIPS_FOR_MISSING

    assert {
        (TOOL_CHOICE_SKIPPED, tool_choice.SKIP_NO_MENU),
        (TOOL_CHOICE_SKIPPED, tool_choice.SKIP_NO_CONTEXT),
        (TOOL_CHOICE_SKIPPED, tool_choice.SKIP_NO_OUTPUT),
        (TOOL_CHOICE_SKIPPED, tool_choice.SKIP_INCOMPLETE),
        (FIGURES_SKIPPED, figures.SKIP_NO_CONTENT),
        (FIGURES_SKIPPED, figures.SKIP_NO_RESULTS),
        (FIGURES_SKIPPED, figures.SKIP_RESULTS_LOST),
    } == _SKIPS_FOR_MISSING


def test_tools_that_ran_when_no_call_was_read_choosing_one_make_the_run_partial() -> None:
    """A framework that writes the model's tool calls as text (a Python repr) leaves every call read as a
    reply: the tools ran, no choice was read, and the run must not read as clean. The control: the same
    run whose first call names its tool call reads full. Live and through ``check`` (no span starts, so
    the execution is found by the agent span's time window)."""
    for names_the_call in (False, True):

        def write(provider: TracerProvider, names_the_call: bool = names_the_call) -> None:
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span(
                "invoke_agent ops", attributes={"gen_ai.operation.name": "invoke_agent"}
            ):
                part = (
                    {"type": "tool_call", "id": "c1", "name": "get_capacity", "arguments": {"site": "Lyon"}}
                    if names_the_call
                    else {"type": "text", "content": "ResponseFunctionToolCall(name='get_capacity', ...)"}
                )
                choice = {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": QUESTION,
                    "gen_ai.tool.definitions": MENU,
                    "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [part]}]),
                }
                tracer.start_span("chat", attributes=choice).end()
                execution = {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "get_capacity",
                    "gen_ai.tool.call.result": '{"usable_tb": 1200}',
                }
                tracer.start_span("execute_tool get_capacity", attributes=execution).end()
                answer = json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "1200 TB."}]}]
                )
                final = {"gen_ai.operation.name": "chat", "gen_ai.input.messages": QUESTION}
                tracer.start_span("chat", attributes={**final, "gen_ai.output.messages": answer}).end()

        expected = COVERAGE_FULL if names_the_call else COVERAGE_PARTIAL
        for spans in _both_ways(write):
            run = _run(spans)
            assert (run[RUN_LLM_CALLS], run[RUN_COVERAGE]) == (2, expected), names_the_call

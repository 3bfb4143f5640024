"""The processor on framework telemetry shapes: ancestor menus, duplicate spans of one call, skipped figures.

Spans are written by hand through a real SDK ``TracerProvider`` here, each test isolating one rule; the
framework matrix (``tests/frameworks``) runs the same rules on real frameworks' telemetry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

from otel_shapecheck._attributes import (
    DUPLICATE_OF,
    FIGURES_SKIPPED,
    FIGURES_UNSUPPORTED,
    TOOL_CHOICE_MENU_SOURCE,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor, check_spans
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor, internals

MENU = json.dumps(
    [
        {"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"},
        {"name": "get_weather", "description": "Get the current weather for a city"},
    ]
)
QUESTION = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "How much storage in Lyon?"}]}])
RESULT = json.dumps({"cluster": "lyon", "usable_tb": 1200})


def _call_output(name: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": name}]}])


def _answer(text: str) -> str:
    return json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": text}]}])


def _inputs_with_result() -> str:
    return json.dumps(
        [
            {"role": "user", "parts": [{"type": "text", "content": "How much storage in Lyon?"}]},
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": RESULT}]},
        ]
    )


@contextmanager
def _processor(
    **options: object,
) -> Iterator[tuple[TracerProvider, ShapecheckSpanProcessor, CollectingSpanProcessor]]:
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(
        collected,
        checks=build_checks("hashing"),
        options=ProcessorOptions(**options),  # type: ignore[arg-type]
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        yield provider, processor, collected
    finally:
        provider.shutdown()


def _by_name(spans: list[ReadableSpan]) -> dict[str, dict[str, object]]:
    return {span.name: dict(span.attributes or {}) for span in spans}


class TestAncestorMenus:
    def test_a_call_without_a_menu_takes_its_agents_set_after_start(self) -> None:
        """The agent span's menu, set after it started, scores its LLM child; the verdict says ancestor."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("invoke_agent ops") as agent:
                agent.set_attribute("gen_ai.operation.name", "invoke_agent")
                agent.set_attribute("gen_ai.tool.definitions", MENU)
                with tracer.start_as_current_span("loop"), tracer.start_as_current_span("chat") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.input.messages", QUESTION)
                    chat.set_attribute("gen_ai.output.messages", _call_output("get_capacity"))
            processor.force_flush()
            attributes = _by_name(collected.spans)["chat"]
        assert attributes[TOOL_CHOICE_MENU_SOURCE] == "ancestor"
        assert TOOL_CHOICE_SKIPPED not in attributes
        assert processor.counts().ancestor_menus == 1

    def test_an_own_menu_wins_and_says_span(self) -> None:
        """A call that carries its own menu never looks at its ancestors."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("agent") as agent:
                agent.set_attribute("llm.tools.0.tool.json_schema", json.dumps({"name": "other_tool"}))
                with tracer.start_as_current_span("chat") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.tool.definitions", MENU)
                    chat.set_attribute("gen_ai.input.messages", QUESTION)
                    chat.set_attribute("gen_ai.output.messages", _call_output("get_capacity"))
            processor.force_flush()
        assert _by_name(collected.spans)["chat"][TOOL_CHOICE_MENU_SOURCE] == "span"
        assert processor.counts().ancestor_menus == 0

    def test_started_spans_are_bounded_and_counted(self) -> None:
        """Past max_pending_spans live spans, a started span is not kept, and that is counted."""
        with _processor(max_pending_spans=2) as (provider, processor, _):
            tracer = provider.get_tracer("framework")
            with (
                tracer.start_as_current_span("a"),
                tracer.start_as_current_span("b"),
                tracer.start_as_current_span("c"),
            ):
                pass
            assert processor.counts().started_untracked == 1
            assert not internals(processor).state.live, "every ended span is forgotten"


def _llm_span(tracer: object, name: str, output: str, *, response_id: str | None = None) -> None:
    with tracer.start_as_current_span(name) as span:  # type: ignore[attr-defined]
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.tool.definitions", MENU)
        span.set_attribute("gen_ai.input.messages", QUESTION)
        span.set_attribute("gen_ai.output.messages", output)
        if response_id:
            span.set_attribute("gen_ai.response.id", response_id)


class TestDuplicates:
    def test_two_instrumentations_of_one_call_are_evaluated_once(self) -> None:
        """Nested spans of two scopes with the same output: the inner (ended first) is evaluated."""
        with _processor() as (provider, processor, collected):
            outer, inner = provider.get_tracer("framework"), provider.get_tracer("provider")
            with outer.start_as_current_span("framework chat") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.input.messages", QUESTION)
                span.set_attribute("gen_ai.output.messages", _call_output("get_capacity"))
                _llm_span(inner, "provider chat", _call_output("get_capacity"))
            processor.force_flush()
            spans = {span.name: span for span in collected.spans}
        assert spans["framework chat"].attributes[DUPLICATE_OF] == format(
            spans["provider chat"].context.span_id, "016x"
        )
        assert "shapecheck.flagged" not in spans["framework chat"].attributes
        counts = processor.counts()
        assert (counts.evaluated, counts.duplicates) == (1, 1)

    def test_parallel_calls_of_one_instrumentation_are_never_merged(self) -> None:
        """Overlapping spans with the same output from one scope are two calls."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("run"):
                first = tracer.start_span("first")
                second = tracer.start_span("second")
                for span in (first, second):
                    span.set_attribute("gen_ai.operation.name", "chat")
                    span.set_attribute("gen_ai.input.messages", QUESTION)
                    span.set_attribute("gen_ai.output.messages", _call_output("get_capacity"))
                first.end()
                second.end()
            processor.force_flush()
        assert not any(DUPLICATE_OF in (span.attributes or {}) for span in collected.spans)
        assert processor.counts().evaluated == 2

    def test_sequential_or_different_calls_of_two_instrumentations_are_never_merged(self) -> None:
        """Two scopes: calls that do not overlap, or overlap with another output or response id, stay two."""
        with _processor() as (provider, processor, collected):
            a, b = provider.get_tracer("one"), provider.get_tracer("two")
            _llm_span(a, "earlier", _call_output("get_capacity"))
            _llm_span(b, "later", _call_output("get_capacity"))  # same output, no overlap
            with a.start_as_current_span("outer") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.output.messages", _call_output("get_weather"))
                span.set_attribute("gen_ai.response.id", "r-1")
                _llm_span(b, "inner other output", _call_output("get_capacity"))
                _llm_span(b, "inner other id", _call_output("get_weather"), response_id="r-2")
            processor.force_flush()
        assert not any(DUPLICATE_OF in (span.attributes or {}) for span in collected.spans)
        assert processor.counts().duplicates == 0

    def test_offline_check_marks_the_same_duplicate(self) -> None:
        """check over the exported spans finds the same duplicate as the live processor."""
        provider = TracerProvider(shutdown_on_exit=False)
        exported = CollectingSpanProcessor()
        provider.add_span_processor(exported)
        outer, inner = provider.get_tracer("framework"), provider.get_tracer("provider")
        with outer.start_as_current_span("framework chat") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.output.messages", _call_output("get_capacity"))
            _llm_span(inner, "provider chat", _call_output("get_capacity"), response_id="r-1")
            span.set_attribute("gen_ai.response.id", "r-1")
        provider.shutdown()
        checked = {span.name: span for span in check_spans(exported.spans, build_checks("hashing"))}
        assert DUPLICATE_OF in (checked["framework chat"].attributes or {})
        assert DUPLICATE_OF not in (checked["provider chat"].attributes or {})


class TestSilence:
    def test_an_unreadable_turn_end_is_skipped_no_content(self) -> None:
        """A call after tool results whose output was not captured gets figures.skipped = no-content."""
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("chat") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.input.messages", _inputs_with_result())
                span.set_attribute("gen_ai.response.finish_reasons", ("stop",))
            processor.force_flush()
        assert _by_name(collected.spans)["chat"][FIGURES_SKIPPED] == "no-content"

    def test_an_answer_whose_tool_results_were_not_captured_is_skipped_no_results(self) -> None:
        """The turn called a tool, its result is missing: no-results, not every figure unsupported."""
        inputs = json.dumps(
            [
                {"role": "user", "parts": [{"type": "text", "content": "How much storage in Lyon?"}]},
                {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]},
            ]
        )
        with _processor() as (provider, processor, collected):
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("chat") as span:
                span.set_attribute("gen_ai.operation.name", "chat")
                span.set_attribute("gen_ai.tool.definitions", MENU)
                span.set_attribute("gen_ai.input.messages", inputs)
                span.set_attribute("gen_ai.output.messages", _answer("Lyon has 1200 TB usable."))
            processor.force_flush()
        attributes = _by_name(collected.spans)["chat"]
        assert attributes[FIGURES_SKIPPED] == "no-results"
        assert FIGURES_UNSUPPORTED not in attributes
        assert attributes["shapecheck.flagged"] is False

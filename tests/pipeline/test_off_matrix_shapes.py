"""The processor (and ``check``) on telemetry shapes frameworks off the matrix write.

Each test writes one shape by hand through a real SDK ``TracerProvider`` into the real
``ShapecheckSpanProcessor`` and replays the same spans through ``check_spans``: a no-argument tool call
recorded by two instrumentations, a parent context marked remote that is a live span of this process, a
call whose output is on another span, an answer tool left on the menu, a tool turn without content.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext

from otel_shapecheck._attributes import (
    DUPLICATE_OF,
    FIGURES_SKIPPED,
    FIGURES_UNSUPPORTED,
    FLAGGED,
    RUN_DUPLICATES,
    RUN_EVALUATED,
    RUN_FLAGGED,
    RUN_SKIPPED,
    TOOL_CHOICE_OFFERED_COUNT,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor, check_spans
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

QUESTION = "What time is it in Lyon, and how much usable storage does the Lyon cluster have?"
RESULT = json.dumps({"cluster": "lyon", "usable_tb": 1200})

Writer = Callable[[TracerProvider], None]


@contextmanager
def _live() -> Iterator[tuple[TracerProvider, ShapecheckSpanProcessor, CollectingSpanProcessor]]:
    """A provider whose spans go through the real processor; its downstream collects them."""
    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        yield provider, processor, collected
    finally:
        provider.shutdown()


def _both_ways(write: Writer) -> tuple[list[ReadableSpan], list[ReadableSpan], ShapecheckSpanProcessor]:
    """The spans ``write`` produces, enriched live and by ``check`` (plus the live processor)."""
    exported = CollectingSpanProcessor()
    with _live() as (provider, processor, collected):
        provider.add_span_processor(exported)
        write(provider)
        processor.force_flush()
        live = collected.spans
    return live, check_spans(exported.spans, build_checks("hashing")), processor


def _named(spans: list[ReadableSpan], name: str) -> list[dict[str, object]]:
    return [dict(span.attributes or {}) for span in spans if span.name == name]


def _one(spans: list[ReadableSpan], name: str) -> dict[str, object]:
    (attributes,) = _named(spans, name)
    return attributes


# 1. One no-argument tool call recorded by OpenInference (arguments omitted, no response id) and by
#    OpenLLMetry (arguments "{}", a response id).


def _openinference_call(
    call_id: str | None = "call_time_1", arguments: str | None = None
) -> dict[str, object]:
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "gpt-4o-mini",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
        "llm.tools.0.tool.json_schema": json.dumps(
            {"type": "function", "function": {"name": "get_time", "description": "Get the local time"}}
        ),
        "llm.tools.1.tool.json_schema": json.dumps(
            {
                "type": "function",
                "function": {"name": "get_capacity", "description": "Get a cluster's storage"},
            }
        ),
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_time",
    }
    if call_id is not None:
        attributes["llm.output_messages.0.message.tool_calls.0.tool_call.id"] = call_id
    if arguments is not None:
        attributes["llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments"] = arguments
    return attributes


def _openllmetry_call(call_id: str | None = "call_time_1", arguments: str = "{}") -> dict[str, object]:
    attributes: dict[str, object] = {
        "llm.request.type": "chat",
        "gen_ai.system": "openai",
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION,
        "llm.request.functions.0.name": "get_time",
        "llm.request.functions.0.description": "Get the local time",
        "llm.request.functions.1.name": "get_capacity",
        "llm.request.functions.1.description": "Get a cluster's storage",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.name": "get_time",
        "gen_ai.completion.0.tool_calls.0.arguments": arguments,
    }
    if call_id is not None:
        attributes["gen_ai.completion.0.tool_calls.0.id"] = call_id
    return attributes


def _two_instrumentations(openinference: dict[str, object], openllmetry: dict[str, object]) -> Writer:
    """Parallel span trees of LangChain under both instrumentations: each its own chain, one model call."""

    def write(provider: TracerProvider) -> None:
        oi, ol = (
            provider.get_tracer("openinference.instrumentation.langchain"),
            provider.get_tracer("opentelemetry.instrumentation.langchain"),
        )
        with oi.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
            first = oi.start_span("ChatOpenAI", attributes=openinference)
            second = ol.start_span("ChatOpenAI.chat", attributes=openllmetry)
            second.end()
            first.end()

    return write


class TestNoArgumentCallOfTwoInstrumentations:
    def test_absent_arguments_and_empty_object_are_one_call(self) -> None:
        """OpenInference omits a no-argument call's arguments, OpenLLMetry writes {}: one call, once."""
        live, offline, processor = _both_ways(
            _two_instrumentations(_openinference_call(), _openllmetry_call())
        )
        for spans in (live, offline):
            marked = [span for span in spans if DUPLICATE_OF in (span.attributes or {})]
            assert len(marked) == 1, [span.name for span in marked]
            run = _one(spans, "agent")
            assert (run[RUN_EVALUATED], run[RUN_DUPLICATES]) == (1, 1)
        counts = processor.counts()
        assert (counts.evaluated, counts.duplicates) == (1, 1)

    def test_equal_tool_call_ids_are_one_call_whatever_the_arguments_text(self) -> None:
        """One instrumentation kept the arguments, the other dropped them: the shared id says one call."""
        write = _two_instrumentations(
            _openinference_call(arguments=None), _openllmetry_call(arguments='{"tz": "Europe/Paris"}')
        )
        for spans in _both_ways(write)[:2]:
            assert sum(DUPLICATE_OF in (span.attributes or {}) for span in spans) == 1

    def test_different_tool_call_ids_are_two_calls(self) -> None:
        """The same tool and arguments under two call ids are two calls, never merged."""
        write = _two_instrumentations(_openinference_call("call_a"), _openllmetry_call("call_b"))
        for spans in _both_ways(write)[:2]:
            assert not any(DUPLICATE_OF in (span.attributes or {}) for span in spans)


# 2. A span whose parent context carries the remote flag although the parent is a live span of this
#    process (logfire's streamed responses; a context re-attached after crossing a boundary).

GENAI_MENU = json.dumps(
    [
        {"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"},
        {"name": "get_time", "description": "Get the local time in a city"},
    ]
)


def _genai_answer(text: str) -> dict[str, object]:
    """A chat span answering ``text`` after the ``get_capacity`` result."""
    inputs = [
        {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": RESULT}]},
    ]
    output = [{"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.tool.definitions": GENAI_MENU,
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(output),
    }


def _answer_under_a_remote_flagged_parent(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("framework")
    with tracer.start_as_current_span("invoke_agent ops") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "ops")
        own = agent.get_span_context()
        remote = SpanContext(own.trace_id, own.span_id, is_remote=True, trace_flags=own.trace_flags)
        carried = trace.set_span_in_context(NonRecordingSpan(remote))
        token = otel_context.attach(carried)
        try:
            tracer.start_span(
                "chat", attributes=_genai_answer("Lyon has 1200 TB usable and 37.4 TB free.")
            ).end()
        finally:
            otel_context.detach(token)


class TestRemoteFlaggedParentOfThisProcess:
    def test_the_answers_flag_reaches_its_run(self) -> None:
        """The parent is marked remote but is the live agent span: the walk goes on, the run is flagged."""
        live, offline, _ = _both_ways(_answer_under_a_remote_flagged_parent)
        for spans in (live, offline):
            chat = _one(spans, "chat")
            assert chat[FLAGGED] is True and chat[FIGURES_UNSUPPORTED]
            run = _one(spans, "invoke_agent ops")
            assert (run[RUN_EVALUATED], run[RUN_FLAGGED], run[FLAGGED]) == (1, 1, True)


# 5. Answer tools on the menu of a call that chose a function tool.

ANSWER_TOOL_MENU = [
    {"name": "get_capacity", "description": "Get the usable storage capacity of a cluster"},
    {"name": "get_time", "description": "Get the local time in a city"},
    {"name": "get_weather", "description": "Get the current weather for a city"},
    {"name": "list_clusters", "description": "List the storage clusters of a region"},
    {"name": "final_result", "description": "The final response which ends this conversation"},
]


def _choosing_capacity(declared: bool) -> Writer:
    def write(provider: TracerProvider) -> None:
        attributes: dict[str, object] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.tool.definitions": json.dumps(ANSWER_TOOL_MENU),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
            ),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}]
            ),
        }
        if declared:  # pydantic-ai declares its output tools apart from its function tools
            attributes["model_request_parameters"] = json.dumps(
                {"function_tools": ANSWER_TOOL_MENU[:4], "output_tools": ANSWER_TOOL_MENU[4:]}
            )
        provider.get_tracer("framework").start_span("chat", attributes=attributes).end()

    return write


class TestAnswerToolsLeaveTheScoredMenu:
    def test_a_call_that_chose_a_function_tool_is_scored_without_the_answer_tool(self) -> None:
        """``final_result`` is no candidate: 4 tools offered, by the configured names or the declared ones."""
        for declared in (False, True):
            for spans in _both_ways(_choosing_capacity(declared))[:2]:
                chat = _one(spans, "chat")
                assert chat[TOOL_CHOICE_OFFERED_COUNT] == 4, declared
                assert TOOL_CHOICE_SKIPPED not in chat


# 6. A tool turn recorded without its content (OpenInference: role = tool, no content).


def _openinference_answer_after_a_tool_turn(*, with_call: bool) -> dict[str, object]:
    attributes = _openinference_call()
    for key in [key for key in attributes if key.startswith("llm.output_messages.")]:
        del attributes[key]
    index = 1
    if with_call:
        attributes["llm.input_messages.1.message.role"] = "assistant"
        attributes["llm.input_messages.1.message.tool_calls.0.tool_call.id"] = "c1"
        attributes["llm.input_messages.1.message.tool_calls.0.tool_call.function.name"] = "get_capacity"
        index = 2
    attributes[f"llm.input_messages.{index}.message.role"] = "tool"
    attributes[f"llm.input_messages.{index}.message.tool_call_id"] = "c1"
    attributes["llm.output_messages.0.message.role"] = "assistant"
    attributes["llm.output_messages.0.message.content"] = "Lyon has 1200 TB usable and 37.4 TB free."
    return attributes


class TestToolTurnWithoutContent:
    def test_the_answer_is_skipped_no_results_not_flagged(self) -> None:
        """The tool's payload was not recorded: its figures are not checked, whether or not the call is."""
        for with_call in (True, False):

            def write(provider: TracerProvider, with_call: bool = with_call) -> None:
                attributes = _openinference_answer_after_a_tool_turn(with_call=with_call)
                provider.get_tracer("openinference").start_span("ChatOpenAI", attributes=attributes).end()

            for spans in _both_ways(write)[:2]:
                chat = _one(spans, "ChatOpenAI")
                assert chat[FIGURES_SKIPPED] == "no-results", with_call
                assert FIGURES_UNSUPPORTED not in chat and chat[FLAGGED] is False

    def test_another_result_with_content_is_the_basis(self) -> None:
        """A tool execution span carries the result: the answer is checked against it (37.4 TB is not)."""

        def write(provider: TracerProvider) -> None:
            tracer = provider.get_tracer("openinference")
            with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
                tool = {
                    "openinference.span.kind": "TOOL",
                    "tool.name": "get_capacity",
                    "output.value": RESULT,
                }
                tracer.start_span("get_capacity", attributes=tool).end()
                attributes = _openinference_answer_after_a_tool_turn(with_call=True)
                tracer.start_span("ChatOpenAI", attributes=attributes).end()

        for spans in _both_ways(write)[:2]:
            chat = _one(spans, "ChatOpenAI")
            assert FIGURES_SKIPPED not in chat
            assert chat[FIGURES_UNSUPPORTED] == ("37.4 TB",)


# 3. A call whose output is not on its span: alone (capture off), or on a second span of the same
#    instrumentation (logfire writes a streamed response as a span of its own, after the request).

CHOICE_OUTPUT = json.dumps(
    [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}]
)


def _request(*, with_output: bool = False) -> dict[str, object]:
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.tool.definitions": GENAI_MENU,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        ),
        "request_data": json.dumps({"model": "gpt-4o-mini", "stream": True}),
    }
    if with_output:
        attributes["gen_ai.output.messages"] = CHOICE_OUTPUT
    return attributes


def _streamed(*, response: dict[str, object], remote_parent: bool = True) -> Writer:
    """An agent span; under it the request span, then the streamed response's span (a zero-length log
    span, under the agent span's context as carried across the stream: marked remote)."""

    def write(provider: TracerProvider) -> None:
        tracer = provider.get_tracer("logfire.openai", "4.0.0")
        with tracer.start_as_current_span("invoke_agent ops") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            tracer.start_span("Chat Completion with 'gpt-4o-mini'", attributes=_request()).end()
            tracer.start_span("tool call preamble").end()  # an ordinary span in between changes nothing
            own = agent.get_span_context()
            parent = SpanContext(
                own.trace_id, own.span_id, is_remote=remote_parent, trace_flags=own.trace_flags
            )
            carried = trace.set_span_in_context(NonRecordingSpan(parent))
            name = "streaming response from 'gpt-4o-mini' took 0.01s"
            tracer.start_span(name, context=carried, attributes=response).end()

    return write


class TestOutputOnAnotherSpan:
    def test_a_call_with_menu_and_input_but_no_output_is_skipped_no_output(self) -> None:
        """Capture of the output was off: not ``nothing-chosen`` (no answer was seen either), and counted."""

        def write(provider: TracerProvider) -> None:
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("invoke_agent ops") as agent:
                agent.set_attribute("gen_ai.operation.name", "invoke_agent")
                tracer.start_span("chat", attributes=_request()).end()

        for spans in _both_ways(write)[:2]:
            assert _one(spans, "chat")[TOOL_CHOICE_SKIPPED] == "no-output"
            run = _one(spans, "invoke_agent ops")
            assert (run[RUN_EVALUATED], run[RUN_SKIPPED]) == (1, 1)

    def test_a_request_and_its_streamed_response_are_one_call(self) -> None:
        """Request and response spans of one instrumentation: the response is scored, the request joins it."""
        response = {**_request(with_output=True), "logfire.span_type": "log"}
        for remote_parent in (True, False):
            live, offline, _ = _both_ways(_streamed(response=response, remote_parent=remote_parent))
            for spans in (live, offline):
                request = _one(spans, "Chat Completion with 'gpt-4o-mini'")
                (streamed,) = [span for span in spans if span.name.startswith("streaming response")]
                assert request[DUPLICATE_OF] == format(streamed.context.span_id, "016x")
                assert TOOL_CHOICE_SKIPPED not in (streamed.attributes or {})
                run = _one(spans, "invoke_agent ops")
                assert (run[RUN_EVALUATED], run[RUN_DUPLICATES], run[RUN_SKIPPED]) == (1, 1, 0)

    def test_a_response_span_with_the_output_only_takes_the_requests_menu_and_input(self) -> None:
        """The response span carries nothing but the output: scored with the request's menu and question."""
        response = {"gen_ai.operation.name": "chat", "gen_ai.output.messages": CHOICE_OUTPUT}
        for spans in _both_ways(_streamed(response=response))[:2]:
            (streamed,) = [span for span in spans if span.name.startswith("streaming response")]
            attributes = dict(streamed.attributes or {})
            assert TOOL_CHOICE_SKIPPED not in attributes
            assert attributes[TOOL_CHOICE_OFFERED_COUNT] == 2
            assert DUPLICATE_OF in _one(spans, "Chat Completion with 'gpt-4o-mini'")

    def test_a_response_span_nested_in_its_request_is_joined_too(self) -> None:
        """The response written as a child of the request span: still one call, the response scored."""

        def write(provider: TracerProvider) -> None:
            tracer = provider.get_tracer("streaming", "1.0")
            with tracer.start_as_current_span("invoke_agent ops") as agent:
                agent.set_attribute("gen_ai.operation.name", "invoke_agent")
                with tracer.start_as_current_span("request", attributes=_request()):
                    tracer.start_span("response", attributes=_request(with_output=True)).end()

        for spans in _both_ways(write)[:2]:
            (response,) = [span for span in spans if span.name == "response"]
            assert _one(spans, "request")[DUPLICATE_OF] == format(response.context.span_id, "016x")
            run = _one(spans, "invoke_agent ops")
            assert (run[RUN_EVALUATED], run[RUN_DUPLICATES], run[RUN_SKIPPED]) == (1, 1, 0)

    def test_sequential_calls_of_one_instrumentation_stay_two(self) -> None:
        """A call without output, then the turn's next call (after a tool result): two calls, not a pair."""

        def write(provider: TracerProvider) -> None:
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("invoke_agent ops") as agent:
                agent.set_attribute("gen_ai.operation.name", "invoke_agent")
                tracer.start_span("first", attributes=_request()).end()
                tracer.start_span("second", attributes=_genai_answer("Lyon has 1200 TB usable.")).end()

        for spans in _both_ways(write)[:2]:
            assert not any(DUPLICATE_OF in (span.attributes or {}) for span in spans)
            assert _one(spans, "first")[TOOL_CHOICE_SKIPPED] == "no-output"

    def test_a_call_whose_finish_reason_was_recorded_is_no_request_half_of_its_next_sibling(self) -> None:
        """Output capture off, but the call's finish reason recorded (the response is its own): the next
        call of the turn, with the same recorded input and an output, stays another call."""

        def write(provider: TracerProvider) -> None:
            tracer = provider.get_tracer("framework")
            with tracer.start_as_current_span("invoke_agent ops") as agent:
                agent.set_attribute("gen_ai.operation.name", "invoke_agent")
                chose = {**_request(), "gen_ai.response.finish_reasons": ("tool_calls",)}
                tracer.start_span("first", attributes=chose).end()
                tracer.start_span("second", attributes=_request(with_output=True)).end()

        for spans in _both_ways(write)[:2]:
            assert not any(DUPLICATE_OF in (span.attributes or {}) for span in spans)
            run = _one(spans, "invoke_agent ops")
            assert (run[RUN_EVALUATED], run[RUN_DUPLICATES]) == (2, 0)

"""When a held span is final: its own end, its parent's end, the deadline, the cap, or shutdown."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import InputMessage, TextPart

from otel_shapecheck import Shapecheck, ShapecheckSpanProcessor
from otel_shapecheck._attributes import ANALYST_ATTEMPT, ANALYST_ID, ROWS_ACCEPTED, ROWS_EMITTED
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent import TOOL_RESULT, CountingProcessor, RecordingCheck, chat, execute_tool, tool_turn


@pytest.fixture(name="check")
def _check() -> RecordingCheck:
    return RecordingCheck()


@pytest.fixture(name="make_processor")
def _make_processor(
    tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter, check: RecordingCheck
) -> Iterator[Callable[..., ShapecheckSpanProcessor]]:
    made: list[ShapecheckSpanProcessor] = []

    def make(**options: int) -> ShapecheckSpanProcessor:
        processor = ShapecheckSpanProcessor(
            SimpleSpanProcessor(span_exporter), checks=[check], options=ProcessorOptions(**options)
        )
        tracer_provider.add_span_processor(processor)
        made.append(processor)
        return processor

    yield make
    for processor in made:
        processor.shutdown()


def _chat_ids(exporter: InMemorySpanExporter) -> list[int]:
    return [span.context.span_id for span in exporter.get_finished_spans() if span.name.startswith("chat")]


def _wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_chat_naming_its_tool_calls_is_final_at_its_own_end(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """A chat span whose output names its tool call is evaluated while its parent is still open."""
    processor = make_processor()
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent storage"):
        chat(handler, tool_call="get_capacity")
        assert processor.force_flush()
        (chat_id,) = _chat_ids(span_exporter)
    subject = check.subject(chat_id)
    assert subject.llm_call is not None and subject.llm_call.chosen == ("get_capacity",)
    assert not subject.incomplete


def test_chat_with_tool_calls_only_in_sibling_spans_waits_for_its_parent(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """Without its output, a chat span is final when its parent ends, with the sibling executions joined."""
    processor = make_processor()
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent storage"):
        chat(handler, tool_call="get_capacity", names_output=False)
        execute_tool(handler)
        assert processor.force_flush()
        assert _chat_ids(span_exporter) == []
        assert processor.counts().held == 1
    assert processor.force_flush()
    (chat_id,) = _chat_ids(span_exporter)
    subject = check.subject(chat_id)
    assert subject.llm_call is not None and subject.llm_call.chosen == ("get_capacity",)
    assert not subject.incomplete


def test_parent_that_never_ends_releases_the_chat_at_the_deadline(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """Past ``max_wait`` the waiting chat is evaluated as incomplete and forwarded."""
    processor = make_processor(max_wait_millis=50, schedule_delay_millis=10)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    agent = tracer_provider.get_tracer("tests").start_span("invoke_agent never-ends")
    chat(handler, names_output=False, context=trace.set_span_in_context(agent))
    assert _wait_until(lambda: len(_chat_ids(span_exporter)) == 1)
    (chat_id,) = _chat_ids(span_exporter)
    assert check.subject(chat_id).incomplete
    assert processor.counts().released_by_deadline == 1


def test_past_the_cap_the_oldest_waiting_chat_is_released(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """With ``max_pending_spans`` chats waiting, one more releases the oldest, as incomplete."""
    processor = make_processor(max_pending_spans=2)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent storage"):
        for _ in range(3):
            chat(handler, names_output=False)
        assert processor.force_flush()
        (first,) = _chat_ids(span_exporter)
        assert check.subject(first).incomplete
        assert processor.counts().released_by_cap == 1
    assert processor.force_flush()
    assert len(_chat_ids(span_exporter)) == 3


def test_late_child_of_a_released_parent_passes_through(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """A chat that ends after its parent released its siblings is final at its own end."""
    processor = make_processor()
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    agent = tracer_provider.get_tracer("tests").start_span("invoke_agent storage")
    context = trace.set_span_in_context(agent)
    chat(handler, names_output=False, context=context)
    agent.end()
    chat(handler, names_output=False, context=context)
    assert processor.force_flush(2000)
    late = _chat_ids(span_exporter)[-1]
    assert len(_chat_ids(span_exporter)) == 2
    assert not check.subject(late).incomplete


def test_chat_under_a_remote_parent_is_final_at_its_end(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
) -> None:
    """A parent in another process never ends here, so the chat does not wait for it."""
    processor = make_processor()
    remote = SpanContext(0x1234, 0x5678, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    chat(
        TelemetryHandler(tracer_provider=tracer_provider),
        names_output=False,
        context=trace.set_span_in_context(NonRecordingSpan(remote)),
    )
    assert processor.force_flush()
    assert len(_chat_ids(span_exporter)) == 1


def test_answer_sees_the_tool_results_of_its_trace(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """The final answer's subject carries the results of the tool executions that ended before it."""
    processor = make_processor()
    tool_turn(TelemetryHandler(tracer_provider=tracer_provider), tracer_provider.get_tracer("tests"))
    assert processor.force_flush()
    request, answer = _chat_ids(span_exporter)
    assert check.subject(request).trace_tool_results == ()
    (result,) = check.subject(answer).trace_tool_results
    assert result.name == "get_capacity" and result.call_id == "call_1"
    assert "1200" in str(result.content) and str(TOOL_RESULT["usable_tb"]) in str(result.content)


def test_analyst_span_is_final_at_its_end_with_its_attempts(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """The parent of analyst-attempt spans is evaluated at its end, with every attempt in order."""
    processor = make_processor()
    tracer = tracer_provider.get_tracer("tests")
    with tracer.start_as_current_span("analyze triage") as run:
        for attempt, accepted in ((1, 0), (2, 2)):
            with tracer.start_as_current_span("attempt") as span:
                span.set_attributes(
                    {ANALYST_ID: "triage", ANALYST_ATTEMPT: attempt, ROWS_EMITTED: 2, ROWS_ACCEPTED: accepted}
                )
    assert processor.force_flush()
    analyst_run = check.subject(run.get_span_context().span_id).analyst_run
    assert analyst_run is not None
    assert [(attempt.attempt, attempt.accepted) for attempt in analyst_run.attempts] == [(1, 0), (2, 2)]


def test_ordinary_spans_reach_the_downstream_at_once_and_untouched(tracer_provider: TracerProvider) -> None:
    """A span with nothing to evaluate is handed on from ``on_end`` itself, as the same object."""
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[RecordingCheck()])
    tracer_provider.add_span_processor(processor)
    try:
        with tracer_provider.get_tracer("tests").start_as_current_span("GET /clusters") as span:
            span.set_attribute("http.route", "/clusters")
        (forwarded,) = downstream.spans
        assert forwarded.context == span.get_span_context()
        assert forwarded.attributes == {"http.route": "/clusters"}
        assert processor.counts().forwarded_untouched == 1
    finally:
        processor.shutdown()


def test_shutdown_evaluates_waiting_spans_as_incomplete(
    tracer_provider: TracerProvider, check: RecordingCheck
) -> None:
    """Waiting spans are evaluated as incomplete at shutdown, before the downstream shuts down."""
    downstream = CountingProcessor()
    processor = ShapecheckSpanProcessor(downstream, checks=[check])
    tracer_provider.add_span_processor(processor)
    agent = tracer_provider.get_tracer("tests").start_span("invoke_agent never-ends")
    chat(
        TelemetryHandler(tracer_provider=tracer_provider),
        names_output=False,
        context=trace.set_span_in_context(agent),
    )
    assert downstream.spans == []
    processor.shutdown()
    processor.shutdown()
    (span,) = downstream.spans
    assert check.subject(span.context.span_id).incomplete
    assert downstream.shut_down
    assert processor.counts().released_by_shutdown == 1


def test_content_from_log_events_is_merged_by_span_id(
    monkeypatch: pytest.MonkeyPatch, tracer_provider: TracerProvider, span_exporter: InMemorySpanExporter
) -> None:
    """With content only in log events, the chat is read from them and is final at its own end."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "EVENT_ONLY")
    check = RecordingCheck()
    shapecheck = Shapecheck(SimpleSpanProcessor(span_exporter), checks=[check])
    logger_provider = LoggerProvider(shutdown_on_exit=False)
    logger_provider.add_log_record_processor(shapecheck.log_processor)
    tracer_provider.add_span_processor(shapecheck.span_processor)
    handler = TelemetryHandler(tracer_provider=tracer_provider, logger_provider=logger_provider)
    try:
        with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent storage"):
            chat(handler, tool_call="get_capacity")
            assert shapecheck.force_flush()
            (chat_id,) = _chat_ids(span_exporter)
        (chat_span,) = [span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")]
        assert "gen_ai.output.messages" not in (chat_span.attributes or {})
        call = check.subject(chat_id).llm_call
        assert call is not None
        assert call.chosen == ("get_capacity",)
        assert call.offered_tools is not None and {tool.name for tool in call.offered_tools} == {
            "get_capacity",
            "get_weather",
        }
    finally:
        shapecheck.shutdown()
        logger_provider.shutdown()


def test_waiting_chat_gets_only_the_executions_before_its_next_sibling(
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """A sibling chat released earlier still bounds the executions the waiting chat is joined with."""
    processor = make_processor()
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    with tracer_provider.get_tracer("tests").start_as_current_span("invoke_agent storage"):
        chat(handler, tool_call="get_capacity", names_output=False)
        execute_tool(handler, "get_capacity")
        chat(handler, tool_call="get_weather")
        execute_tool(handler, "get_weather", result={"city": "Lyon", "celsius": 21})
        chat(handler, answer="It is 21 °C in Lyon.")
    assert processor.force_flush()
    chats = sorted(
        (span for span in span_exporter.get_finished_spans() if span.name.startswith("chat")),
        key=lambda span: span.start_time or 0,
    )
    first, second, _ = (span.context.span_id for span in chats if span.context is not None)
    waited = check.subject(first).llm_call
    assert waited is not None and waited.chosen == ("get_capacity",)
    named = check.subject(second).llm_call
    assert named is not None and named.chosen == ("get_weather",)


@pytest.mark.parametrize("parent_name", ["invoke_agent storage", "POST /chat"])
def test_chat_ending_after_its_parent_is_final_at_its_own_end(
    parent_name: str,
    tracer_provider: TracerProvider,
    span_exporter: InMemorySpanExporter,
    make_processor: Callable[..., ShapecheckSpanProcessor],
    check: RecordingCheck,
) -> None:
    """A chat whose parent (an agent span or a plain one) already ended does not wait ``max_wait``."""
    processor = make_processor(max_wait_millis=600_000)
    handler = TelemetryHandler(tracer_provider=tracer_provider)
    parent = tracer_provider.get_tracer("tests").start_span(parent_name)
    invocation = handler.inference(
        "openai", request_model="gpt-4o-mini", context=trace.set_span_in_context(parent)
    )
    invocation.input_messages = [InputMessage(role="user", parts=[TextPart(content="how full is lyon?")])]
    parent.end()
    invocation.stop()
    assert processor.force_flush()
    (chat_id,) = _chat_ids(span_exporter)
    assert not check.subject(chat_id).incomplete
    assert processor.counts().released_by_deadline == 0

"""A request/response pair is decided on what the trace shows ran between its spans, never on timing.

The shape is the soak's turn: an agent span; under it a chat span whose output was not captured (its
tool call only shows as the ``execute_tool`` span after it), the tool's execution, and the chat span
answering with the same user question. Those two chat spans are two calls: the first must never be
marked a duplicate of the second, whenever the worker evaluates it and whatever facts a bound dropped.
A request and its streamed response side by side (nothing ran between them) stay one call.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import pytest
from opentelemetry import trace
from opentelemetry._logs import Logger
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags, Tracer

from otel_shapecheck import (
    HashingEmbedder,
    ShapecheckLogRecordProcessor,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck._attributes import DUPLICATE_OF, TOOL_CHOICE_SKIPPED
from otel_shapecheck.embedding._vectors import FloatMatrix
from otel_shapecheck.pipeline import _intake
from otel_shapecheck.pipeline._duplicates import apart
from otel_shapecheck.pipeline._facts import ALL_LOST, NO_LOSSES, Losses
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._options import ProcessorOptions

QUESTION = "How much usable storage does the Lyon cluster have?"
TOOLS = json.dumps(
    [
        {"type": "function", "name": "get_capacity", "description": "Get the usable storage of a cluster"},
        {"type": "function", "name": "get_weather", "description": "Get the current weather for a city"},
    ]
)
ASKS = "chat asks"
ANSWERS = "chat answers"


def _chat(output: Sequence[dict[str, object]] | None, finish: str = "stop") -> dict[str, object]:
    """A chat span's attributes; ``None``: its output was not captured (no finish reason either)."""
    attributes: dict[str, object] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.tool.definitions": TOOLS,
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        ),
    }
    if output is not None:
        message = {"role": "assistant", "parts": list(output), "finish_reason": finish}
        attributes["gen_ai.output.messages"] = json.dumps([message])
        attributes["gen_ai.response.finish_reasons"] = (finish,)
    return attributes


ANSWER = _chat([{"type": "text", "content": "The Lyon cluster has 1200 TB usable."}])
CHOICE = [{"type": "tool_call", "id": "call_1", "name": "get_capacity", "arguments": {"cluster": "lyon"}}]


def _execution(result: str = '{"cluster": "lyon", "usable_tb": 1200}') -> dict[str, object]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_capacity",
        "gen_ai.tool.call.id": "call_1",
        "gen_ai.tool.call.result": result,
    }


class _GatedEmbedder:
    """A real embedder whose ``embed`` waits until ``gate`` opens: the evaluation worker falls behind."""

    def __init__(self) -> None:
        self._inner = HashingEmbedder()
        self.gate = threading.Event()
        self.entered = threading.Event()

    @property
    def id(self) -> str:
        return self._inner.id

    def embed(self, texts: Sequence[str]) -> FloatMatrix:
        self.entered.set()
        self.gate.wait(30)
        return self._inner.embed(texts)


@contextmanager
def _processor(
    embedder: _GatedEmbedder | None = None, **options: int
) -> Iterator[tuple[Tracer, ShapecheckSpanProcessor, CollectingSpanProcessor]]:
    collected = CollectingSpanProcessor()
    check = ToolChoiceCheck(embedder if embedder is not None else HashingEmbedder())
    processor = ShapecheckSpanProcessor(
        collected, checks=[check], options=ProcessorOptions(schedule_delay_millis=5, **options)
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    try:
        yield provider.get_tracer("tests.pairs", "1.0"), processor, collected
    finally:
        if embedder is not None:
            embedder.gate.set()
        provider.shutdown()


def _hold_worker(tracer: Tracer, embedder: _GatedEmbedder, behind: bool) -> None:
    """Keep the worker evaluating a call of another trace (that chose a tool) until the gate opens;
    with ``behind`` false, open the gate: the worker evaluates each span as soon as it is ready."""
    if not behind:
        embedder.gate.set()
        return
    tracer.start_span("warm up", context=Context(), attributes=_chat(CHOICE, "tool_calls")).end()
    assert embedder.entered.wait(10)


def _recorded(processor: ShapecheckSpanProcessor) -> None:
    """Wait until the recording thread recorded every span ended so far (not for the worker)."""
    assert processor._intake.flush(10)


def _chats(spans: Sequence[ReadableSpan]) -> dict[str, dict[str, object]]:
    return {span.name: dict(span.attributes or {}) for span in spans if span.name.startswith("chat")}


def _assert_two_calls(processor: ShapecheckSpanProcessor, collected: CollectingSpanProcessor) -> None:
    chats = _chats(collected.spans)
    assert set(chats) == {ASKS, ANSWERS}
    assert DUPLICATE_OF not in chats[ASKS] and DUPLICATE_OF not in chats[ANSWERS]
    assert processor.counts().duplicates == 0


def _calls_after_their_parent_ended(*, worker_behind: bool) -> dict[str, dict[str, object]]:
    """The turn's spans ending after their agent span did (a child may outlive its parent): the first
    call is then final at its end, and the worker evaluates it before the next call ended, or after."""
    embedder = _GatedEmbedder()
    with _processor(embedder) as (tracer, processor, collected):
        _hold_worker(tracer, embedder, worker_behind)
        agent = tracer.start_span("invoke_agent storage", context=Context())
        under = trace.set_span_in_context(agent)
        asks = tracer.start_span(ASKS, context=under, kind=SpanKind.CLIENT, attributes=_chat(None))
        agent.end()
        asks.end()
        if not worker_behind:
            assert processor.force_flush(10_000)  # evaluated before anything after it ended
        tracer.start_span("execute_tool get_capacity", context=under, attributes=_execution()).end()
        tracer.start_span(ANSWERS, context=under, kind=SpanKind.CLIENT, attributes=ANSWER).end()
        _recorded(processor)
        embedder.gate.set()
        assert processor.force_flush(10_000)
        _assert_two_calls(processor, collected)
        return _chats(collected.spans)


def test_a_call_evaluated_after_its_next_sibling_ended_is_not_that_siblings_request() -> None:
    """The worker behind or not, the first call gets the same verdict, and neither is a duplicate: the
    tool execution between them shows they are two calls, whether or not it was joined to the first."""
    early = _calls_after_their_parent_ended(worker_behind=False)
    late = _calls_after_their_parent_ended(worker_behind=True)
    assert early[ASKS].get(TOOL_CHOICE_SKIPPED) == late[ASKS].get(TOOL_CHOICE_SKIPPED)


def test_a_tool_execution_dropped_by_the_fact_bytes_bound_leaves_its_neighbours_two_calls() -> None:
    """The execution between the calls was too large to keep: what ran between them is unknown, so the
    output-less call is not paired with the next one."""
    with _processor(max_fact_bytes=3_000) as (tracer, processor, collected):
        with tracer.start_as_current_span("invoke_agent storage", context=Context()):
            tracer.start_span(ASKS, kind=SpanKind.CLIENT, attributes=_chat(None)).end()
            big = json.dumps({"cluster": "lyon", "usable_tb": 1200, "listing": "x" * 5_000})
            tracer.start_span("execute_tool get_capacity", attributes=_execution(big)).end()
            tracer.start_span(ANSWERS, kind=SpanKind.CLIENT, attributes=ANSWER).end()
        assert processor.force_flush(10_000)
        assert processor.counts().facts_dropped == 1
        _assert_two_calls(processor, collected)


def test_a_tool_execution_forwarded_unrecorded_leaves_its_neighbours_two_calls(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The recording queue stayed full past the make-room wait (an overloaded machine: whichever
    thread records is not scheduled) as the execution ended: it went on unrecorded, and the calls
    around it stay two."""
    monkeypatch.setattr(_intake, "MAKE_ROOM_WAIT_SECONDS", 0.05)
    with _processor(max_queue_size=2) as (tracer, processor, collected):
        with tracer.start_as_current_span("invoke_agent storage", context=Context()):
            tracer.start_span(ASKS, kind=SpanKind.CLIENT, attributes=_chat(None)).end()
            _recorded(processor)
            with processor._intake._recording:  # stands for the recording thread not being scheduled
                for _ in range(2):  # another trace's spans fill the queue
                    tracer.start_span("execute_tool other", context=Context(), attributes=_execution()).end()
                tracer.start_span("execute_tool get_capacity", attributes=_execution()).end()
            tracer.start_span(ANSWERS, kind=SpanKind.CLIENT, attributes=ANSWER).end()
        assert processor.force_flush(10_000)
        assert processor.counts().forwarded_unrecorded == 1
        _assert_two_calls(processor, collected)


def _logged_output(logger: Logger, *, pad: int = 0) -> None:
    """The current call's output (it chose ``get_capacity``) in a GenAI content log record."""
    choice = {"role": "assistant", "parts": CHOICE, "finish_reason": "tool_calls", "pad": "x" * pad}
    logger.emit(
        event_name="gen_ai.client.inference.operation.details",
        attributes={"gen_ai.output.messages": json.dumps([choice])},
    )


@contextmanager
def _logged(processor: ShapecheckSpanProcessor) -> Iterator[Logger]:
    logs = LoggerProvider(shutdown_on_exit=False)
    logs.add_log_record_processor(ShapecheckLogRecordProcessor(processor))
    try:
        yield logs.get_logger("tests.pairs")
    finally:
        logs.shutdown()


def test_a_call_whose_content_record_was_dropped_is_not_the_request_of_its_next_sibling() -> None:
    """The first call's output came in a content log record too large to keep: its reading lacks it,
    but it is not thereby the request half of the next call."""
    with _processor(max_fact_bytes=3_000) as (tracer, processor, collected), _logged(processor) as logger:
        with tracer.start_as_current_span("invoke_agent storage", context=Context()):
            with tracer.start_as_current_span(ASKS, kind=SpanKind.CLIENT, attributes=_chat(None)):
                _logged_output(logger, pad=5_000)
            tracer.start_span(ANSWERS, kind=SpanKind.CLIENT, attributes=ANSWER).end()
        assert processor.force_flush(10_000)
        assert processor.counts().facts_dropped == 1
        _assert_two_calls(processor, collected)


def test_a_call_whose_trace_facts_were_forgotten_while_it_ran_is_not_the_request_of_its_sibling() -> None:
    """Past ``max_traces``, the facts of the first call's trace (its logged output among them) were
    forgotten while it ran; started again, they cannot show what it answered: it stays its own call."""
    with _processor(max_traces=1) as (tracer, processor, collected), _logged(processor) as logger:
        with tracer.start_as_current_span("invoke_agent storage", context=Context()):
            with tracer.start_as_current_span(ASKS, kind=SpanKind.CLIENT, attributes=_chat(None)):
                _logged_output(logger)
                tracer.start_span("execute_tool other", context=Context(), attributes=_execution()).end()
                _recorded(processor)  # the other trace's facts took the only place
            tracer.start_span(ANSWERS, kind=SpanKind.CLIENT, attributes=ANSWER).end()
        assert processor.force_flush(10_000)
        assert processor.counts().facts_dropped >= 1
        _assert_two_calls(processor, collected)


def _request_then_response(tracer: Tracer, *, between: dict[str, object] | None = None) -> None:
    """A request span without output, then its response's span beside it, under one agent span;
    ``between``: a span ended between them; after them, a tool execution too large to keep."""
    with tracer.start_as_current_span("invoke_agent storage", context=Context()):
        tracer.start_span("chat request", attributes=_chat(None)).end()
        if between is not None:
            tracer.start_span("execute_tool get_capacity", attributes=between).end()
        tracer.start_span("chat response", attributes=_chat(CHOICE, "tool_calls")).end()
        big = json.dumps({"listing": "x" * 5_000})
        tracer.start_span("execute_tool get_capacity", attributes=_execution(big)).end()


def test_a_request_and_its_response_stay_one_call_whatever_was_dropped_after_them() -> None:
    """A fact dropped after the response changes nothing: the request still joins its response."""
    with _processor(max_fact_bytes=3_000) as (tracer, processor, collected):
        _request_then_response(tracer)
        assert processor.force_flush(10_000)
        chats = {span.name: span for span in collected.spans}
        counts = processor.counts()
    assert counts.facts_dropped == 1 and counts.duplicates == 1
    response = chats["chat response"].context
    assert response is not None
    assert (chats["chat request"].attributes or {})[DUPLICATE_OF] == format(response.span_id, "016x")


def _pair_under_a_remote_parent(*, worker_behind: bool) -> dict[str, dict[str, object]]:
    """A request and then its response beside it, under a parent of another process: the request is
    final at its end (no local parent to wait for), evaluated before the response ended or after."""
    embedder = _GatedEmbedder()
    with _processor(embedder) as (tracer, processor, collected):
        _hold_worker(tracer, embedder, worker_behind)
        remote = SpanContext(0xABC, 0xDEF, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        under = trace.set_span_in_context(NonRecordingSpan(remote))
        tracer.start_span("chat request", context=under, attributes=_chat(None)).end()
        if not worker_behind:
            assert processor.force_flush(10_000)
        tracer.start_span("chat response", context=under, attributes=_chat(CHOICE, "tool_calls")).end()
        _recorded(processor)
        embedder.gate.set()
        assert processor.force_flush(10_000)
        return _chats(collected.spans)


def test_a_request_final_at_its_end_is_paired_the_same_whenever_evaluated() -> None:
    """Its partners are the calls recorded when it became final, not those recorded by the time the
    worker took it out: the response that ended after it is not among them either way."""
    early = _pair_under_a_remote_parent(worker_behind=False)
    late = _pair_under_a_remote_parent(worker_behind=True)
    assert DUPLICATE_OF not in early["chat request"] and DUPLICATE_OF not in late["chat request"]
    assert early["chat request"].get(TOOL_CHOICE_SKIPPED) == late["chat request"].get(TOOL_CHOICE_SKIPPED)


def _span(name: str, start: int, end: int, *, span_id: int, parent: int | None = 1) -> ReadableSpan:
    context = SpanContext(7, span_id, is_remote=False)
    return ReadableSpan(
        name=name,
        context=context,
        parent=SpanContext(7, parent, is_remote=False) if parent is not None else None,
        instrumentation_scope=InstrumentationScope("tests.pairs", "1.0"),
        start_time=start,
        end_time=end,
    )


def test_side_by_side_spans_are_apart_only_for_what_ended_between_them() -> None:
    """An execution under their parent, or a lost span, ending between the request's end and the
    response's keeps them apart; one ending before the request or after the response does not, nor one
    under another parent; nested spans are never apart."""
    request, response = _span("request", 10, 20, span_id=2), _span("response", 30, 40, span_id=3)
    tool = _span("execute_tool", 22, 25, span_id=4)
    assert apart(request, response, [tool], NO_LOSSES)
    assert not apart(request, response, [_span("execute_tool", 22, 25, span_id=4, parent=9)], NO_LOSSES)
    assert not apart(request, response, [_span("execute_tool", 3, 8, span_id=4)], NO_LOSSES)
    assert not apart(request, response, [], Losses((5, 45)))
    assert apart(request, response, [], Losses((25,)))
    assert apart(request, response, [], Losses((), since=35))
    assert not apart(request, response, [], Losses((), since=41))
    assert apart(request, response, [], ALL_LOST)
    inner = _span("response", 12, 18, span_id=5, parent=2)
    assert not apart(request, inner, [tool], ALL_LOST)

"""Agent telemetry for the reliability tests, made cheaply with a tracer, and a downstream that keeps ids.

Spans follow the OTel GenAI span convention with content on the span (what the checks read): an
``invoke_agent`` root, a chat span requesting ``get_capacity``, the tool's ``execute_tool`` span and a
chat span answering with one carried and one unsupported figure.
"""

from __future__ import annotations

import json
import threading
import time
from array import array
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.trace import SpanKind

from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

QUESTION = "How much usable storage does the Lyon cluster have?"
ANSWER = "The Lyon cluster has 1200 TB usable, out of 4200 TB raw."
TOOLS = json.dumps(
    [
        {"type": "function", "name": "get_capacity", "description": "Get the usable storage of a cluster"},
        {"type": "function", "name": "get_weather", "description": "Get the current weather for a city"},
    ]
)
SPANS_PER_TURN = 4
GENAI_SPANS_PER_TURN = 3


def wait_recorded(processor: ShapecheckSpanProcessor) -> None:
    """Wait until the recording thread recorded every span ended so far, so that counts and the ledger
    are exact while the evaluation worker is held up (``force_flush`` would wait for the worker too)."""
    assert processor._intake.flush(10)


def messages(role: str, parts: Sequence[dict[str, Any]], finish: str | None = None) -> str:
    """A one-message ``gen_ai.*.messages`` value."""
    message: dict[str, Any] = {"role": role, "parts": list(parts)}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message])


def chat_attributes(output: Sequence[dict[str, Any]] | None, finish: str = "stop") -> dict[str, Any]:
    """A chat span's attributes; ``output=None`` leaves the reply uncaptured (tool calls only in siblings)."""
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.tool.definitions": TOOLS,
        "gen_ai.input.messages": messages("user", [{"type": "text", "content": QUESTION}]),
    }
    if output is not None:
        attributes["gen_ai.output.messages"] = messages("assistant", output, finish)
        attributes["gen_ai.response.finish_reasons"] = (finish,)
    return attributes


def tool_attributes(call_id: str, result: str) -> dict[str, Any]:
    """An ``execute_tool get_capacity`` span's attributes."""
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_capacity",
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.result": result,
    }


def agent_turn(tracer: trace.Tracer, number: int = 0, *, names_output: bool = True) -> None:
    """One agent turn of four spans in a new trace (three of them GenAI)."""
    call_id = f"call_{number}"
    request = [{"type": "tool_call", "id": call_id, "name": "get_capacity", "arguments": {"cluster": "lyon"}}]
    with tracer.start_as_current_span("invoke_agent storage", context=Context()):
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            attributes=chat_attributes(request if names_output else None, "tool_calls"),
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool get_capacity",
            attributes=tool_attributes(call_id, json.dumps({"cluster": "lyon", "usable_tb": 1200})),
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            kind=SpanKind.CLIENT,
            attributes=chat_attributes([{"type": "text", "content": ANSWER}]),
        ):
            pass


def longest_turn(tracer: trace.Tracer, turns: int, *, first: int = 0) -> float:
    """Run ``turns`` agent turns on this thread; the longest one took this many seconds."""
    longest = 0.0
    for number in range(first, first + turns):
        started = time.perf_counter()
        agent_turn(tracer, number, names_output=number % 2 == 0)
        longest = max(longest, time.perf_counter() - started)
    return longest


class IdRecorder(SpanProcessor):
    """A downstream that notes the span id of every span handed to it, compactly, even after shutdown.

    Ids go into an ``array`` of unsigned 64-bit integers (8 bytes a span), so a soak of hundreds of
    thousands of spans can prove exactly-once delivery without holding the spans themselves.
    """

    def __init__(
        self, then: SpanProcessor | None = None, *, keep: Callable[[ReadableSpan], bool] | None = None
    ):
        self._ids = array("Q")
        self._lock = threading.Lock()
        self._then = then
        self._keep = keep
        self.kept: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self._then is not None:
            self._then.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        if span.context is not None:
            with self._lock:
                self._ids.append(span.context.span_id)
                if self._keep is not None and self._keep(span):
                    self.kept.append(span)
        if self._then is not None:
            self._then.on_end(span)

    def shutdown(self) -> None:
        if self._then is not None:
            self._then.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._then.force_flush(timeout_millis) if self._then is not None else True

    def __len__(self) -> int:
        return len(self._ids)

    def duplicates(self) -> dict[int, int]:
        """Span ids handed over more than once, with how often."""
        with self._lock:
            counted = Counter(self._ids)
        return {span_id: count for span_id, count in counted.items() if count > 1}

    def ids(self) -> set[int]:
        """Every span id handed over."""
        with self._lock:
            return set(self._ids)

"""GenAI telemetry for the processor tests, written by ``opentelemetry-util-genai``'s ``TelemetryHandler``,
and small checks registered through the ``Check`` protocol.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.util.genai.handler import TelemetryHandler
from opentelemetry.util.genai.types import (
    FunctionToolDefinition,
    InputMessage,
    OutputMessage,
    TextPart,
    ToolCallRequestPart,
)

from otel_shapecheck import Subject, Verdict

QUESTION = "How much usable storage does the Lyon cluster have?"
TOOLS = [
    FunctionToolDefinition(
        name="get_capacity", description="Get the usable storage capacity of a cluster", parameters={}
    ),
    FunctionToolDefinition(
        name="get_weather", description="Get the current weather for a city", parameters={}
    ),
]
TOOL_RESULT = {"cluster": "lyon", "usable_tb": 1200}
ANSWER = "The Lyon cluster has 1200 TB usable."


def chat(
    handler: TelemetryHandler,
    *,
    tool_call: str | None = None,
    answer: str | None = None,
    names_output: bool = True,
    context: Context | None = None,
) -> None:
    """One chat span: it requests ``tool_call`` or answers ``answer``.

    With ``names_output=False`` the output is not captured, so the tool calls are only visible as
    sibling ``execute_tool`` spans (as with instrumentations that do not record the reply).
    """
    invocation = handler.inference("openai", request_model="gpt-4o-mini", context=context)
    invocation.tool_definitions = list(TOOLS)
    invocation.input_messages = [InputMessage(role="user", parts=[TextPart(content=QUESTION)])]
    if names_output:
        if tool_call is not None:
            invocation.output_messages = [
                OutputMessage(
                    role="assistant",
                    parts=[ToolCallRequestPart(arguments={"cluster": "lyon"}, name=tool_call, id="call_1")],
                    finish_reason="tool_calls",
                )
            ]
        else:
            invocation.output_messages = [
                OutputMessage(
                    role="assistant", parts=[TextPart(content=answer or ANSWER)], finish_reason="stop"
                )
            ]
    invocation.stop()


def execute_tool(
    handler: TelemetryHandler,
    name: str = "get_capacity",
    *,
    result: Any = None,
    call_id: str | None = None,
    context: Context | None = None,
) -> None:
    """One ``execute_tool`` span with its result."""
    invocation = handler.tool(name, context=context)
    invocation.tool_call_id = call_id
    invocation.arguments = {"cluster": "lyon"}
    invocation.tool_result = TOOL_RESULT if result is None else result
    invocation.stop()


def tool_turn(handler: TelemetryHandler, tracer: trace.Tracer, *, names_output: bool = True) -> None:
    """An agent turn: chat requesting a tool, the tool's execution, chat answering; under one agent span."""
    with tracer.start_as_current_span("invoke_agent storage"):
        chat(handler, tool_call="get_capacity", names_output=names_output)
        execute_tool(handler, call_id="call_1" if names_output else None)
        chat(handler, answer=ANSWER)


class RecordingCheck:
    """Gives every subject with an LLM call or analyst run a verdict, and keeps the subjects it saw."""

    def __init__(self, name: str = "test.recording", flag: str | None = None) -> None:
        self.name = name
        self._flag = flag
        self._lock = threading.Lock()
        self.subjects: list[Subject] = []
        self.batches: list[int] = []

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        with self._lock:
            self.subjects.extend(subjects)
            self.batches.append(len(subjects))
        return [self._verdict(subject) for subject in subjects]

    def _verdict(self, subject: Subject) -> Verdict | None:
        if subject.llm_call is None and subject.analyst_run is None:
            return None
        return Verdict(
            evaluation=self.name,
            attributes={f"{self.name}.incomplete": subject.incomplete},
            label="incomplete" if subject.incomplete else "seen",
            explanation="Recorded by the test check.",
            score=1.0,
            flags=(self._flag,) if self._flag else (),
        )

    def subject(self, span_id: int) -> Subject:
        """The subject this check saw for a span id."""
        wanted = format(span_id, "016x")
        with self._lock:
            matches = [subject for subject in self.subjects if subject.span_id == wanted]
        assert len(matches) == 1, matches
        return matches[0]


class RaisingCheck:
    """A check whose every batch fails."""

    name = "test.raising"

    def __init__(self) -> None:
        self.calls = 0

    def evaluate(self, subjects: Sequence[Subject]) -> list[Verdict | None]:
        self.calls += 1
        raise RuntimeError("this check always fails")


class CountingProcessor(SpanProcessor):
    """A downstream that keeps every span it is handed (thread-safe), even after shutdown."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.spans: list[ReadableSpan] = []
        self.shut_down = False

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        with self._lock:
            self.spans.append(span)

    def shutdown(self) -> None:
        self.shut_down = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True

    def span_ids(self) -> list[int]:
        with self._lock:
            return [span.context.span_id for span in self.spans if span.context is not None]

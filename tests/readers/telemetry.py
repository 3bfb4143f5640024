"""Capture of real telemetry for the reader tests: SDK providers, in-memory exporters and an agent turn.

The agent turn is the same everywhere: the real ``openai`` client (or another real client) asks the
scripted server a weather question with two tools offered, the model requests ``get_weather``, the
tool's result goes back, and the model answers. Instrumentations under test wrap the client.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import openai
import pytest
from opentelemetry._logs import LogRecord
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_shapecheck._model import LLMCall, OfferedTool, ToolParameter
from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.readers._classify import SpanRole, classify_span
from otel_shapecheck.readers._read import read_llm_call

CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The util-genai setting that says where message content goes (``SPAN_ONLY``, ``EVENT_ONLY``…)."""

MODEL = "gpt-4o-mini"
SYSTEM_PROMPT = "You are a helpful assistant."
QUESTION = "What is the weather in Paris?"
WEATHER_ARGUMENTS = {"city": "Paris"}
WEATHER_RESULT = "rainy, 57F"
ANSWER = "It is rainy in Paris, 57F."
CALL_ID = "call_weather_1"

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city, e.g. Paris"}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_time",
            "description": "Get the local time in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    },
]
OFFERED = [
    ("get_weather", "Get the current weather for a city"),
    ("get_time", "Get the local time in a city"),
]
OFFERED_TOOLS = (
    OfferedTool("get_weather", OFFERED[0][1], (ToolParameter("city", "The city, e.g. Paris"),)),
    OfferedTool("get_time", OFFERED[1][1], (ToolParameter("city"),)),
)
"""The menu as every reader should give it: names, descriptions and the schemas' parameters."""


def weather_script(*, call_id: str | None = CALL_ID, plan: str | None = None) -> list[ScriptedReply]:
    """The model's side of the turn: request ``get_weather`` for Paris, then answer from the result."""
    return [
        ScriptedReply(
            text=plan,
            tool_calls=[ScriptedToolCall("get_weather", WEATHER_ARGUMENTS, call_id=call_id)],
            completion_id="chatcmpl-turn-1",
        ),
        ScriptedReply(text=ANSWER, completion_id="chatcmpl-turn-2"),
    ]


@dataclass
class CapturedTelemetry:
    """A tracer provider and a logger provider whose output lands in in-memory exporters."""

    span_exporter: InMemorySpanExporter = field(default_factory=InMemorySpanExporter)
    log_exporter: InMemoryLogRecordExporter = field(default_factory=InMemoryLogRecordExporter)
    tracer_provider: TracerProvider = field(default_factory=lambda: TracerProvider(shutdown_on_exit=False))
    logger_provider: LoggerProvider = field(default_factory=lambda: LoggerProvider(shutdown_on_exit=False))

    def __post_init__(self) -> None:
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.span_exporter))
        self.logger_provider.add_log_record_processor(SimpleLogRecordProcessor(self.log_exporter))

    def spans(self) -> list[ReadableSpan]:
        return list(self.span_exporter.get_finished_spans())

    def spans_of_kind(self, kind: SpanRole) -> list[ReadableSpan]:
        """Finished spans of one kind, in end order."""
        found = [
            span for span in self.spans() if classify_span(span.name, span.attributes or {}).role is kind
        ]
        return sorted(found, key=lambda span: span.end_time or 0)

    def llm_calls(self) -> list[LLMCall]:
        """The LLM calls the finished spans record, read, in end order; every LLM span must read as one."""
        calls = [read_llm_call(span) for span in self.spans_of_kind(SpanRole.LLM_CALL)]
        assert all(call is not None for call in calls), "an LLM span did not read as an LLM call"
        return [call for call in calls if call is not None]

    def log_records(self) -> list[LogRecord]:
        return [readable.log_record for readable in self.log_exporter.get_finished_logs()]

    def shutdown(self) -> None:
        self.tracer_provider.shutdown()
        self.logger_provider.shutdown()


class Instrumentor(Protocol):
    """What the tests need of an OpenTelemetry instrumentor."""

    def instrument(self, **kwargs: Any) -> None: ...

    def uninstrument(self, **kwargs: Any) -> None: ...


@contextmanager
def instrumenting(
    telemetry: CapturedTelemetry, instrumentor: Instrumentor, *, capture: str | None = None
) -> Iterator[CapturedTelemetry]:
    """``instrumentor`` writing to ``telemetry``'s providers until the block ends, then uninstrumented.

    ``capture`` sets util-genai's content capture mode for the block; the environment is restored after.
    """
    with pytest.MonkeyPatch.context() as env:
        if capture is not None:
            env.setenv(CAPTURE_ENV, capture)
        instrumentor.instrument(
            tracer_provider=telemetry.tracer_provider, logger_provider=telemetry.logger_provider
        )
        try:
            yield telemetry
        finally:
            instrumentor.uninstrument()


def records_by_span(records: Sequence[LogRecord]) -> dict[int, list[LogRecord]]:
    """Log records grouped by the span they belong to, each group in emission order."""
    grouped: dict[int, list[LogRecord]] = {}
    for record in records:
        grouped.setdefault(record.span_id or 0, []).append(record)
    return grouped


def run_openai_turn(
    base_url: str,
    *,
    run_tool: Callable[[str, str, Mapping[str, Any]], str] | None = None,
    stream: bool = False,
) -> str:
    """Run the agent turn with the real ``openai`` client; ``run_tool(name, call_id, args)`` runs the tool.

    Returns the final answer.
    """
    client = openai.OpenAI(base_url=base_url, api_key="scripted", max_retries=0)
    try:
        messages: list[Any] = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": QUESTION},
        ]
        first = _complete(client, messages, stream)
        messages.append(first)
        for call in first["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"])
            result = run_tool(call["function"]["name"], call["id"], arguments) if run_tool else WEATHER_RESULT
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
        final = _complete(client, messages, stream)
        return str(final["content"])
    finally:
        client.close()


def _complete(client: openai.OpenAI, messages: list[Any], stream: bool) -> dict[str, Any]:
    """One chat completion, returned as the assistant message to append to the history."""
    if not stream:
        response = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
        return response.choices[0].message.model_dump(exclude_none=True)
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    with client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS, stream=True) as chunks:
        for chunk in chunks:
            for choice in chunk.choices:
                content.append(choice.delta.content or "")
                for delta in choice.delta.tool_calls or ():
                    entry = calls.setdefault(delta.index, {"type": "function", "function": {"arguments": ""}})
                    entry["id"] = delta.id or entry.get("id")
                    if delta.function is not None:
                        entry["function"]["name"] = delta.function.name or entry["function"].get("name")
                        entry["function"]["arguments"] += delta.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content)}
    message["tool_calls"] = [calls[index] for index in sorted(calls)]
    return message

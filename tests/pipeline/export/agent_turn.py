"""A real agent turn whose telemetry the checks flag: the real ``openai`` client, instrumented, on loopback.

The scripted model requests ``get_capacity``, receives the tool's rows, and answers with one figure the
tool carried (1200 TB) and one nobody did (4200 TB), so the figures check flags the final answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk.trace import TracerProvider

from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer

MODEL = "gpt-4o-mini"
QUESTION = "How much usable storage does the Lyon cluster have?"
TOOL_RESULT = json.dumps({"cluster": "lyon", "usable_tb": 1200, "nodes": 14})
ANSWER = "The Lyon cluster has 1200 TB usable, out of 4200 TB raw."
UNSUPPORTED = "4200 TB"
TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_capacity",
            "description": "Get the usable storage capacity of a cluster",
            "parameters": {"type": "object", "properties": {"cluster": {"type": "string"}}},
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the current weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
]
SCRIPT = [
    ScriptedReply(
        tool_calls=[ScriptedToolCall("get_capacity", {"cluster": "lyon"}, call_id="call_capacity_1")],
        completion_id="chatcmpl-capacity-1",
    ),
    ScriptedReply(text=ANSWER, completion_id="chatcmpl-capacity-2"),
]


@contextmanager
def instrumented(
    tracer_provider: TracerProvider,
    logger_provider: LoggerProvider | None = None,
    *,
    content: str = "SPAN_ONLY",
) -> Iterator[None]:
    """The genai-openai instrumentation capturing content as told (``SPAN_ONLY``, ``EVENT_ONLY``)."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", content)
        instrumentor = OpenAIInstrumentor()
        instrumentor.instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)
        try:
            yield
        finally:
            instrumentor.uninstrument()


def run_capacity_turn(tracer_provider: TracerProvider) -> str:
    """Run the turn under an ``invoke_agent`` span; returns the final answer."""
    tracer = tracer_provider.get_tracer("tests.agent")
    with ScriptedOpenAIServer(SCRIPT) as server, tracer.start_as_current_span("invoke_agent capacity"):
        client = openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)
        try:
            messages: list[Any] = [{"role": "user", "content": QUESTION}]
            first = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            request = first.choices[0].message
            messages.append(request.model_dump(exclude_none=True))
            for call in request.tool_calls or ():
                messages.append({"role": "tool", "tool_call_id": call.id, "content": TOOL_RESULT})
            final = client.chat.completions.create(model=MODEL, messages=messages, tools=TOOLS)
            return final.choices[0].message.content or ""
        finally:
            client.close()

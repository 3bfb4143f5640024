"""One scripted agent run, written by hand in each convention that has agent spans.

The run: an agent span, under it an LLM call that chooses ``get_capacity`` from a two-tool menu, the
tool's execution with a result carrying ``1200`` TB, and an LLM call answering with that figure and an
invented one (``37.4 TB``). Spans go through a real SDK ``TracerProvider``; each writer spells the same
facts in its convention's attributes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.trace import Span

MODEL = "gpt-4o-mini"
PROVIDER = "openai"
AGENT = "storage"
QUESTION = "How much usable storage does the Lyon cluster have?"
TOOLS = (
    ("get_capacity", "Get the usable storage capacity of a cluster"),
    ("get_weather", "Get the current weather for a city"),
)
RESULT = json.dumps({"cluster": "lyon", "usable_tb": 1200})
ANSWER = "The Lyon cluster has 1200 TB usable and 37.4 TB free."
INVENTED = "37.4 TB"


@dataclass(frozen=True)
class Convention:
    """How one convention writes the run's spans."""

    name: str
    agent: Callable[[trace.Tracer, str], AbstractContextManager[Span]]
    """The agent span, as a current span, named after the agent."""
    choose: Callable[[trace.Tracer], None]
    """The LLM call that chooses ``get_capacity``."""
    execute: Callable[[trace.Tracer], None]
    """The tool's execution."""
    answer: Callable[[trace.Tracer], None]
    """The LLM call that answers."""


def run(tracer: trace.Tracer, convention: Convention, agent: str = AGENT) -> None:
    """The whole run under one agent span."""
    with convention.agent(tracer, agent):
        convention.choose(tracer)
        convention.execute(tracer)
        convention.answer(tracer)


def _span(tracer: trace.Tracer, name: str, attributes: dict[str, object]) -> None:
    with tracer.start_as_current_span(name, attributes=attributes):  # type: ignore[arg-type]
        pass


# OpenTelemetry GenAI semantic conventions (JSON content attributes).


@contextmanager
def _genai_agent(tracer: trace.Tracer, agent: str) -> Iterator[Span]:
    attributes = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
    with tracer.start_as_current_span(f"invoke_agent {agent}", attributes=attributes) as span:
        yield span


def genai_chat(
    response_id: str, output: list[dict[str, object]], *, with_result: bool = False
) -> dict[str, object]:
    """The attributes of a GenAI chat span (``with_result``: the input carries the tool's result)."""
    inputs: list[dict[str, object]] = [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
    if with_result:
        inputs += [
            {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": RESULT}]},
        ]
    return {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": MODEL,
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.response.id": response_id,
        "gen_ai.tool.definitions": json.dumps([{"name": n, "description": d} for n, d in TOOLS]),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(output),
    }


CHOICE_OUTPUT: list[dict[str, object]] = [
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "get_capacity"}]}
]
ANSWER_OUTPUT: list[dict[str, object]] = [
    {"role": "assistant", "parts": [{"type": "text", "content": ANSWER}], "finish_reason": "stop"}
]

GENAI = Convention(
    "genai",
    _genai_agent,
    lambda tracer: _span(tracer, f"chat {MODEL}", genai_chat("r-choose", CHOICE_OUTPUT)),
    lambda tracer: _span(
        tracer,
        "execute_tool get_capacity",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_capacity",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.result": RESULT,
        },
    ),
    lambda tracer: _span(tracer, f"chat {MODEL}", genai_chat("r-answer", ANSWER_OUTPUT, with_result=True)),
)


# OpenInference (flattened, indexed attributes).


@contextmanager
def _openinference_agent(tracer: trace.Tracer, agent: str) -> Iterator[Span]:
    attributes = {"openinference.span.kind": "AGENT", "agent.name": agent}
    with tracer.start_as_current_span(agent, attributes=attributes) as span:
        yield span


def _openinference_llm(output: dict[str, object], *, with_result: bool = False) -> dict[str, object]:
    attributes: dict[str, object] = {
        "openinference.span.kind": "LLM",
        "llm.model_name": MODEL,
        "llm.provider": PROVIDER,
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": QUESTION,
    }
    for index, (name, description) in enumerate(TOOLS):
        schema = {"type": "function", "function": {"name": name, "description": description}}
        attributes[f"llm.tools.{index}.tool.json_schema"] = json.dumps(schema)
    if with_result:
        attributes.update(
            {
                "llm.input_messages.1.message.role": "assistant",
                "llm.input_messages.1.message.tool_calls.0.tool_call.id": "c1",
                "llm.input_messages.1.message.tool_calls.0.tool_call.function.name": "get_capacity",
                "llm.input_messages.2.message.role": "tool",
                "llm.input_messages.2.message.tool_call_id": "c1",
                "llm.input_messages.2.message.content": RESULT,
            }
        )
    attributes.update({f"llm.output_messages.0.message.{key}": value for key, value in output.items()})
    return attributes


OPENINFERENCE = Convention(
    "openinference",
    _openinference_agent,
    lambda tracer: _span(
        tracer,
        "ChatCompletion",
        _openinference_llm(
            {
                "role": "assistant",
                "tool_calls.0.tool_call.id": "c1",
                "tool_calls.0.tool_call.function.name": "get_capacity",
                "tool_calls.0.tool_call.function.arguments": '{"cluster": "lyon"}',
            }
        ),
    ),
    lambda tracer: _span(
        tracer,
        "get_capacity",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "get_capacity",
            "input.value": '{"cluster": "lyon"}',
            "output.value": RESULT,
        },
    ),
    lambda tracer: _span(
        tracer,
        "ChatCompletion",
        _openinference_llm({"role": "assistant", "content": ANSWER}, with_result=True),
    ),
)


# OpenLLMetry / Traceloop (a workflow span, legacy indexed LLM attributes, a tool task).


@contextmanager
def _traceloop_workflow(tracer: trace.Tracer, agent: str) -> Iterator[Span]:
    attributes = {"traceloop.span.kind": "workflow", "traceloop.entity.name": agent}
    with tracer.start_as_current_span(f"{agent}.workflow", attributes=attributes) as span:
        yield span


def _traceloop_llm(completion: dict[str, object], *, with_result: bool = False) -> dict[str, object]:
    attributes: dict[str, object] = {
        "llm.request.type": "chat",
        "gen_ai.system": PROVIDER,
        "gen_ai.request.model": MODEL,
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": QUESTION,
    }
    for index, (name, description) in enumerate(TOOLS):
        attributes[f"llm.request.functions.{index}.name"] = name
        attributes[f"llm.request.functions.{index}.description"] = description
    if with_result:
        attributes.update(
            {
                "gen_ai.prompt.1.role": "assistant",
                "gen_ai.prompt.1.tool_calls.0.id": "c1",
                "gen_ai.prompt.1.tool_calls.0.name": "get_capacity",
                "gen_ai.prompt.2.role": "tool",
                "gen_ai.prompt.2.tool_call_id": "c1",
                "gen_ai.prompt.2.content": RESULT,
            }
        )
    attributes.update({f"gen_ai.completion.0.{key}": value for key, value in completion.items()})
    return attributes


TRACELOOP = Convention(
    "traceloop",
    _traceloop_workflow,
    lambda tracer: _span(
        tracer,
        "openai.chat",
        _traceloop_llm(
            {
                "role": "assistant",
                "finish_reason": "tool_calls",
                "tool_calls.0.id": "c1",
                "tool_calls.0.name": "get_capacity",
                "tool_calls.0.arguments": '{"cluster": "lyon"}',
            }
        ),
    ),
    lambda tracer: _span(
        tracer,
        "get_capacity.tool",
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "get_capacity",
            "traceloop.entity.output": RESULT,
        },
    ),
    lambda tracer: _span(
        tracer,
        "openai.chat",
        _traceloop_llm({"role": "assistant", "content": ANSWER, "finish_reason": "stop"}, with_result=True),
    ),
)

CONVENTIONS = (GENAI, OPENINFERENCE, TRACELOOP)

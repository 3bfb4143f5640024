"""Fleet traffic for the fleet benchmark: several agents, each with a fixed tool menu, many runs.

Every agent has a menu of 10 to 60 tools with parameter schemas (the same menu on every run, as a
deployed agent has). A run is an ``invoke_agent`` root, a chat span whose model chooses one tool of the
menu for a varied user turn, the tool's ``execute_tool`` span and a second chat span answering; a share
of the tools return rows and the answer quotes figures from them. Plain HTTP and database spans sit
around the GenAI ones, as in a real service. Everything is drawn from one seeded generator, so the same
arguments give the same spans (ids aside) in every process.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.trace import SpanKind

from benchmarks.bench_end_to_end import _Recorder

MENU_SIZES = (10, 18, 25, 35, 48, 60)
"""Tools on each agent's menu, one agent per size."""
FIGURES_SHARE = 0.4
"""Share of runs whose tool returns rows and whose answer quotes figures from them."""
PLAIN_SPANS_PER_RUN = 4

_DOMAINS = ("orders", "invoices", "shipments", "tickets", "storage", "payroll", "flights", "inventory")
_VERBS = ("get", "list", "create", "update", "cancel", "search", "summarise", "export", "approve", "count")
_FIELDS = ("id", "region", "customer", "date", "status", "amount", "owner", "priority", "currency", "limit")
_ASKS = (
    "Can you {verb} the {domain} for {who} in {where}?",
    "I need to {verb} {domain} {number} before {when}, please.",
    "Please {verb} every {domain} record that {who} touched {when}.",
    "{who} asked me to {verb} the {domain} of {where}; how do I do that?",
    "What happens if we {verb} {domain} {number} for {who}?",
)
_WHO = ("Ana", "the finance team", "our Berlin office", "customer 4411", "Kenji", "the on-call engineer")
_WHERE = ("EMEA", "the north warehouse", "region us-east-2", "Lisbon", "the staging cluster", "APAC")
_WHEN = ("Friday", "end of quarter", "tomorrow morning", "last week", "the audit", "midnight UTC")


@dataclass(frozen=True)
class Agent:
    """One deployed agent: its name and its menu (OpenAI function definitions)."""

    name: str
    tools: tuple[dict[str, Any], ...]


def fleet(seed: int = 7) -> list[Agent]:
    """One agent per entry of :data:`MENU_SIZES`, each with its own fixed menu."""
    rng = random.Random(seed)
    agents = []
    for number, size in enumerate(MENU_SIZES):
        names: set[str] = set()
        tools = []
        while len(tools) < size:
            verb, domain = rng.choice(_VERBS), rng.choice(_DOMAINS)
            name = f"{verb}_{domain}_{len(names)}" if f"{verb}_{domain}" in names else f"{verb}_{domain}"
            names.add(f"{verb}_{domain}")
            fields = rng.sample(_FIELDS, rng.randint(1, 4))
            tools.append(
                {
                    "type": "function",
                    "name": name,
                    "description": f"{verb.capitalize()} {domain} by {', '.join(fields)} for the desk",
                    "parameters": {
                        "type": "object",
                        "properties": {
                            field: {"type": "string", "description": f"the {domain} {field}"}
                            for field in fields
                        },
                        "required": fields[:1],
                    },
                }
            )
        agents.append(Agent(f"agent-{number}-{size}", tuple(tools)))
    return agents


def _messages(role: str, parts: list[dict[str, Any]], finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message])


def _chat(tracer: trace.Tracer, menu: str, question: str, output: list[dict[str, Any]], finish: str) -> None:
    attributes = {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.operation.name": "chat",
        "gen_ai.tool.definitions": menu,
        "gen_ai.input.messages": _messages("user", [{"type": "text", "content": question}]),
        "gen_ai.output.messages": _messages("assistant", output, finish),
        "gen_ai.response.finish_reasons": (finish,),
    }
    with (
        tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes),
        tracer.start_as_current_span("POST", kind=SpanKind.CLIENT) as http,
    ):
        http.set_attributes({"http.request.method": "POST", "http.response.status_code": 200})


def agent_run(tracer: trace.Tracer, rng: random.Random, agent: Agent, menu: str, number: int) -> None:
    """One run of ``agent`` (its menu as JSON in ``menu``): eight spans of one trace, ended in order."""
    tool = rng.choice(agent.tools)
    verb, _, rest = tool["name"].partition("_")
    domain = rest.split("_")[0]
    question = rng.choice(_ASKS).format(
        verb=verb,
        domain=domain,
        who=rng.choice(_WHO),
        where=rng.choice(_WHERE),
        when=rng.choice(_WHEN),
        number=rng.randint(100, 99_999),
    )
    call_id = f"call_{agent.name}_{number}"
    call = {"type": "tool_call", "id": call_id, "name": tool["name"], "arguments": {}}
    if rng.random() < FIGURES_SHARE:
        rows = [
            {"item": f"{domain}-{i}", "amount": rng.randint(1_000, 90_000)} for i in range(rng.randint(4, 40))
        ]
        result = json.dumps({"rows": rows})
        total = sum(row["amount"] for row in rows)
        largest = max(row["amount"] for row in rows)
        answer = f"The {len(rows)} {domain} come to {total} in total; the largest is {largest}."
    else:
        result = json.dumps({"status": "ok", "reference": f"R{rng.randint(10_000, 99_999)}"})
        answer = f"Done: the {domain} request went through."
    with tracer.start_as_current_span(
        f"invoke_agent {agent.name}",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent.name},
    ):
        with tracer.start_as_current_span("GET /session", kind=SpanKind.SERVER) as http:
            http.set_attributes({"http.request.method": "GET", "http.route": "/session"})
        _chat(tracer, menu, question, [call], "tool_calls")
        execution = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool["name"],
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.result": result,
        }
        with (
            tracer.start_as_current_span(f"execute_tool {tool['name']}", attributes=execution),
            tracer.start_as_current_span("SELECT", kind=SpanKind.CLIENT) as query,
        ):
            query.set_attributes({"db.system.name": "postgresql", "db.query.text": f"q{number}"})
        _chat(tracer, menu, question, [{"type": "text", "content": answer}], "stop")


def fleet_spans(runs: int, seed: int = 7, turns: int | None = None) -> list[ReadableSpan]:
    """The ended spans of ``runs`` runs spread over the fleet's agents, in the order they ended.

    ``seed`` draws the menus; ``turns`` (default: ``seed``) draws the runs, so traffic with another
    ``turns`` has the same agents and menus and new user turns, as a fleet has from one hour to the next.
    """
    rng = random.Random(seed if turns is None else turns)
    agents = fleet(seed)
    menus = {agent.name: json.dumps(list(agent.tools)) for agent in agents}
    recorder = _Recorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("bench.fleet")
    for number in range(runs):
        agent = rng.choice(agents)
        agent_run(tracer, rng, agent, menus[agent.name], number)
    provider.shutdown()
    return recorder.spans


def tool_choosing(spans: Sequence[ReadableSpan]) -> int:
    """Chat spans whose model chose a tool: the evaluations tool choice makes."""
    return sum(
        1
        for span in spans
        if (span.attributes or {}).get("gen_ai.response.finish_reasons") == ("tool_calls",)
    )

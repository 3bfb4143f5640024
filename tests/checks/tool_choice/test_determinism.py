"""Same spans, same verdicts, bit for bit, in every process: scoring run under several hash seeds.

Python salts ``hash()`` of strings per process (``PYTHONHASHSEED``), so anything that iterates a set of
words while summing floats gives margins that differ in their last bits from one process to the next.
Each subprocess here writes the same agent run through a real SDK ``TracerProvider`` into the real
``ShapecheckSpanProcessor`` (and replays it through ``check_spans``) and prints every verdict attribute
with ``repr`` of its floats; the outputs must be identical.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

SEEDS = ("0", "1", "2", "3", "12345")

_SCRIPT = textwrap.dedent(
    """
    import json

    from opentelemetry.sdk.trace import TracerProvider

    from otel_shapecheck.checks._builtin import build_checks
    from otel_shapecheck.pipeline._offline import CollectingSpanProcessor, check_spans
    from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor

    TOOLS = [
        ("get_cluster_capacity", "Get the usable and raw storage capacity of one cluster in a region"),
        ("get_cluster_health", "Get the health status, alerts and failed disks of one storage cluster"),
        ("list_clusters", "List every storage cluster of a region with its name and location"),
        ("get_weather_forecast", "Get the current weather and the forecast for a city"),
        ("create_support_ticket", "Open a support ticket about a failing storage cluster or disk"),
        ("get_billing_report", "Get the monthly billing report of storage usage per cluster"),
    ]
    MENU = json.dumps([{"name": n, "description": d} for n, d in TOOLS])
    QUESTION = (
        "Show the monthly billing report of storage usage per cluster, the usable capacity of each "
        "storage cluster and its failed disks, health alerts and location"
    )
    RESULT = json.dumps({"cluster": "lyon", "usable_tb": 1200.5, "raw_tb": 1873.25, "failed_disks": 3})

    def output(*names):
        parts = [{"type": "tool_call", "id": f"c{i}", "name": n, "arguments": {"cluster": "lyon"}}
                 for i, n in enumerate(names)]
        return json.dumps([{"role": "assistant", "parts": parts}])

    def run(tracer):
        with tracer.start_as_current_span("invoke_agent ops") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.agent.name", "ops")
            for chosen in (("get_cluster_capacity",), ("get_cluster_health", "create_support_ticket"),
                           ("get_billing_report",)):
                with tracer.start_as_current_span("chat") as chat:
                    chat.set_attribute("gen_ai.operation.name", "chat")
                    chat.set_attribute("gen_ai.tool.definitions", MENU)
                    chat.set_attribute("gen_ai.input.messages", json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]))
                    chat.set_attribute("gen_ai.output.messages", output(*chosen))
            with tracer.start_as_current_span("chat") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.tool.definitions", MENU)
                chat.set_attribute("gen_ai.input.messages", json.dumps([
                    {"role": "user", "parts": [{"type": "text", "content": QUESTION}]},
                    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c0",
                                                     "name": "get_cluster_capacity"}]},
                    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c0",
                                                "response": RESULT}]},
                ]))
                chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "Lyon has 1200.5 TB usable of 1873.25 TB raw, 672.75 TB "
                     "is overhead, 3 disks failed and 4.2 TB is reserved."}]}]))

    def verdicts(spans):
        rows = []
        for span in spans:
            attributes = {k: v for k, v in (span.attributes or {}).items() if k.startswith("shapecheck.")}
            events = [
                (event.name, sorted((k, repr(v)) for k, v in (event.attributes or {}).items()))
                for event in span.events
            ]
            rows.append((span.name, sorted((k, repr(v)) for k, v in attributes.items()), events))
        return sorted(rows, key=repr)

    collected = CollectingSpanProcessor()
    processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    exported = CollectingSpanProcessor()
    provider.add_span_processor(exported)
    run(provider.get_tracer("determinism"))
    provider.shutdown()
    live = verdicts(collected.spans)
    offline = verdicts(check_spans(exported.spans, build_checks("hashing")))
    assert any("shapecheck.tool_choice.margin" in repr(row) for row in live), live
    assert live == offline, "check differs from the live processor"
    print(json.dumps({"live": live, "offline": offline}))
    """
)


def _verdicts_under(seed: str) -> str:
    root = Path(__file__).resolve().parents[3]
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": os.pathsep.join([str(root), *sys.path])}
    completed = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    assert completed.returncode == 0, completed.stderr
    return completed.stdout


def test_verdicts_are_bit_identical_under_every_hash_seed() -> None:
    """The live processor and ``check`` give the same attributes, to the last bit, under five hash seeds."""
    outputs = {seed: _verdicts_under(seed) for seed in SEEDS}
    assert len(set(outputs.values())) == 1, "verdict attributes differ between hash seeds"

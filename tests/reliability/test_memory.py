"""Memory held by parsed menus: many distinct menus through the real processor, in a fresh process.

Every cache that keeps parsed tool objects or what is made of them alive (the readers' parse cache, the
subjects' readings of ended spans, the tool-choice plans, lexicons and terms, the check's history) is
bounded by the estimated bytes of what it holds, so the process's RSS stays bounded however many
distinct menus it reads, and once they are cleared no parsed tool object is left alive anywhere.
"""

from __future__ import annotations

import json

from .fresh_process import run_fresh

MENUS = 800
TOOLS_PER_MENU = 100
MIB = 1024 * 1024
PEAK_GROWTH_BOUND_MIB = 260
"""The 64 MiB caches (parse, readings, plans), the 32 MiB lexicons and the 16 MiB history and terms
(each an estimate), plus slack for the interpreter, the allocator and the SDK.

Before the caches were bounded by bytes, this run grew by 1 153 MB, every menu alive in the readings."""
CLEARED_GROWTH_BOUND_MIB = 150
"""What the allocator may keep after every parsed value is freed (arenas it does not return)."""

_CHILD = r"""
import ctypes, gc, json, sys
from opentelemetry.context import Context
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from otel_shapecheck import HashingEmbedder, ShapecheckSpanProcessor, ToolChoiceCheck
from otel_shapecheck._model import OfferedTool
from otel_shapecheck.checks.tool_choice import _lexical
from otel_shapecheck.embedding._cache import cached
from otel_shapecheck.embedding._tool_index import ToolIndex
from otel_shapecheck.pipeline import _subjects
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.readers import _genai

def rss():
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmRSS:"))

def alive():
    gc.collect()
    return sum(1 for item in gc.get_objects() if type(item) is OfferedTool)

menus, tools = int(sys.argv[1]), int(sys.argv[2])

def output(menu):
    # Every fourth call chooses a tool and is scored (plans keep matrices and lexicons); the rest answer.
    if menu % 4:
        return {"type": "text", "content": "done"}
    return {"type": "tool_call", "id": "call", "name": f"tool_{menu}_0", "arguments": {}}
# A small tool index: its vectors are bounded on their own (max_tools), and are not what is measured.
check = ToolChoiceCheck(tool_index=ToolIndex(cached(HashingEmbedder()), max_tools=4096))
# The ledger's facts (64 MiB by default) are bounded by their own setting: kept small here.
options = ProcessorOptions(schedule_delay_millis=10, max_fact_bytes=8 * 1024 * 1024)
processor = ShapecheckSpanProcessor(SpanProcessor(), checks=[check], options=options)
provider = TracerProvider(shutdown_on_exit=False)
provider.add_span_processor(processor)
tracer = provider.get_tracer("tests.memory")
words = " ".join(f"word{k}" for k in range(300))
caches = {
    "parse": _genai._cached_tool_definitions,
    "readings": _subjects._readings,
    "plans": check._plans,
    "lexicons": _lexical.lexicons,
}
start, peak, worst = rss(), 0, dict.fromkeys(caches, 0)
for menu in range(menus):
    definitions = [
        {"name": f"tool_{menu}_{j}", "description": f"Look up record {j} of catalogue {menu}: {words}"}
        for j in range(tools)
    ]
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "m",
        "gen_ai.tool.definitions": json.dumps(definitions),
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": f"question {menu}"}]}]
        ),
        "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [output(menu)]}]),
    }
    with tracer.start_as_current_span("chat m", context=Context(), attributes=attributes):
        pass
    if menu % 25 == 24:
        assert provider.force_flush(60_000)
        peak = max(peak, rss())
        for name, cache in caches.items():
            worst[name] = max(worst[name], cache.nbytes)
assert provider.force_flush(60_000)
held = alive()
evaluated = processor.counts().evaluated
scored = check.summary().scored
for cache in (*caches.values(), _genai._cached_messages):
    cache.clear()
check.clear()
gc.collect()
ctypes.CDLL("libc.so.6").malloc_trim(0)
print(json.dumps({
    "start": start, "peak": peak, "cleared": rss(), "alive_built": held, "alive_cleared": alive(),
    "worst": worst, "bounds": {name: cache.max_bytes for name, cache in caches.items()},
    "evaluated": evaluated, "scored": scored,
}))
provider.shutdown()
"""


def test_distinct_menus_are_held_to_the_cache_bounds_and_freed_by_clearing() -> None:
    """800 distinct 100-tool menus (about 180 MB parsed): RSS bounded, nothing left alive after clearing."""
    result = json.loads(run_fresh(_CHILD, str(MENUS), str(TOOLS_PER_MENU)).strip().splitlines()[-1])
    print(result)
    assert result["evaluated"] == MENUS
    assert result["scored"] > 0
    for name, worst in result["worst"].items():
        assert 0 < worst <= result["bounds"][name], name
    assert result["peak"] - result["start"] < PEAK_GROWTH_BOUND_MIB * MIB
    assert result["alive_built"] < MENUS * TOOLS_PER_MENU // 4
    assert result["alive_cleared"] == 0
    assert result["cleared"] - result["start"] < CLEARED_GROWTH_BOUND_MIB * MIB

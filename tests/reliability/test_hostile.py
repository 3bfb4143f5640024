"""Hostile telemetry through the whole processor: deeply nested JSON, 10 MB strings, extreme and non-finite
numbers, invalid UTF-8, a 100 000-tool menu, and ids that loop.

Each case runs one agent turn carrying the hostile values, then an ordinary turn, through the processor
with every built-in check. The readers' own robustness is tested in ``tests/readers``; here the point
is the processor around them: the application's thread stays fast, evaluation ends in bounded time and
memory, no check fails, every span is forwarded exactly once, the enriched copies encode as OTLP
whenever the originals do, and the ordinary turn after is still evaluated.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags

from otel_shapecheck import (
    ConformanceCheck,
    FiguresCheck,
    HashingEmbedder,
    ProcessorCounts,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck._attributes import (
    FIGURES_CHECKED,
    TOOL_CHOICE_MARGIN,
    TOOL_CHOICE_OFFERED_COUNT,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.checks.tool_choice._labels import SKIP_MENU_TOO_LARGE
from otel_shapecheck.pipeline._options import ProcessorOptions

from .fresh_process import run_fresh
from .telemetry import ANSWER, IdRecorder, agent_turn, chat_attributes, messages, tool_attributes

APPLICATION_BOUND_SECONDS = 1.5
"""Longest one span end may take on the application's thread, whatever it carries."""
EVALUATION_BOUND_SECONDS = 120.0
"""Longest the worker may take for one hostile turn (the 100 000-tool menu is the slowest case)."""
RSS_GROWTH_BOUND_BYTES = 600 * 1024 * 1024
"""Resident growth allowed while one hostile turn is evaluated (inputs of 10 MB are held several times:
by the application's span, by the parsed value, and by the enriched copy)."""
TEN_MB = 10 * 1024 * 1024


def _rss_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@contextmanager
def peak_rss_growth() -> Iterator[list[int]]:
    """Sample RSS every 20 ms while the block runs; yields a one-item list that ends up with the growth."""
    growth = [0]
    start = _rss_bytes()
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.02):
            growth[0] = max(growth[0], _rss_bytes() - start)

    thread = threading.Thread(target=sample, name="rss-sampler", daemon=True)
    thread.start()
    try:
        yield growth
    finally:
        stop.set()
        thread.join()
        growth[0] = max(growth[0], _rss_bytes() - start)


@dataclass
class Outcome:
    """What happened to one hostile turn followed by an ordinary one."""

    longest_end: float
    evaluation_seconds: float
    flushed: bool
    rss_growth: int
    counts: ProcessorCounts
    originals: list[ReadableSpan]
    forwarded: list[ReadableSpan]
    forwarded_ids: IdRecorder


def _hostile_turn(chat: Mapping[str, Any], tool_result: Any, answer: str, provider: TracerProvider) -> float:
    """Agent span, chat requesting a tool (with ``chat`` attributes), the tool, the answer; longest end."""
    tracer = provider.get_tracer("tests.hostile")
    longest = 0.0
    request = [{"type": "tool_call", "id": "call_1", "name": "get_capacity", "arguments": {}}]
    root = tracer.start_span("invoke_agent storage", context=Context())
    context = trace.set_span_in_context(root, Context())
    spans = [
        tracer.start_span(
            "chat gpt-4o-mini", context=context, attributes={**chat_attributes(request, "tool_calls"), **chat}
        ),
        tracer.start_span(
            "execute_tool get_capacity", context=context, attributes=tool_attributes("call_1", tool_result)
        ),
        tracer.start_span(
            "chat gpt-4o-mini",
            context=context,
            attributes=chat_attributes([{"type": "text", "content": answer}]),
        ),
        root,
    ]
    for span in spans:
        started = time.perf_counter()
        span.end()
        longest = max(longest, time.perf_counter() - started)
    return longest


def run_hostile(
    chat: Mapping[str, Any] | None = None,
    tool_result: Any = "{}",
    answer: str = ANSWER,
    max_slot_chars: int | None = None,
) -> Outcome:
    """One hostile turn and one ordinary turn through the processor with every built-in check.

    ``max_slot_chars`` raises (or lowers) the tool-choice check's context slots from their default.
    """
    memory = InMemorySpanExporter()
    forwarded = IdRecorder(SimpleSpanProcessor(memory))
    originals = IdRecorder(keep=lambda span: True)
    processor = ShapecheckSpanProcessor(
        forwarded,
        checks=[
            ToolChoiceCheck(HashingEmbedder(), max_slot_chars=max_slot_chars),
            ConformanceCheck(),
            FiguresCheck(),
        ],
        options=ProcessorOptions(schedule_delay_millis=20),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(originals)
    try:
        with peak_rss_growth() as growth:
            longest = _hostile_turn(chat or {}, tool_result, answer, provider)
            agent_turn(provider.get_tracer("tests.hostile"), 1)
            started = time.monotonic()
            flushed = processor.force_flush(int(EVALUATION_BOUND_SECONDS * 1000))
            evaluation = time.monotonic() - started
        counts = processor.counts()
    finally:
        provider.shutdown()
    return Outcome(
        longest,
        evaluation,
        flushed,
        growth[0],
        counts,
        originals.kept,
        list(memory.get_finished_spans()),
        forwarded,
    )


def _encodes(spans: list[ReadableSpan]) -> bool:
    try:
        encode_spans(spans)
    except Exception:
        return False
    return True


def assert_survived(outcome: Outcome) -> None:
    """The properties every hostile case must keep."""
    assert outcome.longest_end < APPLICATION_BOUND_SECONDS
    assert outcome.flushed, f"evaluation did not finish in {EVALUATION_BOUND_SECONDS} s"
    assert outcome.evaluation_seconds < EVALUATION_BOUND_SECONDS
    assert outcome.rss_growth < RSS_GROWTH_BOUND_BYTES
    assert outcome.counts.errors == ()
    assert outcome.forwarded_ids.duplicates() == {}
    assert outcome.forwarded_ids.ids() == {span.context.span_id for span in outcome.originals if span.context}
    for original in outcome.originals:
        (copy,) = [span for span in outcome.forwarded if span.context == original.context]
        if _encodes([original]):
            assert _encodes([copy]), f"the enriched copy of {original.name!r} no longer encodes as OTLP"
    ordinary_trace = outcome.originals[-1].context.trace_id if outcome.originals[-1].context else None
    assert any(
        FIGURES_CHECKED in (span.attributes or {})
        for span in outcome.forwarded
        if span.context is not None and span.context.trace_id == ordinary_trace
    ), "the ordinary turn after the hostile one was not evaluated"


def _nested_list(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _letters(index: int) -> str:
    """``a``, ``b``, …, ``z``, ``ba``, …: a word per row that no other row carries."""
    letters = ""
    while True:
        letters += chr(ord("a") + index % 26)
        index //= 26
        if not index:
            return letters


def _menu(size: int) -> dict[str, Any]:
    """A chat offering ``size`` tools and choosing one of them."""
    tools = [
        {"type": "function", "name": f"tool_{i}", "description": f"Operate on record kind {i}"}
        for i in range(size)
    ]
    request = [{"type": "tool_call", "id": "call_1", "name": "tool_5", "arguments": {}}]
    return {
        "chat": {
            "gen_ai.tool.definitions": json.dumps(tools),
            "gen_ai.output.messages": messages("assistant", request, "tool_calls"),
        }
    }


def _declared_output_tools(size: int) -> dict[str, Any]:
    """A ``size``-tool menu whose call declares as many output tools (pydantic-ai's request parameters)."""
    case = _menu(size)
    outputs = [{"name": f"final_result_{i}"} for i in range(size)]
    case["chat"]["model_request_parameters"] = json.dumps({"output_tools": outputs})
    return case


def _long_space_run(spaces: int) -> dict[str, Any]:
    """Two of three tools chosen for a request with a run of ``spaces`` spaces, its slot raised to hold it.

    Two chosen tools have the request split into clauses; the run ends in no conjunction.
    """
    tools = [
        {"type": "function", "name": name, "description": description}
        for name, description in (
            ("book_hotel", "Book a hotel room"),
            ("book_flight", "Book a flight"),
            ("send_email", "Send an email"),
        )
    ]
    request = "Book a hotel in Rome" + " " * spaces + "for two nights and book a flight to Rome."
    chosen = [
        {"type": "tool_call", "id": f"call_{i}", "name": name, "arguments": {}}
        for i, name in enumerate(("book_hotel", "book_flight"))
    ]
    return {
        "chat": {
            "gen_ai.tool.definitions": json.dumps(tools),
            "gen_ai.input.messages": messages("user", [{"type": "text", "content": request}]),
            "gen_ai.output.messages": messages("assistant", chosen, "tool_calls"),
        },
        "max_slot_chars": 2 * spaces,
    }


HOSTILE_CASES: dict[str, dict[str, Any]] = {
    "deeply-nested-json": {
        "chat": {
            "gen_ai.input.messages": _nested_list(100_000),
            "gen_ai.output.messages": _nested_object(100_000),
            "gen_ai.tool.definitions": _nested_list(100_000),
        },
        "tool_result": _nested_object(100_000),
    },
    "nested-just-below-the-recursion-limit": {
        "chat": {"gen_ai.input.messages": json.dumps([{"role": "user", "parts": _nested_list(900)}])},
        "tool_result": json.dumps({"rows": json.loads(_nested_list(900))}),
    },
    "ten-megabyte-strings": {
        "chat": {
            "gen_ai.input.messages": messages("user", [{"type": "text", "content": "x" * TEN_MB}]),
            "gen_ai.system_instructions": "y" * TEN_MB,
        },
        "tool_result": json.dumps(
            {"rows": [{"pool": f"p{i}", "usable_tb": i * 1.5} for i in range(400_000)]}
        ),
        "answer": "".join(f"Pool {i} holds {i * 1.5} TB. " + "z" * 80 for i in range(100_000)),
    },
    "a-hundred-thousand-figures-over-a-table": {
        # its first 10 000 distinct figures (the answer bound) are left to the extended derivations
        "tool_result": json.dumps(
            [
                ["", "2019", "2018"],
                *([f"Item {i} revenue", f"{100 + i}.5", f"{90 + i}.5"] for i in range(300)),
            ],
        ),
        "answer": "".join(f"Item {i % 300} revenue grew {i}.25% from 2018 to 2019. " for i in range(100_000)),
    },
    "figures-after-a-ten-megabyte-sentence": {
        # each figure's sentence is read with the ones before it: the long one once, not once per figure
        "tool_result": json.dumps([["", "2019", "2018"], ["Revenue", "120.5", "110.2"]]),
        "answer": "revenue " * (TEN_MB // 8)
        + ". "
        + " ".join(f"{1000 + i}.37% growth" for i in range(1_999)),
    },
    "rows-of-distinct-field-names": {
        # each row its own fields: the columns are built in one pass, not one pass of the rows per field
        "tool_result": json.dumps([{f"f{i}_{j}": i + j for j in range(40)} for i in range(5_000)]),
    },
    "numbers-under-a-twenty-kilobyte-key": {
        # a number's path holds its container's path cut to a bound, not a copy of the whole key
        "tool_result": json.dumps({"K" * 20_000: [i + 0.5 for i in range(40_000)]}),
    },
    "ten-megabyte-runs-of-numbers": {
        # one token and one number each ten megabytes long, and one figure written 2.6 million times
        "chat": {"gen_ai.system_instructions": "1" + ",000" * (TEN_MB // 4)},
        "tool_result": "9" * TEN_MB + " and " + "7,000" * (TEN_MB // 5),
        "answer": "12% " * (TEN_MB // 4),
    },
    "sentences-naming-a-word-ten-thousand-rows-share": {
        # each sentence names no row on its own, so it and its six windows of context are each matched to
        # the table: the rows a read can quote, not every row carrying "item" or "revenue" per read
        "tool_result": json.dumps(
            [
                ["", "2019", "2018"],
                *([f"Item {_letters(i)} revenue", f"{i % 4000}.5", f"{i % 4000}.25"] for i in range(9_600)),
            ]
        ),
        "answer": " ".join(f"Item revenue {'and so on ' * 20}grew {i}.37%." for i in range(1000, 3000)),
    },
    "extreme-and-non-finite-numbers": {
        "chat": {
            "gen_ai.usage.input_tokens": math.nan,
            "gen_ai.request.temperature": math.inf,
            "gen_ai.request.top_p": -0.0,
            "gen_ai.request.max_tokens": 2**63 - 1,
            "gen_ai.response.finish_reasons": (str(math.nan),),
        },
        "tool_result": '{"rows": [{"a": 1e308, "b": -0, "c": NaN, "d": Infinity, "e": -1e309, "f": 1e-400}]}',
        "answer": "We have 1e308 TB, -0 TB, NaN TB, inf %, 1.7976931348623157e308 GB and 1e-400 ms.",
    },
    "invalid-utf8-content": {
        "chat": {
            "gen_ai.input.messages": b"\xff\xfe not utf-8 \xc3\x28",
            "gen_ai.output.messages": messages(
                "assistant", [{"type": "text", "content": "caf\udce9 1200 TB"}]
            ),
        },
        "tool_result": '{"cluster": "ly\udcf6n", "usable_tb": 1200}',
        "answer": "The ly\udcf6n cluster has 1200 TB usable.",
    },
    "largest-scored-menu": _menu(1024),
    "twenty-thousand-tool-menu": _menu(20_000),
    # every tool of the menu is looked up among the declared output tools, not compared with each
    "fifty-thousand-tools-and-declared-output-tools": _declared_output_tools(50_000),
    # the clause split reads a long run of spaces once, not once from each of its spaces
    "a-long-space-run-in-a-raised-context-slot": _long_space_run(200_000),
}


@pytest.mark.parametrize("case", list(HOSTILE_CASES))
def test_hostile_turn_is_survived(case: str) -> None:
    """Bounded time and memory, no failed check, every span forwarded once, the next turn still evaluated."""
    outcome = run_hostile(**HOSTILE_CASES[case])
    assert_survived(outcome)
    if case == "largest-scored-menu":
        scored = [
            span.attributes for span in outcome.forwarded if TOOL_CHOICE_MARGIN in (span.attributes or {})
        ]
        assert 1024 in [attributes[TOOL_CHOICE_OFFERED_COUNT] for attributes in scored if attributes]
    if case == "twenty-thousand-tool-menu":
        menus = [
            span.attributes.get(TOOL_CHOICE_OFFERED_COUNT) for span in outcome.forwarded if span.attributes
        ]
        assert 20_000 in menus


_FIGURES_PEAK = """
import json, resource, sys
from otel_shapecheck._model import ToolResult
from otel_shapecheck.checks.figures._findings import check_figures
content = sys.stdin.read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
check_figures("We have 12345.25 TB and 7.5%.", [ToolResult(content)])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)
"""
FIGURES_PEAK_BOUND_BYTES = 200 * 1024 * 1024
"""Peak resident growth allowed while one figures check reads a hostile tool result of up to 10 MB."""


def figures_peak_growth(content: str) -> int:
    """Peak resident growth (``ru_maxrss``, so no sampling can miss a spike) of a fresh process while
    the figures check reads ``content`` as a tool result, after the content is held."""
    return (
        int(run_fresh(_FIGURES_PEAK, stdin=content, timeout=EVALUATION_BOUND_SECONDS)) * 1024
    )  # KiB on Linux


def _deep_long_keys(depth: int, key_chars: int, numbers: int) -> dict[str, Any]:
    """Objects ``depth`` deep, each under a key of ``key_chars``, around a list of ``numbers`` numbers."""
    node: Any = [i + 0.5 for i in range(numbers)]
    for level in range(depth):
        node = {"k" * key_chars + str(level): node}
    return dict(node)


@pytest.mark.parametrize(
    "content",
    [
        # a regular expression repeated over each character of a string kept ~115 bytes per character
        pytest.param('{"rows": [1, "' + "x" * TEN_MB, id="unterminated-ten-megabyte-string"),
        pytest.param('{"rows": [1, "' + "\\n" * (TEN_MB // 2), id="unterminated-string-of-escapes"),
        # every number's path copied the key above it
        pytest.param(
            json.dumps({"K" * 100_000: [i + 0.5 for i in range(2_500)]}), id="numbers-under-a-long-key"
        ),
        pytest.param(json.dumps(_deep_long_keys(40, 250, 50_000)), id="numbers-under-deep-long-keys"),
    ],
)
def test_figures_peak_memory_is_bounded(content: str) -> None:
    """A hostile tool result costs the figures check bounded memory, measured at its true peak."""
    assert figures_peak_growth(content) < FIGURES_PEAK_BOUND_BYTES


def test_hundred_thousand_tool_menu_is_scored_within_the_memory_bound() -> None:
    """A 100 000-tool menu (the largest scored by default) is scored through its index within the bounds."""
    outcome = run_hostile(**_menu(100_000))
    assert_survived(outcome)
    scored = [span.attributes for span in outcome.forwarded if TOOL_CHOICE_MARGIN in (span.attributes or {})]
    assert 100_000 in [attributes.get(TOOL_CHOICE_OFFERED_COUNT) for attributes in scored]


def test_menu_past_the_tool_bound_is_reported_not_scored() -> None:
    """One tool past ``max_menu_tools`` (100 000): within the hostile bounds, not scored, and says why."""
    outcome = run_hostile(**_menu(100_001))
    assert_survived(outcome)
    skipped = [span.attributes.get(TOOL_CHOICE_SKIPPED) for span in outcome.forwarded if span.attributes]
    assert SKIP_MENU_TOO_LARGE in skipped


def test_lone_surrogate_in_a_tool_name_costs_only_that_span() -> None:
    """A tool name with an undecodable byte (a lone surrogate, from ``surrogateescape``) fails no check."""
    name = "get_capacit\udcff"
    outcome = run_hostile(
        chat={
            "gen_ai.tool.definitions": json.dumps(
                [{"type": "function", "name": name}, {"type": "function", "name": "b"}]
            ),
            "gen_ai.output.messages": messages(
                "assistant",
                [{"type": "tool_call", "id": "call_1", "name": name, "arguments": {}}],
                "tool_calls",
            ),
        }
    )
    assert_survived(outcome)


def _context(trace_id: int, span_id: int) -> SpanContext:
    return SpanContext(trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _chat_span(trace_id: int, span_id: int, parent_id: int | None) -> ReadableSpan:
    """A chat span that does not name its tool calls, so it waits for its parent's end."""
    now = time.time_ns()
    return ReadableSpan(
        name="chat gpt-4o-mini",
        context=_context(trace_id, span_id),
        parent=None if parent_id is None else _context(trace_id, parent_id),
        attributes=chat_attributes(None),
        start_time=now,
        end_time=now + 1000,
    )


@pytest.mark.parametrize(
    "chain",
    [
        pytest.param([(0xA, 0xA)], id="own-parent"),
        pytest.param([(0xA, 0xB), (0xB, 0xA)], id="two-span-loop"),
        pytest.param([(0xA, 0xB), (0xB, 0xC), (0xC, 0xA)], id="three-span-loop"),
        pytest.param([(0xA, 0xB), (0xA, 0xB)], id="same-span-id-twice"),
        pytest.param([(0xA, 0xB), (0xC, 0xB), (0xB, 0xA)], id="siblings-under-their-own-child"),
    ],
)
def test_looping_parent_ids_are_forwarded_once_and_never_hang(chain: list[tuple[int, int]]) -> None:
    """Spans whose parent chains loop (or that claim their own id) are each forwarded exactly once."""
    forwarded = IdRecorder()
    processor = ShapecheckSpanProcessor(
        forwarded,
        checks=[ToolChoiceCheck(HashingEmbedder()), FiguresCheck()],
        options=ProcessorOptions(max_wait_millis=300, schedule_delay_millis=20),
    )
    spans = [_chat_span(0x5EED, span_id, parent_id) for span_id, parent_id in chain]
    started = time.perf_counter()
    for span in spans:
        processor.on_end(span)
    ended = time.perf_counter() - started
    time.sleep(0.4)  # past max_wait: spans whose parent never ends are released as incomplete
    assert processor.force_flush(5000)
    processor.shutdown()
    counts = processor.counts()
    assert ended < APPLICATION_BOUND_SECONDS
    assert len(forwarded) == len(spans)
    assert counts.errors == ()
    assert counts.seen == len(spans)

"""The hot path's shortcuts: the SDK fields it reads, the downstream hooks it passes on, no cyclic garbage.

``on_start`` and ``on_end`` read a span through its fields rather than its properties, compute a
fact's size before the ledger's lock, and skip the downstream's no-op hooks; these tests pin the
SDK layout those shortcuts rely on and show the observable behaviour did not change.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.attributes import BoundedAttributes
from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, TraceFlags
from opentelemetry.util.genai.handler import TelemetryHandler

from otel_shapecheck import ShapecheckSpanProcessor
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.otlp._sdk_fields import HAS_ON_ENDING
from otel_shapecheck.pipeline._facts import approximate_bytes
from otel_shapecheck.pipeline._processor import _AFTER_TOOL_SPAN_NAMES, EXECUTE_TOOL_SPAN_PREFIX
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS, classify_span

from .agent import tool_turn


class TestSdkFields:
    """The fields the hot path reads hold what the public properties return."""

    def test_an_ended_span_keeps_its_fields_behind_its_properties(self) -> None:
        """``_context``, ``_parent``, ``_name``, ``_events`` and ``_attributes._dict`` back the properties."""
        ended: list[ReadableSpan] = []

        class Keep(SpanProcessor):
            def on_end(self, span: ReadableSpan) -> None:
                ended.append(span)

        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(Keep())
        tracer = provider.get_tracer("test")
        with tracer.start_as_current_span("parent"), tracer.start_as_current_span("child") as child:
            child.set_attribute("k", "v")
            child.add_event("e")
        span = ended[0]
        assert type(span) is ReadableSpan
        assert span._context is span.context and span._parent is span.parent
        assert span._name == span.name == "child"
        assert tuple(span._events) == span.events and len(span._events) == 1
        assert type(span._attributes) is BoundedAttributes
        assert span._attributes._dict == dict(span.attributes or {}) == {"k": "v"}

    def test_a_span_context_is_a_tuple_of_its_ids(self) -> None:
        """Items 0, 1 and 2 of a ``SpanContext`` are its trace id, span id and remote flag."""
        context = SpanContext(7, 9, True, TraceFlags(1))
        assert (context[0], context[1], context[2]) == (context.trace_id, context.span_id, context.is_remote)

    @given(st.text(max_size=20))
    def test_the_tool_name_test_is_a_prefix_test(self, suffix: str) -> None:
        """Two string comparisons answer as ``startswith`` does, for names with and without the prefix."""
        for name in (EXECUTE_TOOL_SPAN_PREFIX + suffix, suffix, EXECUTE_TOOL_SPAN_PREFIX[:-1] + suffix):
            assert (EXECUTE_TOOL_SPAN_PREFIX <= name < _AFTER_TOOL_SPAN_NAMES) == name.startswith(
                EXECUTE_TOOL_SPAN_PREFIX
            )


_VALUES = st.one_of(
    st.none(),
    st.text(max_size=8),
    st.integers(),
    st.booleans(),
    st.floats(allow_nan=False),
    st.tuples(st.text(max_size=8)),
    st.lists(st.one_of(st.text(max_size=8), st.integers()), max_size=20).map(tuple),
)


class TestSameAnswers:
    """The hot path's fast forms answer as the general forms do."""

    @given(
        st.dictionaries(
            st.sampled_from(sorted(CLASSIFYING_KEYS) + ["other.key"]),
            st.one_of(
                _VALUES, st.sampled_from(["chat", "execute_tool", "LLM", "TOOL", "tool", "tools/call", "x"])
            ),
        ),
        st.sampled_from(["chat x", "execute_tool get", "GET /"]),
    )
    def test_a_plain_dict_classifies_as_the_sdk_mapping_does(
        self, attributes: dict[str, object], name: str
    ) -> None:
        """``classify_span`` reads a plain dict directly and any other mapping by its keys: same class."""
        assert classify_span(name, attributes) == classify_span(name, _Mapping(attributes))

    @given(
        st.dictionaries(st.text(max_size=6), _VALUES, max_size=10),
        st.one_of(st.none(), st.dictionaries(st.text(max_size=4), _VALUES, max_size=20), _VALUES),
    )
    def test_the_size_estimate_takes_exact_types_as_the_general_walk_does(
        self, attributes: dict[str, object], body: object
    ) -> None:
        """Text, numbers and tuples counted by exact type give the ABC-based walk's estimate."""
        assert approximate_bytes(attributes, body) == approximate_bytes(_Mapping(attributes), body)


class _Mapping(BoundedAttributes):
    """The same attributes behind the SDK mapping type (read key by key, never as a plain dict)."""

    def __init__(self, attributes: dict[str, object]) -> None:
        super().__init__()
        self._dict = dict(attributes)  # type: ignore[assignment]  # unvalidated on purpose

    def items(self) -> Iterator[tuple[str, object]]:  # type: ignore[override]
        return iter(list(self._dict.items()))

    def values(self) -> Iterator[object]:  # type: ignore[override]
        return iter([_Boxed(value) if type(value) is str else value for value in self._dict.values()])


class _Boxed(str):
    """A ``str`` subclass: not ``type(value) is str``, so the general branch measures it."""


class _HookRecorder(SpanProcessor):
    """A downstream whose ``on_start`` and ``_on_ending`` do something."""

    def __init__(self) -> None:
        self.starts = 0
        self.endings = 0
        self.ends = 0

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.starts += 1

    def _on_ending(self, span: Span) -> None:
        self.endings += 1

    def on_end(self, span: ReadableSpan) -> None:
        self.ends += 1


class TestDownstreamHooks:
    """The SDK's no-op hooks are skipped; every other downstream still gets every hook."""

    def test_a_downstream_with_its_own_hooks_gets_each_of_them(self) -> None:
        """``on_start`` and ``_on_ending`` reach a downstream that implements them, once per span."""
        downstream = _HookRecorder()
        processor = ShapecheckSpanProcessor(downstream, checks=[])
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        for _ in range(3):
            provider.get_tracer("test").start_span("GET /").end()
        processor.shutdown()
        # An SDK without the ending hook (before 1.40) calls no processor's _on_ending.
        assert (downstream.starts, downstream.endings, downstream.ends) == (3, 3 if HAS_ON_ENDING else 0, 3)

    def test_hooks_set_on_the_instance_are_passed_on(self) -> None:
        """A batch processor whose instance carries its own ``on_start`` still gets it."""
        started: list[Span] = []
        downstream = BatchSpanProcessor(InMemorySpanExporter())
        downstream.on_start = lambda span, parent_context=None: started.append(span)  # type: ignore[method-assign]
        processor = ShapecheckSpanProcessor(downstream, checks=[])
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        provider.get_tracer("test").start_span("GET /").end()
        processor.shutdown()
        assert len(started) == 1

    @pytest.mark.parametrize("kind", [BatchSpanProcessor, SimpleSpanProcessor])
    def test_the_sdk_processors_hooks_are_known_no_ops(self, kind: type[SpanProcessor]) -> None:
        """The SDK's own processors are the ones whose ``on_start`` and ``_on_ending`` are skipped."""
        processor = ShapecheckSpanProcessor(kind(InMemorySpanExporter()), checks=[])  # type: ignore[call-arg]
        try:
            assert not processor._downstream_starts and not processor._downstream_endings
        finally:
            processor.shutdown()


class TestNoCyclicGarbage:
    """Nothing the processor does per span is left for the cycle collector."""

    def test_agent_turns_through_every_check_leave_no_reference_cycles(self) -> None:
        """After 60 agent turns (plain, GenAI and tool spans) evaluated by the built-in checks, a
        collection finds no more unreachable objects than after the first turns (one-off set-up)."""
        exporter = InMemorySpanExporter()
        processor = ShapecheckSpanProcessor(SimpleSpanProcessor(exporter), checks=build_checks("hashing"))
        provider = TracerProvider(shutdown_on_exit=False)
        provider.add_span_processor(processor)
        handler = TelemetryHandler(tracer_provider=provider)
        tracer = provider.get_tracer("test")

        def turns(count: int) -> int:
            gc.collect()
            gc.disable()
            try:
                for _ in range(count):
                    tool_turn(handler, tracer)
                    with tracer.start_as_current_span("GET /health"):
                        pass
                assert processor.force_flush(10_000)
                return gc.collect()
            finally:
                gc.enable()

        try:
            turns(5)  # first use: the checks build their caches, classes are made
            assert turns(60) == 0
            assert processor.counts().evaluated >= 2 * 65
        finally:
            processor.shutdown()


@settings(deadline=None)
@given(st.integers(0, 3))
def test_on_end_forwards_a_plain_span_exactly_once(extra: int) -> None:
    """A plain span is counted as seen and forwarded untouched, the counts adding up as before."""
    exporter = InMemorySpanExporter()
    processor = ShapecheckSpanProcessor(SimpleSpanProcessor(exporter), checks=[])
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    for index in range(1 + extra):
        provider.get_tracer("test").start_span(f"GET /{index}").end()
    counts = processor.counts()
    processor.shutdown()
    assert counts.seen == counts.forwarded_untouched == 1 + extra
    assert len(exporter.get_finished_spans()) == 1 + extra


def test_the_public_processor_is_a_span_processor_with_a_counts_snapshot() -> None:
    """Its public surface is the SpanProcessor interface and ``counts()``, a frozen snapshot: no ledger,
    counters or internals to write through."""
    public = {name for name in dir(ShapecheckSpanProcessor) if not name.startswith("_")}
    assert public == {"on_start", "on_end", "force_flush", "shutdown", "counts"}
    processor = ShapecheckSpanProcessor(SimpleSpanProcessor(InMemorySpanExporter()), checks=[])
    try:
        counts = processor.counts()
        with pytest.raises(AttributeError):
            counts.seen = 1  # type: ignore[misc]
    finally:
        processor.shutdown()

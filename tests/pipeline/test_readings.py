"""The readings of ended spans kept for later releases of their trace: bounded by count and by bytes."""

from __future__ import annotations

import json

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_shapecheck.pipeline._subjects import _Readings
from otel_shapecheck.readers._classify import classify_span
from otel_shapecheck.readers._parse_cache import parsed_bytes


def _chats(menus: list[str]) -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests.readings")
    for menu in menus:
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.tool.definitions": menu}
        with tracer.start_as_current_span("chat m", attributes=attributes):
            pass
    provider.shutdown()
    return list(memory.get_finished_spans())


def _menu(number: int, tools: int = 200) -> str:
    return json.dumps([{"name": f"tool_{number}_{j}", "description": "d" * 100} for j in range(tools)])


def _read_all(readings: _Readings, spans: list[ReadableSpan]) -> None:
    for span in spans:
        assert readings.read(span, classify_span(span.name, span.attributes or {})) is not None


def test_distinct_menus_are_dropped_past_the_byte_bound() -> None:
    """Each reading of a distinct 200-tool menu holds about 60 kB: a 1 MiB bound keeps a few of 100."""
    readings = _Readings(max_bytes=1 << 20)
    _read_all(readings, _chats([_menu(number) for number in range(100)]))
    assert readings.nbytes <= readings.max_bytes
    assert 1 < len(readings) < 40


def test_a_menu_shared_by_many_readings_is_counted_once() -> None:
    """Readings of one menu string share one parsed tuple, so only the first reading pays for it."""
    menu = _menu(0)
    spans = _chats([menu] * 50)
    readings = _Readings(max_bytes=1 << 30)
    _read_all(readings, spans)
    first = readings.read(spans[0], classify_span(spans[0].name, spans[0].attributes or {}))
    assert first is not None and first.offered_tools is not None
    assert len(readings) == 50
    assert readings.nbytes < parsed_bytes(first.offered_tools) + 50 * 4 * len(menu)
    readings.clear()
    assert (len(readings), readings.nbytes) == (0, 0)


def test_the_count_bound_still_holds_and_bytes_follow_the_dropped_readings() -> None:
    readings = _Readings(max_entries=3)
    spans = _chats([_menu(number, tools=5) for number in range(10)])
    _read_all(readings, spans)
    assert len(readings) == 3
    fresh = _Readings()
    _read_all(fresh, spans[-3:])
    assert readings.nbytes == fresh.nbytes


def test_a_reading_is_dropped_once_its_span_is_freed() -> None:
    """A freed span's reading can never match again: the next read drops it (and what it parsed)
    instead of keeping it until thousands of later readings push it out."""
    readings = _Readings()
    spans = _chats([_menu(number, tools=5) for number in range(3)])
    _read_all(readings, spans)
    assert len(readings) == 3
    kept = spans[2]
    del spans
    _read_all(readings, [kept])
    assert len(readings) == 1
    fresh = _Readings()
    _read_all(fresh, [kept])
    assert readings.nbytes == fresh.nbytes


def test_a_freed_spans_reading_goes_and_a_live_ones_stays() -> None:
    """Dropping a freed span's reading leaves a live span's in place, even under the freed one's id."""
    readings = _Readings()
    first = _chats([_menu(0, tools=5)])
    _read_all(readings, first)
    second = _chats([_menu(1, tools=5)])
    del first
    _read_all(readings, second)  # drops the first reading, keeps its own
    _read_all(readings, second)
    assert len(readings) == 1

"""The parse cache: bounded by the estimated bytes of its keys and parsed values, not by key characters."""

from __future__ import annotations

import gc
import json
import tracemalloc

import pytest

from otel_shapecheck._model import OfferedTool
from otel_shapecheck.readers._genai import _messages, _tool_definitions
from otel_shapecheck.readers._parse_cache import ParseCache, parsed_bytes


def _menu(number: int, tools: int, description: str = "") -> str:
    return json.dumps([{"name": f"t{number}_{j}", "description": description or None} for j in range(tools)])


def _traced_bytes(parse, texts):  # type: ignore[no-untyped-def]
    """The bytes the parsed values of ``texts`` hold, by tracemalloc, and the values."""
    parse(texts[0])  # the parser's own first-use allocations are not the values'
    gc.collect()
    tracemalloc.start()
    values = [parse(text) for text in texts]
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held, values


@pytest.mark.parametrize(
    ("parse", "make"),
    [
        (_tool_definitions, lambda i: _menu(i, 5)),
        (_tool_definitions, lambda i: _menu(i, 1200)),
        (_tool_definitions, lambda i: _menu(i, 100, "Get the current weather forecast for a city")),
        (
            _messages,
            lambda i: json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"question {i}"}]}]),
        ),
    ],
    ids=["five-tools", "1200-named-tools", "described-tools", "messages"],
)
def test_parsed_bytes_is_within_a_factor_of_what_the_values_hold(parse, make) -> None:  # type: ignore[no-untyped-def]
    """The estimate is within a factor of two, either way, of what tracemalloc sees allocated."""
    held, values = _traced_bytes(parse, [make(i) for i in range(200)])
    estimated = sum(map(parsed_bytes, values))
    assert held / 2 <= estimated <= 2 * held


def test_a_long_menu_is_estimated_from_a_sample() -> None:
    """A 100 000-tool menu is estimated from its sample, close to 1 000 times a 100-tool one."""
    small = tuple(OfferedTool(f"tool_{j:06d}") for j in range(100))
    large = tuple(OfferedTool(f"tool_{j:06d}") for j in range(100_000))
    assert parsed_bytes(large) == pytest.approx(1000 * parsed_bytes(small), rel=0.01)


def test_small_keys_with_large_values_are_bounded_by_the_values() -> None:
    """Short strings that parse into big values: the bytes bound holds what the characters did not."""
    cache: ParseCache[tuple[str, ...]] = ParseCache(
        lambda text: tuple(text * 1000 for _ in range(10)), max_bytes=1 << 20
    )
    for number in range(500):
        cache(f"{number:04d}")
    assert cache.nbytes <= cache.max_bytes
    assert len(cache) < 50  # each value holds about 40 kB: at most 25 fit in 1 MiB
    assert cache("0499") is cache("0499")  # the newest is kept


def test_a_value_too_big_for_the_cache_is_returned_and_not_kept() -> None:
    cache = ParseCache(_tool_definitions, max_bytes=1 << 20)
    cache(_menu(0, 5))
    value = cache(_menu(1, 5000))
    assert value is not None and len(value) == 5000
    assert len(cache) == 1


def test_clear_forgets_every_value_and_its_bytes() -> None:
    cache = ParseCache(_tool_definitions)
    for number in range(10):
        cache(_menu(number, 10))
    assert cache.nbytes > 0
    cache.clear()
    assert (len(cache), cache.nbytes) == (0, 0)

"""The lexicons of recent menus: bounded by count and by their estimated bytes."""

from __future__ import annotations

import gc
import tracemalloc

from otel_shapecheck.checks.tool_choice._lexical import MenuLexicon, _Lexicons


def _menu(number: int, tools: int = 300) -> tuple[str, ...]:
    return tuple(f"look up record {j} of catalogue {number} for the account holder" for j in range(tools))


def test_a_lexicon_estimate_is_within_a_factor_of_what_it_holds() -> None:
    menus = [_menu(number) for number in range(10)]
    MenuLexicon(menus[0])
    gc.collect()
    tracemalloc.start()
    built = [MenuLexicon(menu) for menu in menus]
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held / 2 <= sum(lexicon.nbytes for lexicon in built) <= 2 * held


def test_distinct_menus_are_held_to_the_byte_bound() -> None:
    """Half a megabyte a 300-tool lexicon: a 4 MiB bound keeps a handful of 100 menus, the newest."""
    lexicons = _Lexicons(max_bytes=4 << 20)
    for number in range(100):
        lexicons.get(_menu(number))
    assert 1 < len(lexicons) < 20
    assert lexicons.nbytes <= 4 << 20
    newest = _menu(99)
    assert lexicons.get(newest) is lexicons.get(newest)
    lexicons.clear()
    assert lexicons.nbytes == 0

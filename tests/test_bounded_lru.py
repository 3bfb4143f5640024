"""The one bounded LRU: least recently used out first past its count or byte bound, shared parts once."""

from __future__ import annotations

import threading

from otel_shapecheck._bounded_lru import BoundedLRU


def test_the_least_recently_used_entry_goes_first_past_the_count_bound() -> None:
    kept: BoundedLRU[str, int] = BoundedLRU(max_entries=2, max_bytes=1000)
    kept.put("a", 1, 10)
    kept.put("b", 2, 10)
    assert kept.get("a") == 1  # now the most recent: "b" is the oldest
    kept.put("c", 3, 10)
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (1, None, 3)
    assert (len(kept), kept.nbytes) == (2, 20)


def test_entries_are_dropped_until_the_byte_bound_holds() -> None:
    kept: BoundedLRU[int, int] = BoundedLRU(max_entries=100, max_bytes=100)
    for key in range(10):
        assert kept.put(key, key, 30)
    assert kept.nbytes <= kept.max_bytes
    assert (len(kept), kept.nbytes) == (3, 90)
    assert kept.get(9) == 9 and kept.get(6) is None


def test_a_value_over_half_the_byte_bound_is_not_kept_unless_the_entry_bound_says() -> None:
    kept: BoundedLRU[str, str] = BoundedLRU(max_entries=10, max_bytes=100)
    kept.put("small", "s", 10)
    assert not kept.fits(51)
    assert not kept.put("big", "b", 51)
    assert (kept.get("big"), kept.get("small"), kept.nbytes) == (None, "s", 10)
    oversized: BoundedLRU[str, str] = BoundedLRU(max_entries=10, max_bytes=100, max_entry_bytes=1000)
    oversized.put("small", "s", 10)
    assert oversized.put("big", "b", 500)  # kept alone until the next one comes
    assert (len(oversized), oversized.get("big"), oversized.nbytes) == (1, "b", 500)
    oversized.put("next", "n", 10)
    assert (len(oversized), oversized.nbytes) == (1, 10)
    assert not oversized.put("huge", "h", 1001)


def test_replacing_a_key_counts_its_bytes_once_and_get_answers_the_default() -> None:
    kept: BoundedLRU[str, int | None] = BoundedLRU(max_entries=10, max_bytes=1000)
    kept.put("a", None, 10)
    kept.put("a", None, 25)
    missing = object()
    assert kept.get("a", missing) is None and kept.get("b", missing) is missing
    assert (len(kept), kept.nbytes, kept.hits, kept.misses) == (1, 25, 1, 1)


def test_a_shared_part_counts_once_while_any_entry_holds_it() -> None:
    part = ("a", "shared", "menu")
    kept: BoundedLRU[int, str] = BoundedLRU(max_entries=2, max_bytes=10_000, measure_part=lambda _: 7)
    kept.put(1, "x", 10, part=part, part_nbytes=100)
    assert kept.holds(part)
    kept.put(2, "y", 10, part=part, part_nbytes=100)  # held already: not counted again
    assert kept.nbytes == 120
    kept.put(3, "z", 10)  # entry 1 leaves, entry 2 still holds the part
    assert (kept.nbytes, kept.holds(part)) == (120, True)
    kept.put(4, "w", 10)  # entry 2 leaves with the part's last hold
    assert (kept.nbytes, kept.holds(part)) == (20, False)
    kept.put(5, "v", 10, part=part)  # not measured by the caller: measured by measure_part
    assert kept.nbytes == 10 + 10 + 7


def test_clear_forgets_every_entry_and_its_bytes() -> None:
    kept: BoundedLRU[int, int] = BoundedLRU(max_entries=10, max_bytes=1000)
    kept.put(1, 1, 10, part=(1,), part_nbytes=5)
    kept.clear()
    assert (len(kept), kept.nbytes, kept.get(1), kept.holds((1,))) == (0, 0, None, False)


def test_threads_putting_and_getting_keep_both_bounds_and_an_exact_byte_count() -> None:
    kept: BoundedLRU[int, int] = BoundedLRU(max_entries=50, max_bytes=2_000)
    parts = [(n,) for n in range(7)]

    def work(offset: int) -> None:
        for n in range(2_000):
            key = (n * 7 + offset) % 300
            if kept.get(key) is None:
                kept.put(key, key, 10 + key % 40, part=parts[key % 7], part_nbytes=3)

    threads = [threading.Thread(target=work, args=(offset,)) for offset in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(kept) <= 50 and kept.nbytes <= kept.max_bytes
    held = {key: key for key in range(300) if kept.get(key) is not None}
    held_parts = {key % 7 for key in held}
    assert kept.nbytes == sum(10 + key % 40 for key in held) + 3 * len(held_parts)

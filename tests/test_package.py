"""The package's public surface."""

from __future__ import annotations

import otel_shapecheck


def test_all_is_sorted_and_complete() -> None:
    """``__all__`` lists every public name once, sorted, and each resolves."""
    names = otel_shapecheck.__all__
    assert list(names) == sorted(names)
    assert len(set(names)) == len(names)
    for name in names:
        assert hasattr(otel_shapecheck, name), name

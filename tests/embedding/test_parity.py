"""Parity vectors H1 of the ported reference's embedding cache key: the two-lane FNV-1a content hash."""

from __future__ import annotations

import pytest

from otel_shapecheck.embedding._cache import content_hash


class TestContentHash:
    @pytest.mark.parametrize(
        ("text", "key"),
        [("", "0-811c9dc5cbf29ce4"), ("a", "1-e40c292cc3b6d773"), ("hello", "5-4f9f2cab6e750d18")],
    )
    def test_h1_vectors(self, text: str, key: str) -> None:
        """H1: the two-lane FNV-1a key matches the reference's vectors."""
        assert content_hash(text) == key

    def test_counts_utf16_code_units(self) -> None:
        """A character outside the BMP is two UTF-16 code units, as in the reference's JavaScript."""
        assert content_hash("😀").startswith("2-")
        assert content_hash("x" * 36).startswith("10-")

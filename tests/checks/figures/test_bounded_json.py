"""The bounded JSON reader: under the bound it reads what ``json.loads`` reads, over it a prefix, and
the fold over it is the fold over the whole text, or over the text's first elements once cut."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from benchmarks.bench_figures import answer_with_30_figures, capacity_rows
from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.checks.figures import _fold
from otel_shapecheck.checks.figures._bounded_json import read_bounded_json
from otel_shapecheck.checks.figures._carried import MAX_BASIS_NUMBERS, CarriedPaths
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._fold import (
    BOUNDED_READ_CHARS,
    MAX_NODES,
    MAX_ROWS,
    BasisBuilder,
    _json_prefix,
)

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8)
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=4), children, max_size=6)
    ),
    max_leaves=60,
)
rows_of = st.lists(st.dictionaries(st.sampled_from("abcd"), scalars | json_values, min_size=1), max_size=12)
documents = json_values | rows_of | st.builds(lambda rows: {"data": {"items": rows}, "n": 3}, rows_of)
layouts = st.sampled_from([{}, {"indent": 2}, {"separators": (",", ":")}, {"indent": "\t"}])


def is_prefix(cut: JSONValue, whole: JSONValue) -> bool:
    """Whether ``cut`` is ``whole`` with some containers ending early: each kept element equal but the
    last, which is itself a prefix of its counterpart."""
    if isinstance(whole, list) and isinstance(cut, list):
        kept = len(cut)
        return (
            kept <= len(whole)
            and cut[: kept - 1] == whole[: kept - 1]
            and (not cut or is_prefix(cut[-1], whole[kept - 1]))
        )
    if isinstance(whole, dict) and isinstance(cut, dict):
        keys, whole_keys = list(cut), list(whole)
        return keys == whole_keys[: len(keys)] and all(
            cut[key] == whole[key] or (key == keys[-1] and is_prefix(cut[key], whole[key])) for key in keys
        )
    return cut == whole


def fold_state(builder: BasisBuilder) -> tuple[Any, ...]:
    """Everything a fold records, for comparing two folds."""
    return (
        builder.values,
        list(builder.paths),
        builder.keys,
        builder.derived.values,
        builder.derived.how,
        builder.named,
        builder.marks,
        builder.labels,
        builder.truncated,
    )


def folded(*contents: JSONValue) -> BasisBuilder:
    builder = BasisBuilder(structure=True)
    for content in contents:
        builder.add(content)
    return builder


def folded_whole(monkeypatch: pytest.MonkeyPatch, *contents: JSONValue) -> BasisBuilder:
    """The fold with every JSON text parsed whole, as it was before the bounded reader."""
    with monkeypatch.context() as patched:
        patched.setattr(_fold, "BOUNDED_READ_CHARS", sys.maxsize)
        return folded(*contents)


class TestReaderUnderTheBound:
    @settings(max_examples=300, deadline=None)
    @given(document=documents, layout=layouts)
    def test_reads_what_json_loads_reads(self, document: JSONValue, layout: dict[str, Any]) -> None:
        """With room for every number, any document reads as ``json.loads`` reads it, with no rest."""
        text = json.dumps(document, **layout)
        if text[:1] not in "[{":
            return
        read = read_bounded_json(text, MAX_BASIS_NUMBERS, MAX_NODES, MAX_ROWS)
        assert read is not None and not read.cut
        assert read.value == json.loads(text) and read.rest == ""

    @settings(max_examples=300, deadline=None)
    @given(
        document=documents, cut_at=st.integers(min_value=1), trailing=st.sampled_from(["", " 12 rows", "]"])
    )
    def test_cut_or_malformed_text_reads_as_raw_decode_or_not_at_all(
        self, document: JSONValue, cut_at: int, trailing: str
    ) -> None:
        """Text cut short, or followed by more text, reads as the fold read it before: the JSON value
        it starts with and the text after it, or nothing when it starts with no JSON value."""
        text = json.dumps(document)
        text = text[: cut_at % (len(text) + 1)] + trailing
        if text[:1] not in "[{":
            return
        read = read_bounded_json(text, MAX_BASIS_NUMBERS, MAX_NODES, MAX_ROWS)
        before = _json_prefix(text)
        if read is None:
            assert before == (None, text)
        else:
            assert not read.cut and (read.value, read.rest) == before


@pytest.mark.parametrize(
    "text", ["[0,]", "[0, ]", "[[1], [2],]", '[{"a": 1}, ]', '{"a": [1, 2,]}', '{"a": 1,}']
)
def test_a_trailing_comma_is_not_json(text: str) -> None:
    """``[0,]`` is malformed although what follows its comma, decoded alone, would be an empty array."""
    assert read_bounded_json(text, MAX_BASIS_NUMBERS, MAX_NODES, 0) is None
    assert _json_prefix(text) == (None, text)


class TestReaderOverTheBound:
    @settings(max_examples=300, deadline=None)
    @given(
        document=documents,
        numbers=st.integers(min_value=0, max_value=40),
        nodes=st.integers(min_value=0, max_value=200),
        min_elements=st.integers(min_value=0, max_value=4),
    )
    def test_a_cut_keeps_the_first_elements(
        self, document: JSONValue, numbers: int, nodes: int, min_elements: int
    ) -> None:
        """Under any bounds the value read is the document or, once cut, a prefix of it: containers
        ending after their first elements, every kept element as ``json.loads`` reads it."""
        text = json.dumps(document)
        if text[:1] not in "[{":
            return
        read = read_bounded_json(text, numbers, nodes, min_elements)
        assert read is not None
        if read.cut:
            assert read.rest == "" and is_prefix(read.value, document)
        else:
            assert read.value == json.loads(text)

    def test_stops_after_the_rows_that_fill_the_basis(self) -> None:
        """50 000 rows of 10 numbers are read up to a few more than the 5 000 rows the fold takes."""
        rows = capacity_rows(50_000)
        read = read_bounded_json(json.dumps({"rows": rows}), MAX_BASIS_NUMBERS, MAX_NODES, MAX_ROWS)
        assert read is not None and read.cut and read.rest == ""
        assert isinstance(read.value, dict)
        kept = read.value["rows"]
        assert isinstance(kept, list) and MAX_ROWS < len(kept) < 2 * MAX_ROWS
        assert kept == rows[: len(kept)]

    def test_rows_of_few_numbers_are_read_until_they_fill_the_basis(self) -> None:
        """Rows of one number each are read past the rows folded into columns, until 50 000 numbers."""
        rows = [{"name": f"pool-{index}", "used_tb": index + 0.5} for index in range(80_000)]
        read = read_bounded_json(json.dumps(rows), MAX_BASIS_NUMBERS, MAX_NODES, MAX_ROWS)
        assert read is not None and read.cut and isinstance(read.value, list)
        assert MAX_BASIS_NUMBERS <= len(read.value) < 80_000

    def test_a_boundary_inside_a_string_or_a_nested_list_is_not_taken_for_one(self) -> None:
        """Rows whose strings and nested lists hold ``}, {`` still read as ``json.loads`` reads them."""
        rows = [
            {"note": "}, {" * (index % 3), "parts": [{"x": index}, {"y": "}, {"}], "n": index}
            for index in range(6_000)
        ]
        text = json.dumps({"rows": rows})
        read = read_bounded_json(text, 10**9, 10**9, MAX_ROWS)
        assert read is not None and not read.cut and read.value == json.loads(text)
        cut = read_bounded_json(text, 100, 10**9, MAX_ROWS)
        assert cut is not None and cut.cut and is_prefix(cut.value, json.loads(text))


class TestFoldParity:
    @pytest.mark.parametrize("count", [300, 3_000, 5_000])
    @pytest.mark.parametrize("shape", ["array", "rows", "data.items"])
    def test_under_the_bound_the_fold_is_unchanged(
        self, monkeypatch: pytest.MonkeyPatch, count: int, shape: str
    ) -> None:
        """A result under the bound folds exactly as when it was parsed whole, in every structure note."""
        rows: JSONValue = capacity_rows(count)
        document = {"array": rows, "rows": {"rows": rows}, "data.items": {"data": {"items": rows}}}[shape]
        text = json.dumps(document) + " and 17 more pools"
        assert len(text) >= BOUNDED_READ_CHARS or count == 300
        assert fold_state(folded(text)) == fold_state(folded_whole(monkeypatch, text))

    def test_over_the_bound_the_fold_and_the_verdict_are_unchanged(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """50 000 rows fold to the same basis and verdict as when the whole text was parsed."""
        rows = capacity_rows(50_000)
        text = json.dumps({"rows": rows})
        assert fold_state(folded(text)) == fold_state(folded_whole(monkeypatch, text))
        answer = answer_with_30_figures(rows)
        finding = check_figures(answer, [ToolResult(text)])
        with monkeypatch.context() as patched:
            patched.setattr(_fold, "BOUNDED_READ_CHARS", sys.maxsize)
            assert finding == check_figures(answer, [ToolResult(text)])
        assert finding.truncated

    def test_over_the_bound_the_fold_is_that_of_the_first_elements(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Rows of one number each: the fold over the text is the fold over the rows read, and truncated."""
        rows = [{"name": f"pool-{index}", "used_tb": index + 0.5} for index in range(80_000)]
        text = json.dumps(rows)
        read = read_bounded_json(text, MAX_BASIS_NUMBERS, MAX_NODES, MAX_ROWS)
        assert read is not None and read.cut
        lazy = folded(text)
        first = folded_whole(monkeypatch, json.dumps(read.value))
        assert fold_state(lazy)[:-1] == fold_state(first)[:-1]
        assert lazy.truncated and len(lazy.values) == MAX_BASIS_NUMBERS

    def test_a_later_result_is_read_against_the_room_left(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A second large result, read when the basis is nearly full, folds as when parsed whole."""
        first = json.dumps(capacity_rows(4_000))
        second = json.dumps({"rows": capacity_rows(20_000, seed=3)})
        assert fold_state(folded(first, second)) == fold_state(folded_whole(monkeypatch, first, second))


class TestBadInput:
    @pytest.mark.parametrize(
        "cell",
        ["1e999", "-1e999", "NaN", "Infinity", "1" * 400, "1" * 5_000, '"12.5%"', "[[[[[[1]]]]]]"],
        ids=[
            "overflow",
            "negative-overflow",
            "nan",
            "infinity",
            "400-digits",
            "5000-digits",
            "text",
            "nested",
        ],
    )
    def test_odd_cells_fold_as_before(self, monkeypatch: pytest.MonkeyPatch, cell: str) -> None:
        """Huge numbers, NaN, infinities and integers too long to read fold as when parsed whole."""
        rows = [f'{{"n": {index}, "x": {cell if index % 7 == 0 else index}}}' for index in range(8_000)]
        text = "[" + ", ".join(rows) + "]"
        assert fold_state(folded(text)) == fold_state(folded_whole(monkeypatch, text))

    @pytest.mark.parametrize("keep", [0.05, 0.5, 0.99])
    def test_text_cut_short_never_raises(self, monkeypatch: pytest.MonkeyPatch, keep: float) -> None:
        """A result cut short before the bound reads as before (as text); past it, its first rows fold."""
        text = json.dumps({"rows": capacity_rows(20_000)})
        cut = text[: int(len(text) * keep)]
        lazy, whole = folded(cut), folded_whole(monkeypatch, cut)
        if keep < 0.2:
            assert fold_state(lazy) == fold_state(whole)
        else:
            assert lazy.truncated and len(lazy.values) == MAX_BASIS_NUMBERS
            assert lazy.values == folded(text).values

    def test_deep_nesting_is_read_as_before(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Nesting too deep for the scanner inside a large result is read as text, as before, without
        recursing: the reader's own levels are bounded."""
        text = '{"rows": [' + "[" * 100_000 + "1" + "]" * 100_000 + "]}"
        assert fold_state(folded(text)) == fold_state(folded_whole(monkeypatch, text))
        assert math.isclose(folded(text).values[0], 1.0)


def test_carried_paths_read_as_the_tuples_they_stand_for() -> None:
    """A column's paths are kept once but read, by position and in order, as (row path, field) pairs."""
    paths = CarriedPaths()
    paths.append("result")
    paths.add_column(["rows[0]", "rows[1]"], "used_tb")
    paths.append(("rows[2]", "mixed"))
    paths.append("rows[3].note")
    paths.add_column([], "empty")
    paths.add_column(["rows[0]"], "free_tb")
    expected = [
        "result",
        ("rows[0]", "used_tb"),
        ("rows[1]", "used_tb"),
        ("rows[2]", "mixed"),
        "rows[3].note",
        ("rows[0]", "free_tb"),
    ]
    assert list(paths) == expected
    assert [paths[index] for index in range(len(paths))] == expected
    assert paths[-1] == ("rows[0]", "free_tb")
    assert list(paths[1:3]) == expected[1:3]
    with pytest.raises(IndexError):
        paths[len(expected)]

"""What the tool results carry: carried numbers, column derivations, and the bounds of the fold."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.checks.figures._basis import CarriedNumber, explain_figure, figure_basis
from otel_shapecheck.checks.figures._carried import MAX_BASIS_NUMBERS, MAX_DERIVED
from otel_shapecheck.checks.figures._columns import MAX_GROUP_FIELDS
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._fold import (
    MAX_DEPTH,
    MAX_NODES,
    MAX_NUMERIC_FIELDS,
    MAX_ROWS,
    BasisBuilder,
)

from .fixtures import CAPACITY_ROWS


def carried_of(content: JSONValue) -> list[tuple[float, str, str | None]]:
    return [(n.value, n.at, n.key) for n in figure_basis([ToolResult(content)]).carried]


class TestCarriedNumbers:
    def test_json_numbers_carry_path_and_field(self) -> None:
        """A JSON number is carried with its path; inside an array it has no field name."""
        content = json.dumps({"pool": {"used_pct": 61.1, "sizes": [1, 2.5]}, "ok": True, "none": None})
        assert carried_of(content) == [
            (61.1, "pool.used_pct", "used_pct"),
            (1.0, "pool.sizes[0]", None),
            (2.5, "pool.sizes[1]", None),
        ]

    def test_numeric_strings_are_carried_under_their_field(self) -> None:
        """A string that normalises to a plain number ('61.1%', '1,090.8') is carried under its field."""
        assert carried_of({"used": "61.1%", "usable": "1,090.8"}) == [
            (61.1, "used", "used"),
            (1090.8, "usable", "usable"),
        ]

    def test_text_strings_carry_their_numeric_tokens(self) -> None:
        """Other strings are tokenised: numbers and figure tokens are carried, identifiers are not."""
        note = "CLUSTER-A01 at 12:30: 24.8TB free, 1,200 IOPS"
        assert [value for value, _, _ in carried_of({"note": note})] == [24.8, 1200.0]

    def test_plain_text_result(self) -> None:
        """A result that is not JSON is read as text, labelled 'result'."""
        assert carried_of("Used 6.3 TB of 12 TB (52.5%).") == [
            (6.3, "result", None),
            (12.0, "result", None),
            (52.5, "result", None),
        ]

    def test_json_followed_by_text(self) -> None:
        """JSON followed by trailing text: the JSON is walked and the text tokenised."""
        content = '{"rows": [{"a_tb": 1.5}, {"a_tb": 2.5}]}\n\nNote: 3 more pools hold 77.7 TB.'
        basis = figure_basis([ToolResult(content)])
        assert [n.value for n in basis.carried] == [1.5, 2.5, 3.0, 77.7]
        explained = explain_figure("4", basis)
        assert explained is not None and explained.derivation == "column-sum"

    def test_json_inside_a_json_string(self) -> None:
        """A string field holding JSON (a double-encoded tool response) is walked as JSON."""
        inner = json.dumps({"free_tb": 24.8})
        assert carried_of({"response": inner}) == [(24.8, "response.free_tb", "free_tb")]

    def test_structured_content_is_walked_as_is(self) -> None:
        """Content already structured (a dict or list) needs no parsing."""
        assert sorted(carried_of([{"x": 1}, 7])) == [(1.0, "[0].x", "x"), (7.0, "[1]", None)]

    def test_numbers_in_field_names_are_carried_exactly(self) -> None:
        """A number used as a field name ({"2024": ...}) supports that exact figure, and only that one."""
        by_year: JSONValue = {"by_year": {"2024": {"sales": 1.0}, "2025": {"sales": 2.0}}, "p99_ms": 4.0}
        answer = "Since 2024 sales doubled; 2,026 units shipped in 99 ms."
        finding = check_figures(answer, [ToolResult(by_year)])
        assert finding.carried == ("2024",)
        assert finding.unsupported == ("2,026", "99 ms")

    @pytest.mark.parametrize("content", ["NaN", "[Infinity, -Infinity, 1e400]", '{"a": NaN}'])
    def test_non_finite_numbers_are_ignored(self, content: str) -> None:
        """NaN and infinities carry nothing."""
        assert carried_of(content) == []

    def test_huge_integer_is_ignored(self) -> None:
        """An integer too large for a double carries nothing and does not raise."""
        assert carried_of({"x": 10**400}) == []


class TestLookup:
    def test_earliest_carried_number_is_named(self) -> None:
        """When several carried numbers round to a figure, the first one read is named."""
        explained = explain_figure("61", figure_basis([ToolResult({"a": 61.1, "b": 60.9})]))
        assert explained is not None and explained.source == "a"

    def test_many_equal_values(self) -> None:
        """Thousands of equal carried values are looked up like one, with their first path."""
        content: JSONValue = {"zeros": [0.0] * 10_000, "x": 7.4}
        basis = figure_basis([ToolResult(content)])
        zero = explain_figure("0.00", basis)
        assert zero is not None and zero.source == "zeros[0]"
        seven = explain_figure("7", basis)
        assert seven is not None and seven.source == "x"
        assert basis.carries(0.0)
        assert not basis.carries(7.0)


class TestColumns:
    def test_map_of_objects_is_a_row_list(self) -> None:
        """An object of at least two objects is folded like an array of rows."""
        pools: JSONValue = {"f710": {"usable_tb": 435.5}, "h700": {"usable_tb": 1090.8}}
        explained = explain_figure("1526.3", figure_basis([ToolResult({"pools": pools})]))
        assert explained is not None
        assert explained.source == "sum of pools[].usable_tb"

    def test_top_level_list_is_labelled_result(self) -> None:
        """A top-level array of rows is labelled 'result'."""
        explained = explain_figure("3", figure_basis([ToolResult([{"n": 1}, {"n": 2}])]))
        assert explained is not None
        assert explained.source == "sum of result[].n"

    def test_single_row_has_ratios_but_no_sums(self) -> None:
        """One row gives ratios and differences of like-unit fields but no column sums."""
        basis = figure_basis([ToolResult({"rows": [{"used_tb": 30.0, "total_tb": 120.0}]})])
        assert {d.derivation for d in basis.derived} == {"column-ratio", "complement", "column-difference"}
        ratio = explain_figure("25", basis)
        assert ratio is not None and ratio.source == "100 × rows[].used_tb ÷ rows[].total_tb"
        complement = explain_figure("75", basis)
        assert complement is not None and complement.derivation == "complement"

    def test_fields_of_different_units_are_not_paired(self) -> None:
        """Ratios and differences need the same unit suffix; percentages and unit-less names are left out."""
        row: JSONValue = {"used_tb": 30.0, "total_gb": 120.0, "totalTB": 60.0, "used_pct": 25.0, "x_pct": 5.0}
        rows: JSONValue = [row]
        assert figure_basis([ToolResult({"rows": rows})]).derived == ()

    def test_numeric_strings_are_not_columns(self) -> None:
        """Numeric strings are carried but do not form columns."""
        basis = figure_basis([ToolResult([{"x_tb": "1.5"}, {"x_tb": "2.5"}])])
        assert basis.derived == ()
        assert [n.value for n in basis.carried] == [1.5, 2.5]

    def test_group_needs_fewer_values_than_rows(self) -> None:
        """A text field with a distinct value per row does not group."""
        rows: JSONValue = [{"name": "a", "n": 1}, {"name": "b", "n": 2}]
        basis = figure_basis([ToolResult(rows)])
        assert [d.source for d in basis.derived] == ["sum of result[].n"]

    def test_negative_difference_is_not_recorded(self) -> None:
        """A difference is recorded only when positive."""
        basis = figure_basis([ToolResult([{"a_ms": 5.0, "b_ms": 3.0}])])
        differences = [d.source for d in basis.derived if d.derivation == "column-difference"]
        assert differences == ["result[].a_ms − result[].b_ms"]

    def test_scaled_column_sum(self) -> None:
        """A column sum of at least 1000, divided by a unit scale, explains a figure in a larger unit."""
        rows: JSONValue = [{"size_gb": 600.0}, {"size_gb": 900.0}]
        explained = explain_figure("1.5", figure_basis([ToolResult(rows)]))
        assert explained is not None
        assert explained is not None and explained.derivation == "unit-scale"
        assert explained.source == "(sum of result[].size_gb) ÷ 1000^1"


class TestUserNumbers:
    def test_numbers_the_user_supplied_are_exempt(self) -> None:
        """A figure the user wrote in their own message is not flagged."""
        finding = check_figures("At 5000 IOPS and 80% the pool holds.", [], ["Assume 5,000 IOPS at 80%."])
        assert finding.unsupported == ()
        assert finding.carried == ("5000 IOPS", "80%")


class TestBounds:
    def test_deep_nesting_does_not_blow_the_stack(self) -> None:
        """Deeply nested JSON (text and structured) is survived, the depth bound sets truncated."""
        deep_text = "[" * 200_000 + "]" * 200_000
        assert figure_basis([ToolResult(deep_text)]).carried == ()
        structured: JSONValue = 42
        for _ in range(MAX_DEPTH + 50):
            structured = {"a": structured}
        basis = figure_basis([ToolResult(structured)])
        assert basis.truncated
        assert basis.carried == ()

    def test_carried_bound(self) -> None:
        """At most MAX_BASIS_NUMBERS numbers are carried, then truncated is set."""
        basis = figure_basis([ToolResult(list(range(MAX_BASIS_NUMBERS + 10)))])
        assert len(basis.carried) == MAX_BASIS_NUMBERS
        assert basis.truncated

    def test_text_carried_bound(self) -> None:
        """A huge text carries at most MAX_BASIS_NUMBERS numbers."""
        basis = figure_basis([ToolResult(" ".join(str(i) for i in range(MAX_BASIS_NUMBERS + 10)))])
        assert len(basis.carried) == MAX_BASIS_NUMBERS
        assert basis.truncated

    def test_node_bound(self) -> None:
        """At most MAX_NODES JSON nodes are walked, then truncated is set."""
        late: JSONValue = {"late": 1.5}
        content: JSONValue = [*([None] * (MAX_NODES + 10)), late]
        basis = figure_basis([ToolResult(content)])
        assert basis.truncated
        assert basis.carried == ()

    def test_memory_stays_bounded_on_a_huge_list(self) -> None:
        """A result of 600 000 numbers allocates for the 50 000 it keeps, not for all of them."""
        content: JSONValue = [float(i) for i in range(600_000)]
        tracemalloc.start()
        try:
            basis = figure_basis([ToolResult(content)])
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert basis.truncated
        assert len(basis.carried) == MAX_BASIS_NUMBERS
        assert peak < 32 * 1024 * 1024

    def test_row_bound(self) -> None:
        """At most MAX_ROWS rows are folded into columns."""
        rows: JSONValue = [{"n": 1} for _ in range(MAX_ROWS + 1)]
        basis = figure_basis([ToolResult(rows)])
        assert basis.truncated
        assert [d.value for d in basis.derived] == [float(MAX_ROWS)]

    def test_field_bound(self) -> None:
        """At most MAX_NUMERIC_FIELDS numeric fields form columns."""
        row: JSONValue = {f"f{i}": i for i in range(MAX_NUMERIC_FIELDS + 1)}
        basis = figure_basis([ToolResult([row, row])])
        assert basis.truncated
        assert len([d for d in basis.derived if d.derivation == "column-sum"]) == MAX_NUMERIC_FIELDS

    def test_group_field_bound(self) -> None:
        """At most MAX_GROUP_FIELDS text fields group the rows."""
        groups = range(MAX_GROUP_FIELDS + 2)
        rows: JSONValue = [{**{f"g{i}": str(r % 2) for i in groups}, "n": r} for r in range(4)]
        basis = figure_basis([ToolResult(rows)])
        grouped = {d.source.split("[")[1].split("=")[0] for d in basis.derived if "=" in d.source}
        assert len(grouped) == MAX_GROUP_FIELDS
        assert basis.truncated

    def test_derived_bound(self) -> None:
        """At most MAX_DERIVED values are derived; a bound can only flag more."""
        row: dict[str, JSONValue] = {f"f{i}_tb": float(i + 1) for i in range(MAX_NUMERIC_FIELDS)}
        rows: JSONValue = [{**row, "g": str(r % 50)} for r in range(100)]
        basis = figure_basis([ToolResult(rows)])
        assert len(basis.derived) == MAX_DERIVED
        assert basis.truncated

    def test_nothing_is_walked_past_the_carried_bound(self) -> None:
        """Once MAX_BASIS_NUMBERS numbers are carried, the rest of the result (and later results) is not
        walked: rows past it add no named number or derivation, and truncated says so."""
        fields = MAX_BASIS_NUMBERS // MAX_ROWS
        rows: JSONValue = [{f"f{i}": float(i) for i in range(fields)} for _ in range(MAX_ROWS)]
        late: JSONValue = {"2024": {"x": "y"}, "t": [{"n_tb": 3.0}, {"n_tb": 4.0}]}
        walked = BasisBuilder()
        walked.add([rows, late])
        assert walked.truncated and len(walked.values) == MAX_BASIS_NUMBERS
        assert walked.named == set() and 7.0 not in walked.derived.values
        later = BasisBuilder()
        later.add(rows)
        assert not later.truncated  # exactly full: nothing was left out
        later.add(late)
        assert later.truncated and later.named == set()

    def test_a_full_basis_skips_only_what_could_add(self) -> None:
        """Content that could add nothing (null, a boolean, text without digits, an empty list) is
        skipped without setting truncated; anything else sets it."""
        builder = BasisBuilder()
        builder.add(list(range(MAX_BASIS_NUMBERS)))
        for nothing in (None, True, "no digits here", []):
            builder.add(nothing)
        assert not builder.truncated
        builder.add("version 2")
        assert builder.truncated

    def test_rows_past_a_full_basis_are_not_visited(self) -> None:
        """A list of 50 000 rows filling the basis in its first MAX_ROWS rows costs those rows only."""
        fields = MAX_BASIS_NUMBERS // MAX_ROWS
        rows: JSONValue = [{f"f{i}": float(i) for i in range(fields)} for _ in range(10 * MAX_ROWS)]
        builder = BasisBuilder()
        builder.add(rows)
        assert builder.truncated and len(builder.values) == MAX_BASIS_NUMBERS
        assert builder._nodes <= 10 * MAX_ROWS + (fields + 1) * MAX_ROWS + 2  # the list and its first rows

    def test_carried_numbers_are_plain_records(self) -> None:
        """The basis exposes plain records."""
        basis = figure_basis([ToolResult(json.dumps(CAPACITY_ROWS))])
        assert basis.carried[0] == CarriedNumber(2429.0, "rows[0].total_tb", "total_tb")
        assert not basis.truncated

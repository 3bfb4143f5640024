"""Row validation: accepted rows, rejections with codes, payload shapes, and the counts logged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from otel_shapecheck import validate_rows, with_shape_collapse_retry
from otel_shapecheck.analyst._validate_rows import RejectedRow

from .analysts import RecordingContext


class Finding(BaseModel):
    subject: str
    severity: Literal["low", "high"]
    score: float = 0.0


class FindingDict(TypedDict):
    subject: str
    count: int


@dataclass
class FindingRecord:
    subject: str


class TestModelSchema:
    """A pydantic model as the schema."""

    def test_accepts_valid_rows_as_model_instances_and_rejects_the_rest(self) -> None:
        """Valid rows come back validated; invalid ones are rejected with their index and a reason."""
        rows = [
            {"subject": "disk", "severity": "high"},
            {"subject": "cpu", "severity": "urgent"},
            "not a row",
            {"subject": "net", "severity": "low", "score": "0.5"},
        ]
        result = validate_rows(rows, Finding)
        assert result.emitted == 4
        assert result.accepted == [
            Finding(subject="disk", severity="high"),
            Finding(subject="net", severity="low", score=0.5),
        ]
        assert [(r.index, r.code) for r in result.rejected] == [(1, "schema"), (2, "not-an-object")]
        assert result.rejected[0].reason.startswith("severity: ")

    def test_reasons_do_not_carry_row_content(self) -> None:
        """A rejection explains the schema error without echoing the emitted value."""
        result = validate_rows([{"subject": "secret-customer-name", "severity": 12345}], Finding)
        assert "secret-customer-name" not in result.rejected[0].reason
        assert "12345" not in result.rejected[0].reason

    def test_reason_is_bounded_for_rows_with_many_errors(self) -> None:
        """Only the first three errors are spelled out."""

        class Wide(BaseModel):
            a: int
            b: int
            c: int
            d: int
            e: int

        reason = validate_rows([{}], Wide).rejected[0].reason
        assert reason.count("Field required") == 3
        assert reason.endswith("and 2 more")

    def test_string_row_holding_a_json_object_gets_one_reparse(self) -> None:
        """A row the model serialised twice is read as the object it holds."""
        rows = [json.dumps({"subject": "disk", "severity": "low"}), json.dumps({"subject": "x"})]
        result = validate_rows(rows, Finding)
        assert result.accepted == [Finding(subject="disk", severity="low")]
        assert [(r.index, r.code) for r in result.rejected] == [(1, "schema")]

    @pytest.mark.parametrize("row", [3, None, ["subject", "disk"], "plain text", True])
    def test_rows_that_are_not_objects(self, row: object) -> None:
        """Scalars, lists and non-JSON strings are `not-an-object` for an object schema."""
        result = validate_rows([row], Finding)
        assert result.rejected == [
            RejectedRow(index=0, code="not-an-object", reason=result.rejected[0].reason)
        ]
        assert result.accepted == []


class TestTypeAdapterSchemas:
    """Any type pydantic's TypeAdapter accepts works as the schema."""

    def test_typed_dict(self) -> None:
        """A TypedDict schema yields dicts and rejects a non-object as `not-an-object`."""
        result = validate_rows([{"subject": "a", "count": "2"}, {"subject": "b"}, 7], FindingDict)
        assert result.accepted == [{"subject": "a", "count": 2}]
        assert [(r.index, r.code) for r in result.rejected] == [(1, "schema"), (2, "not-an-object")]

    def test_dataclass(self) -> None:
        """A dataclass schema yields instances."""
        result = validate_rows([{"subject": "a"}, "zzz"], FindingRecord)
        assert result.accepted == [FindingRecord(subject="a")]
        assert result.rejected[0].code == "not-an-object"

    def test_annotated_scalar(self) -> None:
        """A constrained scalar type: a wrong value is a `schema` rejection, not `not-an-object`."""
        result = validate_rows([1, "2", 30, "x"], Annotated[int, Field(lt=10)])
        assert result.accepted == [1, 2]
        assert [(r.index, r.code) for r in result.rejected] == [(2, "schema"), (3, "schema")]

    def test_union_of_models(self) -> None:
        """A union type validates each row against its members."""
        result = validate_rows(
            [{"subject": "a"}, {"subject": "b", "severity": "low"}], Finding | FindingRecord
        )
        assert result.accepted == [FindingRecord(subject="a"), Finding(subject="b", severity="low")]

    def test_something_pydantic_cannot_validate_is_a_value_error(self) -> None:
        """A schema pydantic cannot build is reported at the call, naming the schema."""

        class Opaque:
            pass

        with pytest.raises(ValueError, match="schema"):
            validate_rows([], Opaque)


class TestPayloadShapes:
    """The forms the emitted rows arrive in."""

    def test_json_string(self) -> None:
        """A JSON array string is parsed, code fences included."""
        text = '```json\n[{"subject": "a", "severity": "low"}, {"subject": "b"}]\n```'
        result = validate_rows(text, Finding)
        assert (result.emitted, len(result.accepted), len(result.rejected)) == (2, 1, 1)

    def test_findings_envelope(self) -> None:
        """An envelope holding the rows under `findings` is unwrapped, as a dict or as JSON text."""
        envelope = {"summary": "two", "findings": [{"subject": "a", "severity": "low"}, 5]}
        for payload in (envelope, json.dumps(envelope)):
            result = validate_rows(payload, Finding)
            assert (result.emitted, len(result.accepted)) == (2, 1)

    def test_envelope_with_another_field_name(self) -> None:
        """A named rows field, or the only list in the envelope, is where the rows are."""
        assert validate_rows({"rows": [{"subject": "a", "severity": "low"}]}, Finding).emitted == 1
        result = validate_rows(
            {"items": [{"subject": "a", "severity": "low"}], "tags": []}, Finding, rows_field="items"
        )
        assert len(result.accepted) == 1

    @pytest.mark.parametrize("payload", [None, "", "   ", [], {"findings": []}])
    def test_empty_payloads_emit_nothing(self, payload: object) -> None:
        """No rows at all is a genuine empty: emitted 0, nothing rejected."""
        result = validate_rows(payload, Finding)
        assert (result.emitted, result.accepted, result.rejected) == (0, [], [])

    @pytest.mark.parametrize(
        "text",
        [
            '```[{"subject": "a", "severity": "low"}]```',
            '  ```JSON  \n[{"subject": "a", "severity": "low"}]\n  ```  \n',
            '```\n[{"subject": "a", "severity": "low"}]\n```',
        ],
    )
    def test_code_fences_of_any_spacing(self, text: str) -> None:
        """The fence, its language word and the whitespace around the body are not part of the rows."""
        result = validate_rows(text, Finding)
        assert (result.emitted, len(result.accepted)) == (1, 1)

    def test_a_reply_that_degenerates_into_whitespace_is_not_json(self) -> None:
        """JSON mode's known failure (a fence, then whitespace to the token limit) is one not-json answer.

        Fence stripping by one regex backtracked cubically here: 2 000 characters took 48 s.
        """
        result = validate_rows("```json\n[" + " \n" * 50_000, Finding)
        assert [(r.index, r.code) for r in result.rejected] == [(None, "not-json")]
        (row,) = validate_rows(["```json\n{" + " \n" * 50_000], Finding).rejected
        assert row.code == "not-an-object"

    def test_json_nested_past_the_parser_is_not_json(self) -> None:
        """Nesting deeper than the parser's recursion limit is a rejection, never an exception."""
        deep = "[" * 100_000 + "]" * 100_000
        assert [r.code for r in validate_rows(deep, Finding).rejected] == ["not-json"]
        assert [r.code for r in validate_rows([deep], Finding).rejected] == ["not-an-object"]

    @pytest.mark.parametrize(
        ("payload", "code"),
        [("{truncated", "not-json"), ("42", "no-rows"), ({"subject": "a"}, "no-rows"), (3.5, "no-rows")],
    )
    def test_unusable_payloads_count_as_one_rejected_emission(self, payload: object, code: str) -> None:
        """A payload that holds no list of rows is one emitted, rejected answer (so it can be re-sampled)."""
        result = validate_rows(payload, Finding)
        assert result.emitted == 1
        assert result.accepted == []
        assert [(r.index, r.code) for r in result.rejected] == [(None, code)]


class TestCountsReachTheContext:
    """validate_rows reports `{emitted, accepted}` to the analyst context, which drives the retry."""

    def test_logs_counts(self) -> None:
        """One log per call with emitted, accepted and rejected counts."""
        ctx = RecordingContext()
        validate_rows([{"subject": "a", "severity": "low"}, {}], Finding, ctx)
        assert ctx.logs == [("rows validated", {"emitted": 2, "accepted": 1, "rejected": 1})]

    def test_a_context_without_log_is_fine(self) -> None:
        """Any object may be passed as the context; without a log method nothing is reported."""
        assert validate_rows([], Finding, object()).emitted == 0

    def test_drives_a_shape_collapse_retry(self) -> None:
        """An analyst built on validate_rows collapses on a wrong-shape sample and recovers on the next."""
        samples = iter(
            [
                '[{"title": "disk", "level": "HIGH"}, {"title": "cpu", "level": "LOW"}]',
                '{"findings": [{"subject": "disk", "severity": "high"}]}',
            ]
        )

        class DiskAnalyst:
            id = "disk"

            def analyze(self, _input: object, ctx: RecordingContext) -> list[Finding]:
                return validate_rows(next(samples), Finding, ctx).accepted

        records: list[object] = []
        wrapped = with_shape_collapse_retry(DiskAnalyst(), on_conformance=records.append)
        assert wrapped.analyze({}, RecordingContext()) == [Finding(subject="disk", severity="high")]
        assert records[0] == records[0].__class__("disk", 2, 2, 1, 1, True, True, 1.0)

"""Validate the rows a model emitted against a schema, keeping the accepted and explaining the rejected.

Validation works on the whole batch, never row by row: one pydantic pass over the list; when some rows
fail, their errors are read from the list error's locations and the other rows get one more pass. The
counts are logged to the analyst's context as ``{emitted, accepted}``, which is what the shape-collapse
retry reads.

Rejection codes:

- ``not-an-object``: the schema wants an object (model, dataclass, typed dict, mapping); the row is not one.
- ``schema``: the row is an object (or a value of the wanted kind) that the schema rejects.
- ``not-json``: the whole payload was a string that is not JSON.
- ``no-rows``: the whole payload was neither a list of rows nor an envelope holding one.

A payload-level rejection (``index`` is ``None``) counts as one emitted row, since the model did answer,
in a shape nobody can use.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypeAlias, TypeVar, overload

from pydantic import TypeAdapter, ValidationError

from otel_shapecheck.analyst._protocol import ACCEPTED_FIELD, EMITTED_FIELD

T = TypeVar("T")

RejectionCode: TypeAlias = Literal["not-an-object", "schema", "not-json", "no-rows"]
"""Why a row (or the whole payload) was rejected; see the module docstring."""

NOT_AN_OBJECT: Final = "not-an-object"
SCHEMA: Final = "schema"
NOT_JSON: Final = "not-json"
NO_ROWS: Final = "no-rows"

_DEFAULT_ROWS_FIELD = "findings"
_MAX_REASON_ERRORS = 3
_OBJECT_ERROR_TYPES = frozenset(
    {"model_type", "model_attributes_type", "dict_type", "dataclass_type", "dataclass_exact_type"}
)
_FENCE = "```"
_FENCE_LANGUAGE = re.compile(r"[A-Za-z0-9_-]*")


@dataclass(frozen=True)
class RejectedRow:
    """One row (or the whole payload) the schema did not accept."""

    index: int | None
    """Position of the row among the emitted rows; ``None`` when the payload itself was unusable."""
    code: RejectionCode
    """``not-an-object``, ``schema``, ``not-json`` or ``no-rows``."""
    reason: str
    """What was wrong, from the validation errors (never the row's content)."""


@dataclass(frozen=True)
class ValidatedRows(Generic[T]):
    """The outcome of :func:`validate_rows`: validated rows in emitted order, and the rejections."""

    emitted: int
    """Rows the model emitted (1 for an unusable payload, 0 for an empty one)."""
    accepted: list[T] = field(default_factory=list)
    """The accepted rows as the schema produced them (model instances for a model schema)."""
    rejected: list[RejectedRow] = field(default_factory=list)
    """Why each other row was rejected."""


_RowError = tuple[tuple[int | str, ...], str, str]
"""One validation error of one row: location inside the row, pydantic error type, message."""


@dataclass(frozen=True)
class _Rejection:
    """What validation says about a row that failed: the row as validated, and its errors."""

    row: object
    errors: list[_RowError]


@functools.lru_cache(maxsize=256)
def _cached_adapter(schema: Any) -> TypeAdapter[list[Any]]:
    return _build_adapter(schema)


def _build_adapter(schema: Any) -> TypeAdapter[list[Any]]:
    if isinstance(schema, TypeAdapter):
        raise ValueError("schema must be a type (a pydantic model or any type TypeAdapter accepts)")
    try:
        return TypeAdapter(list[schema])
    except Exception as error:
        raise ValueError(f"schema {schema!r} cannot be validated by pydantic: {error}") from error


def _adapter_for(schema: Any) -> TypeAdapter[list[Any]]:
    try:
        return _cached_adapter(schema)
    except TypeError:  # unhashable schema: build it uncached
        return _build_adapter(schema)


@overload
def validate_rows(
    rows: object, schema: type[T], ctx: object = None, *, rows_field: str = _DEFAULT_ROWS_FIELD
) -> ValidatedRows[T]: ...


@overload
def validate_rows(
    rows: object, schema: Any, ctx: object = None, *, rows_field: str = _DEFAULT_ROWS_FIELD
) -> ValidatedRows[Any]: ...


def validate_rows(
    rows: object, schema: Any, ctx: object = None, *, rows_field: str = _DEFAULT_ROWS_FIELD
) -> ValidatedRows[Any]:
    """Validate emitted rows against ``schema`` and log ``{emitted, accepted}`` to ``ctx``.

    Args:
        rows: a list of rows, a JSON string (code fences allowed) holding one, or an envelope mapping that
            holds the list under ``rows_field`` (or as its only list value).
        schema: a pydantic model, or any type a pydantic ``TypeAdapter`` accepts.
        ctx: an analyst context; its ``log`` receives ``("rows validated", {emitted, accepted, rejected})``.
        rows_field: the envelope key holding the rows.

    Raises:
        ValueError: ``schema`` is not something pydantic can validate.
    """
    adapter = _adapter_for(schema)
    payload = _unwrap_payload(rows, rows_field)
    if isinstance(payload, RejectedRow):
        result: ValidatedRows[Any] = ValidatedRows(emitted=1, rejected=[payload])
    else:
        result = _validate_batch(adapter, payload)
    _log_counts(ctx, result)
    return result


def _validate_batch(adapter: TypeAdapter[list[Any]], rows: Sequence[object]) -> ValidatedRows[Any]:
    batch = list(rows)
    outcomes = _outcomes(adapter, batch)
    # A row the model serialised twice (a string holding a JSON object) gets one second chance as that object.
    second_chances = {
        index: parsed
        for index, outcome in enumerate(outcomes)
        if isinstance(outcome, _Rejection) and (parsed := _json_object(batch[index])) is not None
    }
    if second_chances:
        retried = _outcomes(adapter, list(second_chances.values()))
        for index, outcome in zip(second_chances, retried, strict=True):
            outcomes[index] = outcome
    accepted = [outcome for outcome in outcomes if not isinstance(outcome, _Rejection)]
    rejected = [
        _rejected_row(index, outcome)
        for index, outcome in enumerate(outcomes)
        if isinstance(outcome, _Rejection)
    ]
    return ValidatedRows(emitted=len(batch), accepted=accepted, rejected=rejected)


def _outcomes(adapter: TypeAdapter[list[Any]], rows: list[object]) -> list[Any]:
    """Each row's validated value or rejection: one pass when all are valid, else a second over the valid."""
    try:
        return list(adapter.validate_python(rows))
    except ValidationError as error:
        failures = _errors_by_row(error, len(rows))
    valid = [index for index in range(len(rows)) if index not in failures]
    outcomes: list[Any] = [_Rejection(row, failures.get(index, [])) for index, row in enumerate(rows)]
    if valid:
        for index, outcome in zip(valid, _outcomes(adapter, [rows[index] for index in valid]), strict=True):
            outcomes[index] = outcome
    return outcomes


def _errors_by_row(error: ValidationError, row_count: int) -> dict[int, list[_RowError]]:
    """The list-level errors grouped by row index, locations made relative to the row."""
    failures: dict[int, list[_RowError]] = {}
    for detail in error.errors(include_url=False, include_input=False, include_context=False):
        location = tuple(detail["loc"])
        if location and isinstance(location[0], int) and 0 <= location[0] < row_count:
            failures.setdefault(location[0], []).append((location[1:], detail["type"], detail["msg"]))
    if not failures:  # an error not attributable to a row: no row can be trusted
        reason: list[_RowError] = [((), "batch", str(error.title))]
        return {index: reason for index in range(row_count)}
    return failures


def _rejected_row(index: int, rejection: _Rejection) -> RejectedRow:
    wants_object = any(not loc and kind in _OBJECT_ERROR_TYPES for loc, kind, _ in rejection.errors)
    code: RejectionCode = NOT_AN_OBJECT if wants_object and not isinstance(rejection.row, Mapping) else SCHEMA
    return RejectedRow(index=index, code=code, reason=_reason(rejection.errors))


def _reason(errors: Sequence[_RowError]) -> str:
    parts = [_describe(error) for error in errors[:_MAX_REASON_ERRORS]]
    if len(errors) > _MAX_REASON_ERRORS:
        parts.append(f"and {len(errors) - _MAX_REASON_ERRORS} more")
    return "; ".join(parts)


def _describe(error: _RowError) -> str:
    location, _, message = error
    return f"{'.'.join(map(str, location))}: {message}" if location else message


def _unwrap_payload(rows: object, rows_field: str) -> Sequence[object] | RejectedRow:
    """The list of rows a payload holds, or the payload-level rejection."""
    if rows is None:
        return []
    if isinstance(rows, str | bytes | bytearray):
        text = rows.decode("utf-8", "replace") if isinstance(rows, bytes | bytearray) else rows
        if not text.strip():
            return []
        try:
            rows = json.loads(_strip_code_fence(text))
        except (ValueError, RecursionError):  # JSON nested past the parser's depth is not JSON to us
            return RejectedRow(index=None, code=NOT_JSON, reason="the payload is not valid JSON")
    if isinstance(rows, Mapping):
        rows = _envelope_rows(rows, rows_field)
    if isinstance(rows, Sequence) and not isinstance(rows, str | bytes | bytearray):
        return rows
    return RejectedRow(
        index=None, code=NO_ROWS, reason=f"expected a list of rows or a {{{rows_field!r}: [...]}} envelope"
    )


def _envelope_rows(envelope: Mapping[Any, Any], rows_field: str) -> object:
    """The rows of an envelope: its ``rows_field`` list, else its only list value, else the envelope."""
    if isinstance(envelope.get(rows_field), list):
        return envelope[rows_field]
    lists = [value for value in envelope.values() if isinstance(value, list)]
    return lists[0] if len(lists) == 1 else envelope


def _strip_code_fence(text: str) -> str:
    """The body of a Markdown code fence around the whole text (```json ... ```), else the text.

    String operations, not one regex: a reply that degenerates into whitespace without a closing fence
    (JSON mode's known failure) made the regex backtrack for a time cubic in its length.
    """
    stripped = text.strip()
    if len(stripped) < 2 * len(_FENCE) or not stripped.startswith(_FENCE) or not stripped.endswith(_FENCE):
        return text
    inner = stripped[len(_FENCE) : -len(_FENCE)]
    language = _FENCE_LANGUAGE.match(inner)
    return inner[language.end() if language else 0 :].strip()


def _json_object(value: object) -> dict[str, Any] | None:
    """The JSON object a string row holds, if it holds one."""
    if not isinstance(value, str):
        return None
    try:
        parsed = json.loads(_strip_code_fence(value))
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, dict) else None


def _log_counts(ctx: object, result: ValidatedRows[Any]) -> None:
    log: Callable[..., object] | None = getattr(ctx, "log", None)
    if callable(log):
        log(
            "rows validated",
            {
                EMITTED_FIELD: result.emitted,
                ACCEPTED_FIELD: len(result.accepted),
                "rejected": len(result.rejected),
            },
        )

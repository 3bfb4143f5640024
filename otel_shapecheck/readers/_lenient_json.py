"""Lenient reading of JSON-shaped telemetry values: JSON strings, bytes, or structured values.

Telemetry carries content as JSON strings on spans (possibly cut by attribute length limits) and as
structured values on log records (lists arrive as tuples). Readers want one plain JSON value or
``None``; nothing here raises, and size and depth are bounded so hostile input costs bounded time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from otel_shapecheck._model import JSONValue

MAX_JSON_CHARS = 16 * 1024 * 1024
"""Longest string parsed as JSON; longer ones count as missing (an SDK limit would have cut them anyway)."""

MAX_DEPTH = 64
"""Deepest nesting kept when converting structured values; deeper parts become ``None``."""

_JSON_OPENERS = frozenset("[{")


def parse_json(value: object) -> JSONValue:
    """The JSON value a telemetry value holds, or ``None`` when it holds none that can be read.

    Strings and bytes are decoded as JSON (truncated or malformed text gives ``None``); structured
    values (mappings, lists, tuples) are converted to plain dicts and lists.
    """
    if isinstance(value, bytes | bytearray):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    if isinstance(value, str):
        return _loads(value)
    return to_json_value(value)


def parse_json_or_text(value: object) -> JSONValue:
    """Like :func:`parse_json`, but a string that is not JSON is returned as the string itself.

    Tool arguments and results are often plain text; they stay readable rather than missing.
    """
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in _JSON_OPENERS:
            parsed = _loads(value)
            return value if parsed is None else parsed
        return value
    return parse_json(value)


def parse_json_list(value: object) -> list[JSONValue] | None:
    """The JSON array a value holds, or ``None`` when it holds no array."""
    parsed = parse_json(value)
    return parsed if isinstance(parsed, list) else None


def parse_json_object(value: object) -> dict[str, JSONValue] | None:
    """The JSON object a value holds, or ``None`` when it holds no object."""
    parsed = parse_json(value)
    return parsed if isinstance(parsed, dict) else None


def to_json_value(value: object, depth: int = 0) -> JSONValue:
    """A plain JSON value for a structured telemetry value; unknown types and deep nesting become ``None``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= MAX_DEPTH:
        return None
    if isinstance(value, Mapping):
        return {str(key): to_json_value(item, depth + 1) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        return [to_json_value(item, depth + 1) for item in value]
    return None


def _loads(text: str) -> JSONValue:
    if len(text) > MAX_JSON_CHARS:
        return None
    try:
        parsed: JSONValue = json.loads(text, parse_constant=_reject_constant, parse_float=_finite_float)
    except (ValueError, RecursionError):
        return None
    return parsed


def _reject_constant(name: str) -> None:
    """``NaN`` and ``Infinity`` are not JSON; read them as missing values."""
    return None


def _finite_float(text: str) -> float | None:
    """A float literal, or ``None`` when it overflows to infinity (``1e999``), as structured values read."""
    value = float(text)
    return value if math.isfinite(value) else None

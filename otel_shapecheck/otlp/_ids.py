"""The one codec for trace and span ids in OTLP/JSON: hex as the specification writes them, base64 as
protobuf's own JSON mapping reads them.

OTLP/JSON (the specification, the Collector's file exporter, Jaeger's and Tempo's current APIs) writes ids
as lowercase hex; ``google.protobuf.json_format`` reads and writes ``bytes`` fields as base64, and older
Tempo versions print that form. Reading accepts either, strictly: an id must decode to exactly its size
(16 bytes for a trace id, 8 for a span or parent id) or the document is refused, so a malformed id can
never reach an encoder that would fail on it later. An empty string is "no id" (a root span's parent).
The SDK's integer ids are written as hex here too (:func:`trace_id_hex`, :func:`span_id_hex`), for
every id a verdict, report or duplicate mark names.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any, Final

from opentelemetry.trace import format_span_id, format_trace_id

ID_BYTES: Final = {"traceId": 16, "spanId": 8, "parentSpanId": 8}
"""The id fields of OTLP/JSON spans, links and log records, with their sizes in bytes."""


class InvalidId(ValueError):
    """An id field whose value is neither hex nor base64 of its size."""

    def __init__(self, key: str, value: object, size: int) -> None:
        super().__init__(f"{key} {value!r} is not a {size}-byte id (hex or base64)")
        self.key = key
        self.value = value
        self.size = size


UNREADABLE_ID = base64.b64encode(b"\xff").decode("ascii")
"""What a text id that is neither hex nor base64 becomes when ids are read leniently: one byte, which no
id field may hold, so the item carrying it is rejected by the size check that follows."""


def id_as_base64(key: str, value: object, *, strict: bool = True) -> object:
    """One id field's value in the base64 form protobuf reads; other fields are returned as they are.

    With ``strict=False`` (a receiver that rejects bad items one by one) a text id of the wrong size is
    passed on at the size it has, and one that is neither hex nor base64 as :data:`UNREADABLE_ID`, so the
    caller's size check rejects the item that carries it; a value that is not text is still an error.

    Raises:
        InvalidId: ``key`` is an id field and ``value`` is not a valid id of its size (strict), or not
            text at all.
    """
    size = ID_BYTES.get(key)
    if size is None or value == "" or value is None:
        return value
    if isinstance(value, str):
        exact = _decoded(value, size)
        if exact is not None:
            return exact
        if not strict:
            return _decoded(value, None) or UNREADABLE_ID
    raise InvalidId(key, value, size)


def id_bytes(key: str, value: object) -> bytes:
    """One id field's value as the bytes it stands for (``b""`` for ``""``: no id), by the same rule as
    :func:`id_as_base64`: hex of twice the id's size, else base64 of exactly its size.

    The OTLP/JSON reader decodes ids with this directly, without going through base64 and protobuf.

    Raises:
        InvalidId: ``value`` is not a valid id of the size of ``key`` (an id field).
    """
    size = ID_BYTES[key]
    if value == "":
        return b""
    if isinstance(value, str):
        if len(value) == 2 * size:
            try:
                return bytes.fromhex(value)
            except ValueError:
                pass
        try:
            decoded = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):  # ValueError: b64decode of non-ASCII text
            pass
        else:
            if len(decoded) == size:
                return decoded
    raise InvalidId(key, value, size)


def _decoded(value: str, size: int | None) -> str | None:
    """``value`` (hex or base64) as base64 if it decodes to ``size`` bytes (any size for ``None``)."""
    if size is None or len(value) == 2 * size:
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            pass
        else:
            if size is None or len(raw) == size:
                return base64.b64encode(raw).decode("ascii")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):  # ValueError: b64decode of non-ASCII text
        return None
    return value if size is None or len(raw) == size else None


def ids_as_base64(node: Any, *, strict: bool = True) -> Any:
    """A copy of a decoded OTLP/JSON document with every id field, wherever it sits, in base64.

    Raises:
        InvalidId: the first id that is not valid for its size (see :func:`id_as_base64` for
            ``strict``).
    """
    if isinstance(node, Mapping):
        return {
            key: id_as_base64(key, value, strict=strict)
            if key in ID_BYTES
            else ids_as_base64(value, strict=strict)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [ids_as_base64(item, strict=strict) for item in node]
    return node


def ids_as_hex(node: Any) -> None:
    """Rewrite, in place, every id field of a ``json_format.MessageToDict`` result from base64 to hex."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ID_BYTES and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                ids_as_hex(value)
    elif isinstance(node, list):
        for item in node:
            ids_as_hex(item)


def hex_id(value: bytes) -> str:
    """An id's bytes as OTLP/JSON writes them (lowercase hex; empty for none)."""
    return value.hex()


def trace_id_hex(trace_id: int) -> str:
    """An SDK trace id as OTLP/JSON, W3C trace context and the verdicts write it: 32 lowercase hex digits."""
    return format_trace_id(trace_id)


def span_id_hex(span_id: int) -> str:
    """An SDK span id as OTLP/JSON, W3C trace context and the verdicts write it: 16 lowercase hex digits."""
    return format_span_id(span_id)

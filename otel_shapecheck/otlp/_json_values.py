"""Protobuf's JSON mapping for the OTLP messages, read straight from decoded JSON: scalars and attributes.

The OTLP/JSON reader builds SDK telemetry from ``json.loads`` output without ``google.protobuf.json_format``.
It accepts what ``json_format.ParseDict(document, message, ignore_unknown_fields=True)`` accepts and reads
the same values, so a file reads the same either way (``tests/otlp/test_json_parity.py`` holds the two
side by side):

- a field may be named in lowerCamelCase or as in the ``.proto``; unknown fields are skipped, and ``null``
  leaves a field at its default; of two names for one field the later wins;
- 64-bit integers come as numbers or strings (``"3"``, ``"1e3"``), each checked against its type's range;
  doubles as numbers or strings (``"NaN"``, ``"Infinity"``); enums as numbers or names (an unknown name
  is skipped, as ``ignore_unknown_fields`` does); bytes as base64;
- ``AnyValue`` holds at most one of its values; messages nest at most 100 deep;
- and json_format's odd corners: a message given as a list or a string is read as a list of field names
  (none allowed), and a text value with an unpaired surrogate is refused.

Every refusal raises :class:`InvalidOtlp` with what was wrong and where; the caller names the input.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Collection, Mapping
from typing import Any, Final

from opentelemetry.util.types import AnyValue as SdkAnyValue

from otel_shapecheck.otlp._ids import ID_BYTES, id_bytes

MAX_DEPTH: Final = 100
"""Messages nested deeper than this are refused (json_format's default ``max_recursion_depth``)."""

INT32: Final = (-(2**31), 2**31 - 1)
INT64: Final = (-(2**63), 2**63 - 1)
UINT32: Final = (0, 2**32 - 1)
UINT64: Final = (0, 2**64 - 1)

_UNPAIRED_SURROGATE = re.compile("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]")
_EXTENSION_NAME = re.compile(r"\[[a-zA-Z0-9\._]*\]$")


class InvalidOtlp(ValueError):
    """A decoded OTLP/JSON document that protobuf's JSON mapping would not read; the message says why."""


def message_items(value: Any, fields: Collection[str], where: str, depth: int) -> Any:
    """The ``(name, value)`` pairs of a message given as ``value``; checks the nesting depth.

    An object gives its items. json_format reads any other iterable as a sequence of field names and
    fails on the first that names a field (or is not text): a list of other text, or a string, reads
    as an empty message; anything else is refused.
    """
    if depth > MAX_DEPTH:
        raise InvalidOtlp(f"{where}: messages nested more than {MAX_DEPTH} deep")
    if type(value) is dict:
        return value.items()
    if type(value) is str:
        return ()
    if type(value) is list:
        for name in value:
            if type(name) is not str or name in fields or _EXTENSION_NAME.match(name):
                raise InvalidOtlp(f"{where} is a list, not an object")
        return ()
    raise InvalidOtlp(f"{where} is not an object ({type(value).__name__})")


def unknown_field(name: str, value: Any, where: str) -> None:
    """Check a field protobuf does not know: skipped, but the ids inside it are checked as ids are
    everywhere in a document, and an extension name (``[...]``) is refused as json_format refuses it."""
    if name[:1] == "[" and _EXTENSION_NAME.match(name):
        raise InvalidOtlp(f"{where}: extension field {name!r} on a message without extensions")
    if name in ID_BYTES:
        if value is not None:
            id_bytes(name, value)
    elif type(value) is dict or type(value) is list:
        check_ids(value)


def check_ids(node: Any) -> None:
    """Check every id field anywhere under ``node`` (raises :class:`~._ids.InvalidId`)."""
    if type(node) is dict:
        for key, value in node.items():
            if key in ID_BYTES:
                if value is not None:
                    id_bytes(key, value)
            elif type(value) is dict or type(value) is list:
                check_ids(value)
    elif type(node) is list:
        for item in node:
            if type(item) is dict or type(item) is list:
                check_ids(item)


def repeated(value: Any, where: str) -> list[Any]:
    """A repeated field's list (``null`` elements are refused)."""
    if type(value) is not list:
        raise InvalidOtlp(f"{where} is not a list")
    if None in value:
        raise InvalidOtlp(f"{where} holds null")
    return value


def string(value: Any, where: str) -> str:
    """A ``string`` field."""
    if type(value) is not str:
        raise InvalidOtlp(f"{where} is not a string ({type(value).__name__})")
    if not value.isascii() and _UNPAIRED_SURROGATE.search(value):
        raise InvalidOtlp(f"{where} holds an unpaired surrogate")
    return value


def strings(value: Any, where: str) -> list[str]:
    """A ``repeated string`` field."""
    return [string(item, where) for item in repeated(value, where)]


_MAX_INTEGER_DIGITS = 20
"""Digits of the largest 64-bit integer (uint64); a longer digit string is out of range for any field."""
_MAX_INTEGER_TEXT = 64
"""Characters an integer's text may have in any spelling (``"1.5e18"``, ``"-9223372036854775808"``)."""


def integer(value: Any, bounds: tuple[int, int], where: str) -> int:
    """An integer field of the type with these ``bounds``: a number, or text of one."""
    if type(value) is int:
        number = value
    elif type(value) is str and len(value) <= _MAX_INTEGER_DIGITS and value.isascii() and value.isdigit():
        number = int(value)
    else:
        number = _integer(value, where)
    if not bounds[0] <= number <= bounds[1]:
        raise InvalidOtlp(f"{where} is out of range ({number})")
    return number


def _integer(value: Any, where: str) -> int:
    if type(value) is bool or (type(value) is float and not value.is_integer()):
        raise InvalidOtlp(f"{where} is not an integer ({value!r})")
    if type(value) is str and " " in value:
        raise InvalidOtlp(f"{where} is not an integer ({value!r})")
    if type(value) is str and len(value) > _MAX_INTEGER_TEXT:
        # Before int(): past 4 300 digits it raises a ValueError of its own, and no 64-bit field is that long.
        raise InvalidOtlp(f"{where} is out of range ({len(value)} characters)")
    try:
        return int(value)
    except (TypeError, OverflowError):
        raise InvalidOtlp(f"{where} is not an integer ({type(value).__name__})") from None
    except ValueError:
        try:
            number = float(value)
        except ValueError:
            raise InvalidOtlp(f"{where} is not an integer ({value!r})") from None
        if not number.is_integer():
            raise InvalidOtlp(f"{where} is not an integer ({value!r})") from None
        return int(number)


def double(value: Any, where: str) -> float:
    """A ``double`` field: a finite number, or text of a number (``NaN`` and ``Infinity`` included)."""
    if type(value) is float:
        if math.isnan(value) or math.isinf(value):
            raise InvalidOtlp(f"{where} is not a finite number (write it as text)")
        return value
    if value == "nan":
        raise InvalidOtlp(f'{where}: write NaN as "NaN"')
    try:
        return float(value)
    except ValueError:
        if value == "-Infinity":
            return -math.inf
        if value == "Infinity":
            return math.inf
        if value == "NaN":
            return math.nan
        raise InvalidOtlp(f"{where} is not a number ({value!r})") from None
    except (TypeError, OverflowError):
        raise InvalidOtlp(f"{where} is not a number ({type(value).__name__})") from None


def boolean(value: Any, where: str) -> bool:
    """A ``bool`` field (``true`` or ``false``, not text)."""
    if type(value) is not bool:
        raise InvalidOtlp(f"{where} is not true or false")
    return value


def raw_bytes(value: Any, where: str) -> bytes:
    """A ``bytes`` field other than an id: base64, either alphabet, padding optional."""
    if type(value) is not str:
        raise InvalidOtlp(f"{where} is not base64 text")
    try:
        encoded = value.encode("utf-8")
        return base64.urlsafe_b64decode(encoded + b"=" * (4 - len(encoded) % 4))
    except (UnicodeEncodeError, binascii.Error):
        raise InvalidOtlp(f"{where} is not base64 ({value!r})") from None


def enum(value: Any, names: Mapping[str, int], where: str) -> int | None:
    """An enum field: its number, by number or name; ``None`` for an unknown name (skipped)."""
    if type(value) is int:
        number = value
    else:
        if type(value) is dict or type(value) is list:
            raise InvalidOtlp(f"{where} is not an enum value")
        if type(value) is str and value in names:
            return names[value]
        try:
            number = int(value)
        except ValueError:
            return None
        except (TypeError, OverflowError):
            raise InvalidOtlp(f"{where} is not an enum value ({value!r})") from None
    if not INT32[0] <= number <= INT32[1]:
        raise InvalidOtlp(f"{where} is out of range ({number})")
    return number


_KEY_VALUE_FIELDS = frozenset({"key", "value", "keyStrindex", "key_strindex"})
_ANY_VALUE_FIELDS = frozenset(
    {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue", "kvlistValue", "bytesValue"}
    | {"stringValueStrindex", "string_value", "bool_value", "int_value", "double_value", "array_value"}
    | {"kvlist_value", "bytes_value", "string_value_strindex"}
)
_VALUES_FIELDS = frozenset({"values"})


def attributes(value: Any, where: str, depth: int) -> dict[str, SdkAnyValue]:
    """A ``repeated KeyValue`` field (attributes) as a dict; the later of two equal keys wins."""
    read: dict[str, SdkAnyValue] = {}
    for item in repeated(value, where):
        # The shape every exporter writes, read at once: {"key": text, "value": {"<kind>Value": v}},
        # v an ASCII string, a digit string, a bool, a finite float or a list of ASCII strings. The
        # member is looked up by name, commonest first, rather than unpacked and compared.
        if type(item) is dict and len(item) == 2 and depth < _FAST_DEPTH:
            key = item.get("key")
            any_value = item.get("value")
            if type(any_value) is dict and len(any_value) == 1 and type(key) is str and key.isascii():
                plain = any_value.get("stringValue")
                if type(plain) is str:
                    if plain.isascii():
                        read[key] = plain
                        continue
                elif plain is None:
                    plain = any_value.get("intValue")
                    if type(plain) is str:
                        if len(plain) <= _MAX_INTEGER_DIGITS and plain.isascii() and plain.isdigit():
                            number = int(plain)
                            if number <= _INT64_MAX:
                                read[key] = number
                                continue
                    elif plain is None:
                        ((kind, plain),) = any_value.items()
                        if kind == "boolValue":
                            if type(plain) is bool:
                                read[key] = plain
                                continue
                        elif kind == "doubleValue":
                            if type(plain) is float and _isfinite(plain):
                                read[key] = plain
                                continue
                        elif kind == "arrayValue":
                            strings_read = _ascii_strings(plain)
                            if strings_read is not None:
                                read[key] = strings_read
                                continue
        key, plain = key_value(item, where, depth)
        read[key] = plain
    return read


_FAST_DEPTH = MAX_DEPTH - 2
"""Attributes this shallow are read by the fast path: an array value's strings nest two messages deeper."""
_INT64_MAX = INT64[1]
_isfinite = math.isfinite


def _ascii_strings(array: Any) -> tuple[str, ...] | None:
    """An ``ArrayValue`` of ASCII strings only, ``{"values": [{"stringValue": text}, …]}``, as a tuple;
    ``None`` for any other shape (read the long way)."""
    if type(array) is not dict or len(array) != 1:
        return None
    values = array.get("values")
    if type(values) is not list:
        return None
    read = []
    for element in values:
        if type(element) is not dict or len(element) != 1:
            return None
        text = element.get("stringValue")
        if type(text) is not str or not text.isascii():
            return None
        read.append(text)
    return tuple(read)


def key_value(value: Any, where: str, depth: int) -> tuple[str, SdkAnyValue]:
    """One ``KeyValue`` message: its key (``""`` if none) and value (``None`` if none)."""
    key = ""
    plain: SdkAnyValue = None
    for name, item in message_items(value, _KEY_VALUE_FIELDS, where, depth):
        if name == "key":
            key = "" if item is None else string(item, f"{where}.key")
        elif name == "value":
            plain = None if item is None else any_value(item, f"{where}.value", depth + 1)
        elif name == "keyStrindex" or name == "key_strindex":
            if item is not None:
                integer(item, INT32, f"{where}.keyStrindex")
        else:
            unknown_field(name, item, where)
    return key, plain


def any_value(value: Any, where: str, depth: int) -> SdkAnyValue:
    """One ``AnyValue`` message as the SDK holds it: text, bool, int, float, bytes, tuple or dict."""
    plain: SdkAnyValue = None
    case: str | None = None
    for name, item in message_items(value, _ANY_VALUE_FIELDS, where, depth):
        member = _ANY_VALUE_MEMBERS.get(name)
        if member is None:
            unknown_field(name, item, where)
            continue
        if item is None:  # clears that member only if it is the one set
            if case == member:
                case, plain = None, None
            continue
        if case is not None:
            raise InvalidOtlp(f"{where} holds more than one value")
        case = member
        plain = _member(member, item, f"{where}.{name}", depth)
    return plain


_ANY_VALUE_MEMBERS = {
    **{name: name for name in ("string_value", "bool_value", "int_value", "double_value")},
    **{name: name for name in ("array_value", "kvlist_value", "bytes_value", "string_value_strindex")},
    "stringValue": "string_value",
    "boolValue": "bool_value",
    "intValue": "int_value",
    "doubleValue": "double_value",
    "arrayValue": "array_value",
    "kvlistValue": "kvlist_value",
    "bytesValue": "bytes_value",
    "stringValueStrindex": "string_value_strindex",
}


def _member(member: str, item: Any, where: str, depth: int) -> SdkAnyValue:
    if member == "string_value":
        return string(item, where)
    if member == "int_value":
        return integer(item, INT64, where)
    if member == "double_value":
        return double(item, where)
    if member == "bool_value":
        return boolean(item, where)
    if member == "array_value":
        values: list[SdkAnyValue] = []
        for name, listed in message_items(item, _VALUES_FIELDS, where, depth + 1):
            if name == "values":
                values = [] if listed is None else _any_values(listed, f"{where}.values", depth + 2)
            else:
                unknown_field(name, listed, where)
        return tuple(values)
    if member == "kvlist_value":
        pairs: dict[str, SdkAnyValue] = {}
        for name, listed in message_items(item, _VALUES_FIELDS, where, depth + 1):
            if name == "values":
                pairs = {} if listed is None else attributes(listed, f"{where}.values", depth + 2)
            else:
                unknown_field(name, listed, where)
        return pairs
    if member == "bytes_value":
        return raw_bytes(item, where)
    return integer(item, INT32, where)  # string_value_strindex


def _any_values(value: Any, where: str, depth: int) -> list[SdkAnyValue]:
    return [any_value(item, where, depth) for item in repeated(value, where)]

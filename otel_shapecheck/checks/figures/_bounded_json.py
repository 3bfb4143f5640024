"""Reading a large JSON tool result only as far as the fold will walk it.

Past the basis bound the fold walks nothing more, so parsing the rest of a 12 MB result was most of the
cost of an answer. :func:`read_bounded_json` reads the outer objects member by member and decodes the
arrays of objects or arrays in them a chunk of elements at a time with the standard library's C scanner.
Once an array holds more elements than are folded into columns, it counts the finite numbers and the
values its elements hold, and it stops when what was read holds enough to fill the basis (or the node
budget): the fold can walk nothing past that. The value is then the document with that array, and the
containers around it, cut after the last element read; nothing of the text after the cut is read.

When nothing is cut the value is exactly ``json.loads`` of the text: every element is decoded by the
same scanner from its own text, so results under the bound fold as before. Text that is not JSON before
the cut gives ``None``, and is read as it was before.
"""

from __future__ import annotations

import json
import re
from typing import Final, NamedTuple, cast

from otel_shapecheck._model import JSONValue

STRUCTURED_DEPTH: Final = 4
"""Outer levels read piece by piece (``{"data": {"items": [...]}}``); deeper values are decoded whole."""

STRUCTURED_MEMBERS: Final = 64
"""Members of an object read one by one; the rest of a larger object (rows keyed by name) is decoded
whole, as ``json.loads`` would, so it is never cut."""

TALLY_DEPTH: Final = 32
"""Nesting within an element below which its numbers are not counted: far above the fold's depth bound
less the levels above an element, so every counted number is one the fold would carry."""

CHUNK_ELEMENTS: Final = 512
"""Fewest elements decoded by one call once an array is past the rows folded into columns."""

CHUNK_ATTEMPTS: Final = 4
"""Candidate chunk ends tried before the rest of an array is decoded whole: a candidate that is not an
element boundary (a ``}, {`` inside a nested list or a string) fails to decode and costs one chunk."""

_LARGEST_INT: Final = 2**1023
"""Integers below this in magnitude are finite as doubles (and carried); larger ones may not be."""

_WHITESPACE: Final = re.compile(r"[ \t\n\r]*")
_MEMBER_SEPARATOR: Final = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_KEY_SEPARATOR: Final = re.compile(r"[ \t\n\r]*:[ \t\n\r]*")
_ELEMENT_BOUNDARIES: Final = {
    "{": re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{"),
    "[": re.compile(r"\][ \t\n\r]*,[ \t\n\r]*\["),
}
"""Where one element of an array of objects (or of arrays) may end and the next begin."""
_DECODER: Final = json.JSONDecoder()
"""The decoder ``json.loads`` uses (default settings: ``NaN`` and infinities read, strict strings)."""


class BoundedJSON(NamedTuple):
    """A JSON document read up to the bound."""

    value: JSONValue
    rest: str
    """The text after the document (empty when it was cut: the rest is not read)."""
    cut: bool
    """An array was cut after the last element read, and with it the containers around it."""


class _NotJSON(Exception):
    """The text is not JSON where it was read."""


def read_bounded_json(text: str, numbers: int, nodes: int, min_elements: int) -> BoundedJSON | None:
    """The JSON document ``text`` starts with, read until an array of more than ``min_elements``
    elements and what was read before it hold ``numbers`` finite numbers or ``nodes`` values.

    ``text`` starts with ``[`` or ``{``. ``None`` when it is not JSON before the cut (malformed, cut
    short, nested too deep for the scanner, an integer too long to read): the caller then reads it as it
    read any text before. Never raises.
    """
    reader = _Reader(text, numbers, nodes, min_elements)
    try:
        value, end = reader.value(0, 0)
    except (_NotJSON, ValueError, RecursionError):
        return None
    if reader.cut:
        return BoundedJSON(value, "", True)
    whole = _skip_whitespace(text, end) == len(text)  # json.loads would have read it all
    return BoundedJSON(value, "" if whole else text[end:], False)


class _Reader:
    """One document's read: its text, the numbers and values still to count, and whether it was cut."""

    def __init__(self, text: str, numbers: int, nodes: int, min_elements: int) -> None:
        self.text = text
        self.numbers_left = numbers
        self.nodes_left = nodes
        self.min_elements = min_elements
        self.cut = False

    @property
    def enough(self) -> bool:
        """Whether what was counted already holds what the fold can walk."""
        return self.numbers_left <= 0 or self.nodes_left <= 0

    def value(self, index: int, depth: int) -> tuple[JSONValue, int]:
        """The value at ``index`` and the index after it; outer containers are read piece by piece."""
        opener = self.text[index : index + 1]
        if depth < STRUCTURED_DEPTH and opener == "[":
            return self.array(index + 1)
        if depth < STRUCTURED_DEPTH and opener == "{":
            return self.object(index + 1, depth)
        return _decode(self.text, index)

    def array(self, index: int) -> tuple[list[JSONValue], int]:
        """An array from just after its ``[``; one of objects or arrays is decoded a chunk at a time."""
        text = self.text
        index = _skip_whitespace(text, index)
        if text[index : index + 1] == "]":
            return [], index + 1
        first, end = _decode(text, index)
        boundary = _ELEMENT_BOUNDARIES.get(text[index])
        if boundary is None:  # scalars: each is one node, never worth a call of its own
            return _decode_rest(text, [first], end)
        boundaries = [boundary]
        opening = _opening(text, index) if text[index] == "{" else None
        if opening is not None:  # the first key of a row opens every row: a far more telling boundary
            boundaries.insert(0, re.compile(boundary.pattern[:-2] + re.escape(opening)))
        items = [first]
        start = index
        index = end
        counted = 0
        while True:
            following = _MEMBER_SEPARATOR.match(text, index)
            if following is None:
                return _decode_rest(text, items, index)  # the closing "]", or not JSON
            if len(items) > self.min_elements:
                if counted == 0:
                    self.nodes_left -= 1
                for item in items[counted:]:
                    self.tally(item)
                counted = len(items)
                if self.enough:
                    self.cut = True
                    return items, index
            _expect_element(text, following.end())
            wanted = max(self.min_elements + 1 - len(items), CHUNK_ELEMENTS)
            span = max((index - start) // len(items), 1)  # characters per element so far
            chunk = self.chunk(boundaries, following.end(), following.end() + wanted * span)
            if chunk is None:
                return _decode_rest(text, items, index)
            elements, index, closed = chunk
            items.extend(elements)
            if closed:
                return items, index

    def chunk(
        self, boundaries: list[re.Pattern[str]], start: int, search_from: int
    ) -> tuple[list[JSONValue], int, bool] | None:
        """The elements from ``start`` to the first element boundary at or after ``search_from``, the
        index after them, and whether the array closed among them; ``None`` when no candidate boundary
        decodes within :data:`CHUNK_ATTEMPTS` tries.

        A chunk that decodes as one array ending exactly where it was cut ends on an element boundary:
        cut inside a string, or inside a nested value, it would not decode.
        """
        text = self.text
        for _ in range(CHUNK_ATTEMPTS):
            candidate = None
            for boundary in boundaries:
                candidate = boundary.search(text, search_from)
                if candidate is not None:
                    break
            if candidate is None:
                return None
            end = candidate.start() + 1
            piece = "[" + text[start:end] + "]"
            try:
                elements, used = _DECODER.raw_decode(piece)
            except ValueError:  # not an element boundary (or not JSON): try the next
                search_from = end
                continue
            if used < len(piece):  # the array closed inside the chunk, at piece[used - 1]
                return elements, start + used - 1, True
            return elements, end, False
        return None

    def object(self, index: int, depth: int) -> tuple[dict[str, JSONValue], int]:
        """An object from just after its ``{``: member by member, values read by :meth:`value`; past
        :data:`STRUCTURED_MEMBERS` members the rest is decoded whole."""
        text = self.text
        members: dict[str, JSONValue] = {}
        index = _skip_whitespace(text, index)
        if text[index : index + 1] == "}":
            return members, index + 1
        while True:
            if len(members) >= STRUCTURED_MEMBERS:
                rest, end = _decode_from("{", text, index)
                members.update(cast("dict[str, JSONValue]", rest))  # the text read starts with "{"
                return members, end
            if text[index : index + 1] != '"':
                raise _NotJSON
            key, index = _decode(text, index)  # a string: it starts with '"'
            if not isinstance(key, str):
                raise _NotJSON
            following = _KEY_SEPARATOR.match(text, index)
            if following is None:
                raise _NotJSON
            members[key], index = self.value(following.end(), depth + 1)
            if self.cut:
                return members, index
            following = _MEMBER_SEPARATOR.match(text, index)
            if following is None:
                return members, _closed(text, index, "}")
            index = following.end()

    def tally(self, value: JSONValue) -> None:
        """Count the values an element holds, and its finite numbers within :data:`TALLY_DEPTH`."""
        numbers = values = 0
        stack: list[tuple[JSONValue, int]] = [(value, 0)]
        while stack:
            node, depth = stack.pop()
            values += 1
            if depth >= TALLY_DEPTH:
                continue
            for child in node.values() if isinstance(node, dict) else node if isinstance(node, list) else ():
                kind = type(child)
                if kind is float:
                    values += 1
                    numbers += child - child == 0.0  # type: ignore[operator]  # finite: not NaN, not ±inf
                elif kind is int:
                    values += 1
                    numbers += -_LARGEST_INT < child < _LARGEST_INT  # type: ignore[operator]
                elif kind is dict or kind is list:
                    stack.append((child, depth + 1))
                else:
                    values += 1
        self.numbers_left -= numbers
        self.nodes_left -= values


def _opening(text: str, index: int) -> str | None:
    """The text from an object's ``{`` at ``index`` to the end of its first key, or ``None``."""
    key_start = _skip_whitespace(text, index + 1)
    if text[key_start : key_start + 1] != '"':
        return None
    _, key_end = _decode(text, key_start)
    return text[index:key_end]


def _decode(text: str, index: int) -> tuple[JSONValue, int]:
    """The value at ``index`` decoded whole by the C scanner, and the index after it."""
    value: JSONValue
    value, end = _DECODER.raw_decode(text, index)
    return value, end


def _decode_rest(text: str, items: list[JSONValue], index: int) -> tuple[list[JSONValue], int]:
    """``items`` and the rest of their array, from just after the element ending at ``index``, decoded
    by one call."""
    following = _MEMBER_SEPARATOR.match(text, index)
    if following is None:
        return items, _closed(text, index, "]")
    rest, end = _decode_from("[", text, following.end())
    items.extend(rest)  # type: ignore[arg-type]  # a list: the text read starts with "["
    return items, end


def _decode_from(opener: str, text: str, index: int) -> tuple[JSONValue, int]:
    """The rest of a container whose next element (or member) starts at ``index``, decoded whole as if
    ``opener`` stood just before it, and the index in ``text`` after its closer."""
    _expect_element(text, index)
    rest, used = _decode(opener + text[index:], 0)
    return rest, index + used - 1


def _closed(text: str, index: int, closer: str) -> int:
    """The index after ``closer``, the next character from ``index`` past whitespace; raises
    :class:`_NotJSON` when something else stands there."""
    index = _skip_whitespace(text, index)
    if text[index : index + 1] != closer:
        raise _NotJSON
    return index + 1


def _expect_element(text: str, index: int) -> None:
    """Raise :class:`_NotJSON` unless an element (or member) follows the separator ending at ``index``:
    a trailing comma (``[0,]``) is not JSON, although the rest decoded alone (``[]``) would be."""
    if text[index : index + 1] in ("]", "}"):
        raise _NotJSON


def _skip_whitespace(text: str, index: int) -> int:
    """The index of the first character at or after ``index`` that is not JSON whitespace."""
    return _WHITESPACE.match(text, index).end()  # type: ignore[union-attr]  # matches the empty text

"""Parameter names, descriptions and allowed values from an offered tool's input schema, for every convention.

The tool-choice check's calibrated scoring embeds a tool's parameters with its name and description:
a parameter list says what a tool acts on ("drink_id", "new_preferences.milk_type") where a one-line
description often does not. Schemas arrive as JSON Schema objects (``gen_ai.tool.definitions``
``parameters``, OpenInference's ``json_schema``, Anthropic's ``input_schema``, MCP's ``inputSchema``) or
as JSON strings of one (OpenLLMetry's ``llm.request.functions.<i>.parameters``). Reading is defensive: a
schema that is malformed, truncated or of an unexpected shape yields fewer parameters, never an error.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from otel_shapecheck._model import JSONValue, ToolParameter
from otel_shapecheck.readers._lenient_json import parse_json

SCHEMA_KEYS: Final = ("parameters", "input_schema", "inputSchema", "json_schema")
"""Where a tool definition keeps its input schema, in the order they are looked for."""
MAX_PARAMETERS: Final = 64
"""Parameters kept per tool: past a few dozen they no longer fit the embedder's input anyway."""
MAX_DEPTH: Final = 2
"""Nesting levels of object properties read (``outer.inner``); deeper ones are left out."""
MAX_DESCRIPTION_CHARS: Final = 300
"""Characters kept of one parameter's description."""
MAX_ENUM_VALUES: Final = 20
"""Allowed values kept per parameter; the first few say what the parameter is about."""
MAX_ENUM_VALUE_CHARS: Final = 64
"""Characters kept of one allowed value."""


def schema_of(definition: Mapping[str, JSONValue]) -> JSONValue:
    """The input schema of one tool definition (flat or OpenAI-nested), or ``None``."""
    for key in SCHEMA_KEYS:
        value = definition.get(key)
        if value is not None:
            return value
    return None


def tool_parameters(schema: object) -> tuple[ToolParameter, ...]:
    """The parameters of a JSON Schema object (or a JSON string of one), in schema order.

    Top-level properties first reach the list, each followed by its nested object properties (also
    under ``items`` of an array) as ``outer.inner``, up to :data:`MAX_DEPTH` levels and
    :data:`MAX_PARAMETERS` in all. Anything that is not a schema gives ``()``.
    """
    parsed = parse_json(schema) if isinstance(schema, str | bytes | bytearray) else schema
    found: list[ToolParameter] = []
    if isinstance(parsed, Mapping):
        _collect(parsed, "", 1, found)
    return tuple(found)


def _collect(schema: Mapping[object, object], prefix: str, depth: int, found: list[ToolParameter]) -> None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return
    for name, spec in properties.items():
        if len(found) >= MAX_PARAMETERS:
            return
        if not isinstance(name, str) or not name.strip():
            continue
        description = spec.get("description") if isinstance(spec, Mapping) else None
        text = description.strip()[:MAX_DESCRIPTION_CHARS] if isinstance(description, str) else ""
        enum = _enum_values(spec) if isinstance(spec, Mapping) else ()
        found.append(ToolParameter(prefix + name, text or None, enum))
        if depth < MAX_DEPTH and isinstance(spec, Mapping):
            items = spec.get("items")
            nested = items if isinstance(items, Mapping) and "properties" not in spec else spec
            _collect(nested, f"{prefix}{name}.", depth + 1, found)


def _enum_values(spec: Mapping[object, object]) -> tuple[str, ...]:
    """A property's ``enum`` (or its items' ``enum``): strings and numbers as text, bounded."""
    values = spec.get("enum")
    items = spec.get("items")
    if not isinstance(values, list) and isinstance(items, Mapping):
        values = items.get("enum")
    if not isinstance(values, list):
        return ()
    kept: list[str] = []
    for value in values:
        if len(kept) >= MAX_ENUM_VALUES:
            break
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            continue
        text = str(value).strip()[:MAX_ENUM_VALUE_CHARS]
        if text:
            kept.append(text)
    return tuple(kept)

"""Tool parameters from input schemas: every convention's shape, nested properties, hostile schemas."""

from __future__ import annotations

import json

import pytest

from otel_shapecheck._model import ToolParameter
from otel_shapecheck.readers._genai import offered_tool_from_json, read_tool_definitions
from otel_shapecheck.readers._openinference import read_openinference_content
from otel_shapecheck.readers._openllmetry import read_openllmetry_content
from otel_shapecheck.readers._tool_schema import MAX_PARAMETERS, tool_parameters

SCHEMA = {
    "type": "object",
    "properties": {
        "drink_id": {"type": "string", "description": "  The drink to change. "},
        "new_preferences": {
            "type": "object",
            "description": "What to change.",
            "properties": {"size": {"type": "string", "description": "small, medium or large"}},
        },
        "toppings": {"type": "array", "items": {"type": "object", "properties": {"name": {}}}},
    },
}
EXPECTED = (
    ToolParameter("drink_id", "The drink to change."),
    ToolParameter("new_preferences", "What to change."),
    ToolParameter("new_preferences.size", "small, medium or large"),
    ToolParameter("toppings"),
    ToolParameter("toppings.name"),
)


def test_schema_order_with_nested_and_array_item_properties() -> None:
    assert tool_parameters(SCHEMA) == EXPECTED
    assert tool_parameters(json.dumps(SCHEMA)) == EXPECTED


@pytest.mark.parametrize("key", ["parameters", "input_schema", "inputSchema"])
def test_flat_definitions_of_every_vendor_shape(key: str) -> None:
    tool = offered_tool_from_json({"name": "change_drink", "description": "d", key: SCHEMA})
    assert tool is not None and tool.parameters == EXPECTED


def test_openai_nested_definition_on_gen_ai_tool_definitions() -> None:
    value = json.dumps([{"type": "function", "function": {"name": "f", "parameters": SCHEMA}}])
    (tool,) = read_tool_definitions(value) or ()
    assert tool.parameters == EXPECTED


def test_openinference_json_schema_and_openllmetry_parameters_string() -> None:
    definition = {"type": "function", "function": {"name": "f", "description": "d", "parameters": SCHEMA}}
    openinference = read_openinference_content({"llm.tools.0.tool.json_schema": json.dumps(definition)})
    assert openinference.offered_tools is not None
    assert openinference.offered_tools[0].parameters == EXPECTED
    openllmetry = read_openllmetry_content(
        {"llm.request.functions.0.name": "f", "llm.request.functions.0.parameters": json.dumps(SCHEMA)}
    )
    assert openllmetry.offered_tools is not None
    assert openllmetry.offered_tools[0].parameters == EXPECTED


@pytest.mark.parametrize(
    "schema",
    [
        None,
        "",
        '{"properties": {"a": ',  # truncated
        "not json",
        42,
        [1, 2],
        {"properties": ["a", "b"]},
        {"properties": {"": {}, "  ": {"description": 3}}},
        {"properties": None},
    ],
)
def test_hostile_schemas_give_no_parameters_and_never_raise(schema: object) -> None:
    assert tool_parameters(schema) == ()


def test_odd_property_specs_keep_the_name_only() -> None:
    schema = {"properties": {"a": 5, "b": {"description": ["x"]}, "c": {"properties": "x"}}}
    assert tool_parameters(schema) == (ToolParameter("a"), ToolParameter("b"), ToolParameter("c"))


def test_deep_nesting_and_huge_schemas_are_bounded() -> None:
    deep: dict[str, object] = {"properties": {"x": {"properties": {"y": {"properties": {"z": {}}}}}}}
    assert [p.name for p in tool_parameters(deep)] == ["x", "x.y"]
    huge = {"properties": {f"p{i}": {"description": "d" * 1000} for i in range(500)}}
    parameters = tool_parameters(huge)
    assert len(parameters) == MAX_PARAMETERS
    assert all(len(p.description or "") <= 300 for p in parameters)


def test_allowed_values_of_a_property_or_of_its_items() -> None:
    """``enum`` values (strings and numbers, as text) are kept in order, also from an array's items."""
    schema = {
        "properties": {
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "array", "items": {"type": "integer", "enum": [1, 7, 30]}},
            "mode": {"type": ["string", "null"], "enum": ["fast", None, True, {"x": 1}, "  ", "slow"]},
        }
    }
    assert tool_parameters(schema) == (
        ToolParameter("unit", None, ("celsius", "fahrenheit")),
        ToolParameter("days", None, ("1", "7", "30")),
        ToolParameter("mode", None, ("fast", "slow")),
    )


def test_allowed_values_are_bounded() -> None:
    schema = {"properties": {"p": {"enum": ["v" * 1000] + [f"v{i}" for i in range(1000)]}}}
    (parameter,) = tool_parameters(schema)
    assert len(parameter.enum) == 20
    assert all(len(value) <= 64 for value in parameter.enum)

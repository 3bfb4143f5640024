"""The tool-choice corpora nobody tuned on: well-formed cases, and the fresh benchmark's rules as written."""

from __future__ import annotations

import json

import numpy as np

from benchmarks import _bfcl, _bfcl_multi_turn, _seal_tools, _stabletoolbench, _toolalpaca
from benchmarks._tool_choice_rule import helps
from benchmarks.bench_tool_choice_centred import centred_cosines
from benchmarks.bench_tool_choice_fresh import schema_values, valued_text
from benchmarks.bench_tool_choice_shared import shared_dropped
from otel_shapecheck._model import OfferedTool
from otel_shapecheck.checks.tool_choice._margin import cosine_scores
from otel_shapecheck.embedding._tool_index import parameter_text
from otel_shapecheck.readers._tool_schema import tool_parameters


def test_toolalpaca_cases_are_single_choices_on_menus_with_schemas_and_no_arguments() -> None:
    records = [json.loads(line) for line in _toolalpaca.DATA_FILE.read_text(encoding="utf-8").splitlines()]
    cases = _toolalpaca.load()
    assert len(cases) == len(records) == 129
    assert all("arguments" not in record for record in records)
    for case in cases:
        names = [tool.name for tool in case.tools]
        assert len(case.chosen) == 1 and case.chosen[0] in names and len(names) >= 2
        assert len(set(names)) == len(names)
    assert sum(bool(tool.parameters) for case in cases for tool in case.tools) > 0


def test_multi_turn_cases_name_their_classes_and_menus_come_from_bfcl_eval() -> None:
    records = [
        json.loads(line) for line in _bfcl_multi_turn.DATA_FILE.read_text(encoding="utf-8").splitlines()
    ]
    assert len(records) == 477
    assert all(set(record) == {"id", "query", "classes", "chosen"} for record in records)
    assert all(set(record["classes"]) <= set(_bfcl_multi_turn.CLASS_FILES) for record in records)
    assert _bfcl.source_dir() is not None, "bfcl-eval's data is installed by `make test`"
    cases = _bfcl_multi_turn.load()
    assert cases is not None
    for case in cases:
        assert case.chosen[0] in {tool.name for tool in case.tools} and len(case.tools) >= 18


SCHEMA = {
    "type": "object",
    "properties": {
        "unit": {"type": "string", "description": "Temperature unit", "enum": ["c", "f"], "default": "c"},
        "city": {"type": "string", "description": "City name", "examples": ["Paris", "Oslo"]},
        "days": {"type": "integer", "default": None},
        "verbose": {"type": "boolean", "default": False},
    },
}


def test_values_lever_leaves_a_tool_without_values_exactly_as_the_check_embeds_it() -> None:
    bare = OfferedTool("get_weather", "Current weather for a city")
    assert valued_text(bare, None, ("default", "examples")) == parameter_text(bare.name, bare.description, ())
    no_values = {"type": "object", "properties": {"city": {"type": "string", "description": "City"}}}
    tool = OfferedTool("get_weather", "Current weather", tool_parameters(no_values))
    expected = parameter_text(tool.name, tool.description, tool.parameters)
    assert valued_text(tool, no_values, ("default", "examples")) == expected


def test_values_lever_adds_scalar_defaults_and_examples_after_their_parameter() -> None:
    tool = OfferedTool("get_weather", "Current weather", tool_parameters(SCHEMA))
    assert schema_values(SCHEMA, ("default",)) == {"unit": ("c", ())}
    assert valued_text(tool, SCHEMA, ("default", "examples")) == (
        "get weather: Current weather (parameters: unit: Temperature unit (one of c, f) (default c); "
        "city: City name (e.g. Paris, Oslo); days; verbose)"
    )
    assert valued_text(tool, SCHEMA, ()) == parameter_text(tool.name, tool.description, tool.parameters)


def test_a_lever_helps_only_with_no_more_false_alarms_no_less_detection_and_one_strictly_better() -> None:
    shipped = (0.30, 0.99, 0.965)
    assert helps((0.29, 0.99, 0.965), shipped)
    assert helps((0.30, 0.98, 0.97), shipped)
    assert not helps(shipped, shipped)
    assert not helps((0.29, 0.99, 0.96), shipped)
    assert not helps((0.31, 0.99, 0.99), shipped)


def test_seal_tools_cases_are_single_choices_on_stored_menus_with_schemas_and_no_arguments() -> None:
    lines = _seal_tools.DATA_FILE.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    tools = [record["tool"] for record in records if "tool" in record]
    assert len({tool["name"] for tool in tools}) == len(tools) == 1084
    assert all(
        set(record) == {"id", "split", "query", "menu", "chosen"} for record in records if "id" in record
    )
    cases = _seal_tools.load()
    assert len(cases) == 294
    for case in cases:
        names = [tool.name for tool in case.tools]
        assert len(case.chosen) == 1 and case.chosen[0] in names and len(set(names)) == len(names) >= 2
        assert all(tool.description for tool in case.tools)
    assert sum(bool(tool.parameters) for case in cases for tool in case.tools) > 0


def test_shared_text_lever_drops_sentences_most_of_the_menu_shares_and_keeps_other_menus_exact() -> None:
    shared = "This tool belongs to the Vehicle API."
    menu = (
        OfferedTool("lock", f"{shared} Lock the doors."),
        OfferedTool("start", f"{shared}\nStart the engine."),
        OfferedTool("honk", "Sound the horn. Twice if asked."),
    )
    dropped = shared_dropped(menu, 0.5, parameters=False)
    assert [tool.description for tool in dropped] == [
        "Lock the doors.",
        "Start the engine.",
        menu[2].description,
    ]
    assert shared_dropped(menu, 1.0, parameters=False) == menu
    distinct = (OfferedTool("lock", "Lock the doors."), OfferedTool("start", "Start the engine."))
    assert shared_dropped(distinct, 0.25, parameters=True) is distinct
    alone = shared_dropped((OfferedTool("a", shared), OfferedTool("b", shared)), 1.0, parameters=False)
    assert [tool.description for tool in alone] == [None, None]


def test_shared_text_lever_drops_parameter_entries_only_when_asked() -> None:
    city = {"type": "object", "properties": {"city": {"type": "string", "description": "City name"}}}
    menu = (
        OfferedTool("weather", "Current weather.", tool_parameters(city)),
        OfferedTool("time", "Local time.", tool_parameters(city)),
    )
    assert shared_dropped(menu, 1.0, parameters=False) == menu
    assert [tool.parameters for tool in shared_dropped(menu, 1.0, parameters=True)] == [(), ()]


def test_stabletoolbench_cases_are_single_choices_on_stored_menus_in_toolbench_form() -> None:
    lines = _stabletoolbench.DATA_FILE.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    tools = [record["tool"] for record in records if "tool" in record]
    assert len(tools) == 2315
    assert all(
        set(record) == {"id", "group", "query", "menu", "chosen"} for record in records if "id" in record
    )
    cases = _stabletoolbench.load()
    assert len(cases) == 1376
    assert {case.id.split("_", 1)[1].rsplit("_", 2)[0] for case in cases} == set(_stabletoolbench.GROUPS)
    for case in cases:
        names = [tool.name for tool in case.tools]
        assert len(case.chosen) == 1 and case.chosen[0] in names and len(set(names)) == len(names) >= 2
        assert all(tool.description.startswith("This is the subfunction for tool ") for tool in case.tools)
        assert not case.arguments
    assert sum(bool(tool.parameters) for case in cases for tool in case.tools) > 0
    seen = {
        tool.name for corpus in (_toolalpaca.load(), _seal_tools.load()) for c in corpus for tool in c.tools
    }
    assert seen.isdisjoint(tool.name for case in cases for tool in case.tools)


def test_stabletoolbench_tools_are_named_and_described_as_toolbench_offers_them() -> None:
    api = {
        "tool_name": "Currency Converter_v2",
        "api_name": "Convert",
        "api_description": "Convert from one currency to another",
        "required_parameters": [
            {"name": "from", "type": "STRING", "description": "Source", "default": "USD"}
        ],
        "optional_parameters": [{"name": "amount", "type": "NUMBER", "description": "", "default": "1"}],
    }
    tool = _stabletoolbench.function(api)
    assert tool["name"] == "convert_for_currency_converter_v2"
    assert tool["description"] == (
        'This is the subfunction for tool "currency_converter_v2", you can use this tool.'
        'The description of this function is: "convert_for_currency_converter_v2 from one currency'
        ' to another"'
    )
    assert tool["parameters"] == {
        "type": "object",
        "properties": {
            "is_from": {"type": "string", "description": "Source"},
            "amount": {"type": "integer", "description": ""},
        },
        "required": ["is_from"],
    }
    assert _stabletoolbench.standardised("7 Day Forecast!") == "get_7_day_forecast"


def test_centred_lever_ignores_what_every_tool_of_the_menu_shares() -> None:
    tools = np.array([[0.9, 0.1, 0.0, 0.2], [0.1, 0.8, 0.3, 0.0], [0.0, 0.2, 0.9, 0.4]])
    context = np.array([0.2, 0.7, 0.1, 0.3])
    shared = np.array([3.0, -1.0, 2.0, 5.0])
    centred = centred_cosines(context, tools, 1.0)
    assert np.allclose(centred_cosines(context + shared, tools + shared, 1.0), centred)
    assert not np.allclose(cosine_scores(context + shared, tools + shared), cosine_scores(context, tools))
    assert np.array_equal(centred_cosines(context, tools, 0.0), cosine_scores(context, tools))
    pair = centred_cosines(context, tools[:2], 1.0)
    assert np.isclose(pair[0], -pair[1])

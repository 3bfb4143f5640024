"""Recorded message content: a JSON array of blocks is read as blocks, and any other string (a JSON tool
result included) is the message's text, parsed only as far as telling the two apart needs."""

from __future__ import annotations

import json

import pytest

from otel_shapecheck._model import ToolResult
from otel_shapecheck.readers._content_parts import _may_be_block_list, recorded_content_blocks

ROWS = [{"pool": f"pool-{index}", "used_tb": index + 0.5} for index in range(2_000)]


class TestRecordedContentBlocks:
    def test_a_block_list_is_read_as_blocks(self) -> None:
        """A JSON array of typed blocks gives their texts and tool results."""
        content = json.dumps(
            [
                {"type": "text", "text": "Here are the pools."},
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "12.5 TB"},
            ]
        )
        blocks = recorded_content_blocks(content)
        assert blocks.texts == ("Here are the pools.",)
        assert blocks.tool_results == (ToolResult("12.5 TB", call_id="toolu_1"),)

    @pytest.mark.parametrize(
        "content",
        [
            json.dumps(ROWS),
            json.dumps({"rows": ROWS}),
            " [1, 2, 3]",
            "[]",
            '[{"type": "text"}, 5',
            "plain text",
        ],
        ids=["list-of-rows", "object", "numbers", "empty", "cut-short", "text"],
    )
    def test_any_other_string_is_the_text(self, content: str) -> None:
        """Rows, objects, numbers, an empty or a cut-short array and plain text are the message's text."""
        assert recorded_content_blocks(content).texts == (content,)

    def test_only_an_array_opening_with_a_block_is_parsed_whole(self) -> None:
        """A list of rows is told apart by its first element; an array opening with a block, or with an
        element that cannot be read alone, is left to the whole parse."""
        assert not _may_be_block_list(json.dumps(ROWS))
        assert not _may_be_block_list(json.dumps({"rows": ROWS}))
        assert _may_be_block_list('[{"type": "text", "text": "a"}, {"rows": 1}]')
        assert _may_be_block_list("[" + "[" * 100_000)

"""Tool results shared by the figures tests: the capacity rows of the reference's parity vectors."""

from __future__ import annotations

import json

from otel_shapecheck._model import JSONValue, ToolResult

CAPACITY_ROWS: dict[str, JSONValue] = {
    "rows": [
        {
            "cluster": "CLUSTER-A01",
            "pool": "f710_pool",
            "total_tb": 2429.0,
            "used_tb": 1484.1,
            "used_pct": 61.1,
            "usable_tb": 435.5,
            "hot_spare_tb": 48.6,
        },
        {
            "cluster": "CLUSTER-A01",
            "pool": "h700_pool",
            "total_tb": 2973.9,
            "used_tb": 1715.9,
            "used_pct": 57.7,
            "usable_tb": 1090.8,
            "hot_spare_tb": 59.5,
        },
    ]
}
"""The capacity result of parity vector F1: two pools of one cluster."""


def capacity_result() -> ToolResult:
    """F1's result as a tool message would carry it: a JSON string."""
    return ToolResult(json.dumps(CAPACITY_ROWS), call_id="call_1", name="get_capacity")

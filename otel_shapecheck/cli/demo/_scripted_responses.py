"""The scripted server's OpenAI Responses API (``POST /v1/responses``): one reply as a response object or SSE.

A scripted reply becomes a ``response`` whose ``output`` holds one ``function_call`` item per tool call
(parallel calls included) and, when the reply has text, one assistant ``message`` item with an
``output_text`` part. A ``"stream": true`` request gets the event sequence the API sends:
``response.created``, the per-item ``added``/``delta``/``done`` events, then ``response.completed``
carrying the whole response.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall

RESPONSES_PATHS = frozenset({"/v1/responses", "/responses"})


def response_body(
    reply: ScriptedReply,
    request: Mapping[str, Any],
    response_id: str,
    call_id: Callable[[ScriptedToolCall], str],
    model: str,
) -> dict[str, Any]:
    """The non-streaming ``response`` object for a scripted reply."""
    output: list[dict[str, Any]] = []
    for index, call in enumerate(reply.tool_calls):
        output.append(
            {
                "type": "function_call",
                "id": f"fc_{response_id}_{index}",
                "call_id": call_id(call),
                "name": call.name,
                "arguments": call.arguments_json(),
                "status": "completed",
            }
        )
    if reply.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{response_id}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": reply.text, "annotations": [], "logprobs": []}],
            }
        )
    return {**_envelope(request, response_id, model, "completed"), "output": output, "usage": _usage(reply)}


def response_events(body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    """The server-sent events of a streamed response, built from its complete ``response`` object."""
    sequence = iter(range(1_000_000))
    started = {**body, "status": "in_progress", "output": [], "usage": None}
    yield {"type": "response.created", "sequence_number": next(sequence), "response": started}
    yield {"type": "response.in_progress", "sequence_number": next(sequence), "response": started}
    for index, item in enumerate(body["output"]):
        for event in _item_events(index, item):
            yield {**event, "sequence_number": next(sequence)}
    yield {"type": "response.completed", "sequence_number": next(sequence), "response": dict(body)}


def _item_events(index: int, item: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    where = {"output_index": index, "item_id": item["id"]}
    if item["type"] == "function_call":
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "arguments": ""}}
        yield {"type": "response.function_call_arguments.delta", **where, "delta": item["arguments"]}
        yield {
            "type": "response.function_call_arguments.done",
            **where,
            "name": item["name"],
            "arguments": item["arguments"],
        }
    else:
        part = item["content"][0]
        empty_part = {**part, "text": ""}
        yield {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
        yield {"type": "response.content_part.added", **where, "content_index": 0, "part": empty_part}
        yield {
            "type": "response.output_text.delta",
            **where,
            "content_index": 0,
            "delta": part["text"],
            "logprobs": [],
        }
        yield {
            "type": "response.output_text.done",
            **where,
            "content_index": 0,
            "text": part["text"],
            "logprobs": [],
        }
        yield {"type": "response.content_part.done", **where, "content_index": 0, "part": part}
    yield {"type": "response.output_item.done", "output_index": index, "item": dict(item)}


def _envelope(request: Mapping[str, Any], response_id: str, model: str, status: str) -> dict[str, Any]:
    requested_model = request.get("model")
    tools = request.get("tools")
    return {
        "id": response_id,
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": requested_model if isinstance(requested_model, str) else model,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": 1.0,
        "top_p": 1.0,
        "tool_choice": "auto",
        "tools": tools if isinstance(tools, list) else [],
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
    }


def _usage(reply: ScriptedReply) -> dict[str, Any]:
    return {
        "input_tokens": reply.prompt_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": reply.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }

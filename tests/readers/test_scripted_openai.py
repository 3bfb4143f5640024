"""The scripted OpenAI-compatible server, driven by the real ``openai`` client over loopback."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request

import openai
import pytest

from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_openai import ScriptedOpenAIServer

from .telemetry import TOOLS


def _client(server: ScriptedOpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="scripted", max_retries=0)


def test_replies_play_in_order_with_tool_calls_text_and_metadata() -> None:
    script = [
        ScriptedReply(
            tool_calls=[
                ScriptedToolCall("get_weather", {"city": "Paris"}, call_id="call_a"),
                ScriptedToolCall("get_time", '{"city": "Oslo"}'),
            ],
            completion_id="chatcmpl-a",
            prompt_tokens=30,
            completion_tokens=5,
        ),
        ScriptedReply(text="Done.", finish_reason="length"),
    ]
    with ScriptedOpenAIServer(script) as server:
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        with _client(server) as client:
            messages = [{"role": "user", "content": "hi"}]
            first = client.chat.completions.create(model="m-1", messages=messages, tools=TOOLS)  # type: ignore[arg-type]
            second = client.chat.completions.create(model="m-2", messages=messages)  # type: ignore[arg-type]
        received = server.requests

    assert first.id == "chatcmpl-a" and first.model == "m-1"
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls"
    calls = choice.message.tool_calls or []
    assert [(call.function.name, json.loads(call.function.arguments)) for call in calls] == [  # type: ignore[union-attr]
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Oslo"}),
    ]
    assert calls[0].id == "call_a" and calls[1].id and calls[1].id != "call_a"
    assert first.usage is not None and (first.usage.prompt_tokens, first.usage.total_tokens) == (30, 35)
    assert second.choices[0].message.content == "Done."
    assert second.choices[0].finish_reason == "length"
    assert [request.path for request in received] == ["/v1/chat/completions"] * 2
    assert received[0].body["tools"] == TOOLS and received[1].body["model"] == "m-2"


def test_streamed_reply_arrives_as_chunks() -> None:
    script = [
        ScriptedReply(text="Checking.", tool_calls=[ScriptedToolCall("get_weather", {"city": "Rome"}, "c1")])
    ]
    with ScriptedOpenAIServer(script) as server, _client(server) as client:
        stream = client.chat.completions.create(
            model="m",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
    text = "".join(choice.delta.content or "" for chunk in chunks for choice in chunk.choices)
    deltas = [call for chunk in chunks for choice in chunk.choices for call in choice.delta.tool_calls or ()]
    finishes = [choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason]
    assert text == "Checking."
    assert [(d.id, d.function.name, d.function.arguments) for d in deltas] == [  # type: ignore[union-attr]
        ("c1", "get_weather", '{"city": "Rome"}')
    ]
    assert finishes == ["tool_calls"]
    assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == 18
    assert len({chunk.id for chunk in chunks}) == 1


def test_a_request_beyond_the_script_is_a_server_error() -> None:
    with ScriptedOpenAIServer([]) as server, _client(server) as client:
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert len(server.requests) == 1


def test_unknown_paths_and_bad_bodies_are_refused() -> None:
    with ScriptedOpenAIServer([ScriptedReply(text="unused")]) as server:
        for path, body, status in (
            ("/v1/embeddings", b"{}", 404),
            ("/v1/chat/completions", b"not json", 400),
        ):
            request = urllib.request.Request(server.root_url + path, data=body, method="POST")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=5)
            assert refused.value.code == status
            refused.value.close()
        assert server.requests == []


def test_stop_releases_the_port() -> None:
    server = ScriptedOpenAIServer([ScriptedReply(text="x")]).start()
    url = server.root_url
    server.stop()
    with pytest.raises(RuntimeError):
        _ = server.base_url
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(url + "/v1/chat/completions", data=b"{}", timeout=2)


def test_stop_ends_kept_alive_connections_and_their_threads() -> None:
    before = set(threading.enumerate())
    server = ScriptedOpenAIServer([ScriptedReply(text="x")]).start()
    client = _client(server)
    client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    server.stop()  # the client still holds its kept-alive connection
    assert set(threading.enumerate()) - before == set()
    client.close()

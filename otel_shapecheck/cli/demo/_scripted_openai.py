"""A scripted OpenAI-compatible chat-completions server on the loopback interface.

It answers ``POST /v1/chat/completions`` with canned replies, in order, so the real ``openai`` client
(and every instrumentation that wraps it) can run a whole agent turn without a network or a model.
Tests use it to capture real telemetry; the CLI demo uses it to run an agent offline. The same script
can also be played in Anthropic's messages format (``POST /v1/messages``) and Cohere's v2 chat format
(``POST /v2/chat``), so clients of those wire formats run against it too, and as OpenAI Responses
(``POST /v1/responses``, plain or streamed).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from otel_shapecheck.cli.demo._script import ScriptedReply, ScriptedToolCall
from otel_shapecheck.cli.demo._scripted_responses import RESPONSES_PATHS, response_body, response_events

logger = logging.getLogger(__name__)

_CHAT_COMPLETIONS_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_COHERE_CHAT_PATH = "/v2/chat"
_ANTHROPIC_MESSAGES_PATH = "/v1/messages"
_ROUTES = _CHAT_COMPLETIONS_PATHS | RESPONSES_PATHS | {_COHERE_CHAT_PATH, _ANTHROPIC_MESSAGES_PATH}
_ANTHROPIC_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_COHERE_FINISH_REASONS = {"stop": "COMPLETE", "tool_calls": "TOOL_CALL", "length": "MAX_TOKENS"}
_POLL_INTERVAL_S = 0.02


@dataclass(frozen=True)
class ReceivedRequest:
    """One request the server received: its path and decoded JSON body."""

    path: str
    body: Mapping[str, Any]


class ScriptExhaustedError(RuntimeError):
    """Raised by :meth:`ScriptedOpenAIServer.next_reply` when a request arrives after the last reply."""


class ScriptedOpenAIServer:
    """An OpenAI-compatible HTTP server on 127.0.0.1 that plays a script of replies.

    Use it as a context manager; ``base_url`` (``http://127.0.0.1:PORT/v1``) goes to
    ``openai.OpenAI(base_url=..., api_key=...)``. Each ``POST /v1/chat/completions`` consumes the next
    reply; ``"stream": true`` requests get server-sent events. ``POST /v1/messages`` and ``POST /v2/chat``
    consume the next reply too and answer in Anthropic's and Cohere's formats (use ``root_url`` as those
    clients' base URL). A request beyond the script gets HTTP 500.
    """

    def __init__(self, replies: Sequence[ScriptedReply], *, model: str = "gpt-4o-mini") -> None:
        self._replies = list(replies)
        self._model = model
        self._lock = threading.Lock()
        self._next_index = 0
        self._requests: list[ReceivedRequest] = []
        self._ids = itertools.count(1)
        self._server: _ClosingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI base URL of the running server, ``http://127.0.0.1:PORT/v1``."""
        if self._server is None:
            raise RuntimeError("the scripted server is not running")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def root_url(self) -> str:
        """The server's root URL, ``http://127.0.0.1:PORT``, for clients that add their own version prefix."""
        return self.base_url.removesuffix("/v1")

    @property
    def requests(self) -> list[ReceivedRequest]:
        """The requests received so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model(self) -> str:
        """The model name the server reports when a request names none."""
        return self._model

    def start(self) -> ScriptedOpenAIServer:
        """Bind to 127.0.0.1 on a free port and serve on a background thread."""
        if self._server is not None:
            return self
        server = _ClosingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever,
            kwargs={"poll_interval": _POLL_INTERVAL_S},
            name="scripted-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, close open client connections and wait for every server thread to end."""
        server, thread = self._server, self._thread
        self._server, self._thread = None, None
        if server is not None:
            server.shutdown()
            server.server_close()
        if thread is not None:
            thread.join(timeout=5)

    def __enter__(self) -> ScriptedOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def next_reply(self, path: str, body: Mapping[str, Any]) -> ScriptedReply:
        """Record a request and return the reply the script holds for it."""
        with self._lock:
            self._requests.append(ReceivedRequest(path=path, body=body))
            if self._next_index >= len(self._replies):
                raise ScriptExhaustedError(f"no scripted reply left for request {len(self._requests)}")
            reply = self._replies[self._next_index]
            self._next_index += 1
            return reply

    def completion_body(self, reply: ScriptedReply, request: Mapping[str, Any]) -> dict[str, Any]:
        """The non-streaming ``chat.completion`` object for a reply."""
        message: dict[str, Any] = {"role": "assistant", "content": reply.text, "refusal": None}
        if reply.tool_calls:
            message["tool_calls"] = [
                _tool_call_object(call, self._tool_call_id(call)) for call in reply.tool_calls
            ]
        return {
            **self._envelope(reply, request, "chat.completion"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": reply.resolved_finish_reason(),
                }
            ],
            "usage": _usage(reply),
        }

    def completion_chunks(self, reply: ScriptedReply, request: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        """The ``chat.completion.chunk`` objects of a streamed reply: role, text, tool calls, finish."""
        envelope = self._envelope(reply, request, "chat.completion.chunk")
        yield {**envelope, "choices": [_chunk_choice({"role": "assistant", "content": ""})]}
        if reply.text:
            yield {**envelope, "choices": [_chunk_choice({"content": reply.text})]}
        for index, call in enumerate(reply.tool_calls):
            delta = {"tool_calls": [{"index": index, **_tool_call_object(call, self._tool_call_id(call))}]}
            yield {**envelope, "choices": [_chunk_choice(delta)]}
        yield {**envelope, "choices": [_chunk_choice({}, reply.resolved_finish_reason())]}
        options = request.get("stream_options")
        if isinstance(options, Mapping) and options.get("include_usage"):
            yield {**envelope, "choices": [], "usage": _usage(reply)}

    def anthropic_message_body(self, reply: ScriptedReply, request: Mapping[str, Any]) -> dict[str, Any]:
        """The Anthropic ``message`` for a reply: a text block, then one ``tool_use`` block per call."""
        content: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        for call in reply.tool_calls:
            arguments = json.loads(call.arguments_json())
            content.append(
                {"type": "tool_use", "id": self._tool_call_id(call), "name": call.name, "input": arguments}
            )
        finish = reply.resolved_finish_reason()
        model = request.get("model")
        return {
            "id": reply.completion_id or f"msg_scripted_{next(self._ids)}",
            "type": "message",
            "role": "assistant",
            "model": model if isinstance(model, str) else self._model,
            "content": content,
            "stop_reason": _ANTHROPIC_STOP_REASONS.get(finish, finish),
            "stop_sequence": None,
            "usage": {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens},
        }

    def cohere_chat_body(self, reply: ScriptedReply) -> dict[str, Any]:
        """The Cohere v2 ``chat`` response for a reply: text content, tool plan and tool calls."""
        message: dict[str, Any] = {"role": "assistant"}
        if reply.tool_calls:
            message["tool_calls"] = [
                _tool_call_object(call, self._tool_call_id(call)) for call in reply.tool_calls
            ]
            if reply.text:
                message["tool_plan"] = reply.text
        elif reply.text is not None:
            message["content"] = [{"type": "text", "text": reply.text}]
        finish = reply.resolved_finish_reason()
        tokens = {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens}
        return {
            "id": reply.completion_id or f"cohere-scripted-{next(self._ids)}",
            "finish_reason": _COHERE_FINISH_REASONS.get(finish, finish.upper()),
            "message": message,
            "usage": {"billed_units": tokens, "tokens": tokens},
        }

    def response_body(self, reply: ScriptedReply, request: Mapping[str, Any]) -> dict[str, Any]:
        """The Responses API ``response`` for a reply: a ``function_call`` item per call, then the message."""
        response_id = reply.completion_id or f"resp_scripted_{next(self._ids)}"
        return response_body(reply, request, response_id, self._tool_call_id, self._model)

    def _envelope(self, reply: ScriptedReply, request: Mapping[str, Any], kind: str) -> dict[str, Any]:
        model = request.get("model")
        return {
            "id": reply.completion_id or f"chatcmpl-scripted-{next(self._ids)}",
            "object": kind,
            "created": int(time.time()),
            "model": model if isinstance(model, str) else self._model,
            "system_fingerprint": "fp_scripted",
        }

    def _tool_call_id(self, call: ScriptedToolCall) -> str:
        return call.call_id or f"call_scripted_{next(self._ids)}"


class _ClosingHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server whose ``server_close`` also ends kept-alive connections and their threads.

    Clients keep connections open between requests; without closing them, handler threads would
    wait on them after the server stopped.
    """

    daemon_threads = False
    block_on_close = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        with self._connections_lock:
            self._connections.add(connection)
        return connection, address

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def server_close(self) -> None:
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):  # Already closed by the client.
                connection.shutdown(socket.SHUT_RDWR)
        super().server_close()


def _tool_call_object(call: ScriptedToolCall, call_id: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments_json()},
    }


def _chunk_choice(delta: Mapping[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": dict(delta), "logprobs": None, "finish_reason": finish_reason}


def _usage(reply: ScriptedReply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _handler_class(server: ScriptedOpenAIServer) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one scripted server."""

    class _ScriptedHandler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 (the name http.server dispatches to)
            path = self.path.split("?", 1)[0]
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if path not in _ROUTES:
                self._send_json(HTTPStatus.NOT_FOUND, _error(f"no route for {path}"))
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                self._send_json(HTTPStatus.BAD_REQUEST, _error("request body is not JSON"))
                return
            if not isinstance(body, dict):
                self._send_json(HTTPStatus.BAD_REQUEST, _error("request body is not a JSON object"))
                return
            try:
                reply = server.next_reply(path, body)
            except ScriptExhaustedError as exc:
                self._send_json(HTTPStatus.INTERNAL_SERVER_ERROR, _error(str(exc)))
                return
            if path == _COHERE_CHAT_PATH:
                self._send_json(HTTPStatus.OK, server.cohere_chat_body(reply))
            elif path == _ANTHROPIC_MESSAGES_PATH:
                self._send_json(HTTPStatus.OK, server.anthropic_message_body(reply, body))
            elif path in RESPONSES_PATHS and body.get("stream") is True:
                events = response_events(server.response_body(reply, body))
                self._send_events([(event["type"], event) for event in events])
            elif path in RESPONSES_PATHS:
                self._send_json(HTTPStatus.OK, server.response_body(reply, body))
            elif body.get("stream") is True:
                self._send_stream(server.completion_chunks(reply, body))
            else:
                self._send_json(HTTPStatus.OK, server.completion_body(reply, body))

        def _send_json(self, status: HTTPStatus, payload: Mapping[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _send_stream(self, chunks: Iterator[Mapping[str, Any]]) -> None:
            events = [f"data: {json.dumps(chunk)}\n\n" for chunk in chunks] + ["data: [DONE]\n\n"]
            self._send_sse("".join(events).encode())

        def _send_events(self, events: Sequence[tuple[str, Mapping[str, Any]]]) -> None:
            self._send_sse(
                "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
            )

        def _send_sse(self, data: bytes) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            logger.debug("scripted openai: %s %s -> %s", self.command, self.path, args[1:2])

    return _ScriptedHandler


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "scripted_server_error", "code": None}}

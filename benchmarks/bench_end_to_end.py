"""End-to-end throughput: spans/s through processor → ``BatchSpanProcessor`` → OTLP HTTP exporter → receiver.

Agent traces are recorded once (an ``invoke_agent`` root, a chat span requesting a tool, the tool's
``execute_tool`` span, a chat span answering with figures, and two HTTP client spans: six spans of which
four are GenAI), then replayed into ``on_end`` of the pipeline. The figure is spans per second from the
first ``on_end`` until the receiver has counted every span. The baseline is the same pipeline without
the wrapper, measured in the same run, alternating rounds. The receiver runs in its own process on
127.0.0.1 (so it does not share the interpreter lock with the pipeline) and only counts spans.

With the wrapper every check runs on the worker thread (tool choice with the named embedder, conformance,
figures) and its verdicts ride on enriched copies, so the row shows what evaluation costs the export
path when spans arrive faster than any agent makes them. Run alone with
``python -m benchmarks.bench_end_to_end``.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import statistics
import threading
import time
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import SpanKind

from otel_shapecheck import (
    Check,
    ConformanceCheck,
    Embedder,
    FiguresCheck,
    HashingEmbedder,
    MiniLMEmbedder,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck.pipeline._options import ProcessorOptions

TURNS = 2_000
SPANS_PER_TURN = 6
_ROUNDS = 3
_TOOLS = [
    {
        "type": "function",
        "name": "get_capacity",
        "description": "Get the usable and raw storage capacity of every pool of a cluster",
        "parameters": {"type": "object", "properties": {"cluster": {"type": "string"}}},
    },
    {
        "type": "function",
        "name": "get_weather",
        "description": "Get the current weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
    {
        "type": "function",
        "name": "open_ticket",
        "description": "Open a support ticket for an incident",
        "parameters": {"type": "object", "properties": {"title": {"type": "string"}}},
    },
]


class _Recorder(SpanProcessor):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _messages(role: str, parts: list[dict[str, Any]], finish: str | None = None) -> str:
    message: dict[str, Any] = {"role": role, "parts": parts}
    if finish is not None:
        message["finish_reason"] = finish
    return json.dumps([message])


def _llm_call(tracer: trace.Tracer, question: str, output: list[dict[str, Any]], finish: str) -> None:
    """A chat span with its menu, question and reply, around the HTTP client span of the request."""
    attributes = {
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.operation.name": "chat",
        "gen_ai.tool.definitions": json.dumps(_TOOLS),
        "gen_ai.input.messages": _messages("user", [{"type": "text", "content": question}]),
        "gen_ai.output.messages": _messages("assistant", output, finish),
        "gen_ai.response.finish_reasons": (finish,),
    }
    with (
        tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes),
        tracer.start_as_current_span("POST", kind=SpanKind.CLIENT) as http,
    ):
        http.set_attributes({"http.request.method": "POST", "http.response.status_code": 200})


def agent_turn(tracer: trace.Tracer, number: int) -> None:
    """One agent turn in the GenAI span convention, content on the spans, as six spans of one trace."""
    question = f"How much usable storage do the pools of cluster {number} have?"
    rows: list[dict[str, Any]] = [
        {"pool": f"p{pool}", "usable_tb": 100 + number % 97 + pool, "raw_tb": 400 + pool} for pool in range(8)
    ]
    usable = sum(row["usable_tb"] for row in rows)
    call = {"type": "tool_call", "id": f"call_{number}", "name": "get_capacity", "arguments": {}}
    answer = {"type": "text", "content": f"The pools hold {usable} TB usable, 1.5 PB raw in total."}
    tool = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_capacity",
        "gen_ai.tool.call.id": f"call_{number}",
        "gen_ai.tool.call.result": json.dumps({"rows": rows}),
    }
    with tracer.start_as_current_span(
        "invoke_agent capacity", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        _llm_call(tracer, question, [call], "tool_calls")
        with tracer.start_as_current_span("execute_tool get_capacity", attributes=tool):
            pass
        _llm_call(tracer, question, [answer], "stop")


def agent_spans(turns: int) -> list[ReadableSpan]:
    """The ended spans of ``turns`` agent turns, in the order they ended."""
    recorder = _Recorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("bench.agent")
    for number in range(turns):
        agent_turn(tracer, number)
    provider.shutdown()
    return recorder.spans


# The receiver: a separate process that counts the spans of OTLP/HTTP export requests.


def _count_spans(request: ExportTraceServiceRequest) -> int:
    return sum(len(scope.spans) for resource in request.resource_spans for scope in resource.scope_spans)


def _serve(connection: Connection) -> None:
    received = [0]
    last = [0.0]
    counting = threading.Lock()  # requests are handled on parallel threads: `+=` alone can lose a count

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - the stdlib's hook name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            encoding = (self.headers.get("Content-Encoding") or "").lower()
            if encoding == "gzip":
                body = gzip.decompress(body)
            elif encoding == "deflate":
                body = zlib.decompress(body)
            spans = _count_spans(ExportTraceServiceRequest.FromString(body))
            with counting:
                received[0] += spans
                last[0] = time.monotonic()
            self._reply(ExportTraceServiceResponse().SerializeToString())

        def do_GET(self) -> None:  # noqa: N802 - the stdlib's hook name
            self._reply(str(last[0] if self.path == "/last" else received[0]).encode())

        def _reply(self, payload: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the stdlib's signature
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    connection.send(server.server_address[1])
    server.serve_forever(poll_interval=0.05)


class CountingReceiver:
    """A span-counting OTLP/HTTP receiver on 127.0.0.1 in a child process."""

    def __enter__(self) -> CountingReceiver:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        if not parent.poll(60):
            self._process.kill()
            raise RuntimeError("the receiver process did not start")
        self.port = parent.recv()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._process.terminate()
        self._process.join(10)

    @property
    def traces_url(self) -> str:
        """The exporter's ``endpoint=``."""
        return f"http://127.0.0.1:{self.port}/v1/traces"

    def count(self) -> int:
        """Spans received so far."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/count", timeout=10) as response:
            return int(response.read())

    def last_arrival(self) -> float:
        """``time.monotonic()`` (system-wide) when the receiver last counted spans: timing from it needs
        no frequent polling."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/last", timeout=10) as response:
            return float(response.read())

    def wait_for(self, count: int, timeout: float = 120.0) -> bool:
        """Wait until at least ``count`` spans arrived."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.count() >= count:
                return True
            time.sleep(0.005)
        return False


def _batch(receiver: CountingReceiver, queue: int) -> BatchSpanProcessor:
    return BatchSpanProcessor(
        OTLPSpanExporter(endpoint=receiver.traces_url, timeout=10),
        max_queue_size=queue,
        max_export_batch_size=512,
    )


def _spans_per_second(
    receiver: CountingReceiver, make: Callable[[], SpanProcessor], spans: Sequence[ReadableSpan]
) -> tuple[float, SpanProcessor]:
    processor = make()
    before = receiver.count()
    on_end = processor.on_end
    start = time.perf_counter()
    for span in spans:
        on_end(span)
    processor.force_flush()
    if not receiver.wait_for(before + len(spans)):
        processor.shutdown()
        raise RuntimeError(f"the receiver got {receiver.count() - before} of {len(spans)} spans")
    elapsed = time.perf_counter() - start
    processor.shutdown()
    return len(spans) / elapsed, processor


def measure(embedder: Embedder, spans: Sequence[ReadableSpan], rounds: int = _ROUNDS) -> dict[str, Any]:
    """Median spans/s with the wrapper (every check, ``embedder``) and without it, alternating rounds."""
    queue = len(spans) + 1
    checks: list[Check] = [ToolChoiceCheck(embedder), ConformanceCheck(), FiguresCheck()]
    bare: list[float] = []
    wrapped: list[float] = []
    evaluated = enriched = 0
    with CountingReceiver() as receiver:
        _spans_per_second(receiver, lambda: _batch(receiver, queue), spans[: SPANS_PER_TURN * 50])  # warm up
        for _ in range(rounds):
            rate, _processor = _spans_per_second(receiver, lambda: _batch(receiver, queue), spans)
            bare.append(rate)
            rate, processor = _spans_per_second(
                receiver,
                lambda: ShapecheckSpanProcessor(
                    _batch(receiver, queue),
                    checks=checks,
                    options=ProcessorOptions(max_queue_size=queue),
                ),
                spans,
            )
            wrapped.append(rate)
            assert isinstance(processor, ShapecheckSpanProcessor)
            counts = processor.counts()
            evaluated, enriched = counts.evaluated, counts.enriched
    base, value = statistics.median(bare), statistics.median(wrapped)
    return {
        "name": f"end_to_end.otlp_http.spans_per_s[{embedder.id}]",
        "value": round(value, 1),
        "unit": "spans/s",
        "baseline": round(base, 1),
        "ratio": round(value / base, 3),
        "target": "report (baseline: same pipeline without the wrapper)",
        "spans": len(spans),
        "evaluated_per_round": evaluated,
        "enriched_per_round": enriched,
    }


def run() -> list[dict[str, Any]]:
    """One row per embedder: the dependency-light hashing embedder and the default MiniLM."""
    spans = agent_spans(TURNS)
    return [measure(HashingEmbedder(), spans), measure(MiniLMEmbedder(), spans)]


if __name__ == "__main__":
    for row in run():
        print(row)

"""A restarted gateway scores its first batch without re-embedding the menus: the embedding cache file
outlives the gateway, and the model (counted through the embedder) sees only the new user turns."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from embedding.embedders import KeptCountingEmbedder
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from otlp_receiver import OTLPReceiver

from gateway.running import eventually, traces_url
from otel_shapecheck import ConformanceCheck, FiguresCheck, MiniLMEmbedder, ToolChoiceCheck
from otel_shapecheck.embedding import _store
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.gateway._gateway import Gateway
from otel_shapecheck.gateway._service import GatewayService

MENUS = {
    "travel": ["book_flight", "cancel_flight", "find_hotel", "rent_car", "get_weather"],
    "billing": ["get_invoice", "refund_payment", "update_card", "list_charges"],
}
_MODEL = MiniLMEmbedder()


def _tool(name: str) -> dict[str, object]:
    words = name.replace("_", " ")
    return {
        "type": "function",
        "name": name,
        "description": f"{words.capitalize()} for the customer",
        "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
    }


def _runs(turns: Sequence[str]) -> list[ReadableSpan]:
    """One agent run per user turn, alternating agents: a chat span choosing the menu's first tool."""
    spans = InMemorySpanExporter()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(SimpleSpanProcessor(spans))
    tracer = provider.get_tracer("agents")
    for number, turn in enumerate(turns):
        agent = sorted(MENUS)[number % len(MENUS)]
        menu = [_tool(name) for name in MENUS[agent]]
        call = {"type": "tool_call", "id": f"c{number}", "name": menu[0]["name"], "arguments": {}}
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.tool.definitions": json.dumps(menu),
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": turn}]}]
            ),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
            "gen_ai.response.finish_reasons": ("tool_calls",),
        }
        with (
            tracer.start_as_current_span(
                f"invoke_agent {agent}", attributes={"gen_ai.operation.name": "invoke_agent"}
            ),
            tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes),
        ):
            pass
    provider.shutdown()
    return list(spans.get_finished_spans())


def _gateway_run(receiver: OTLPReceiver, cache: Path | str, turns: Sequence[str]) -> KeptCountingEmbedder:
    """A fresh gateway (new process state: new memory cache, new checks) scoring one batch of runs."""
    _store._stores.clear()  # nothing of the last gateway survives but the file
    model = KeptCountingEmbedder(_MODEL, 384)
    checks = [
        ToolChoiceCheck(EmbeddingCache(model, path=str(cache)), keep_calls=False),
        ConformanceCheck(),
        FiguresCheck(),
    ]
    gateway = Gateway(
        GrpcSpanExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5),
        checks=checks,
        schedule_delay_millis=50,
    )
    before = len(receiver.spans)
    spans = _runs(turns)
    with GatewayService(gateway, http_address="127.0.0.1:0") as service:
        sender = HttpSpanExporter(endpoint=traces_url(service), timeout=10)
        assert sender.export(spans) is SpanExportResult.SUCCESS
        sender.shutdown()
        assert eventually(lambda: len(receiver.spans) >= before + len(spans), timeout=60)
    scored = [
        span
        for span in receiver.spans[before:]
        if span.name.startswith("chat") and "shapecheck.tool_choice.margin" in span.attributes
    ]
    assert len(scored) == len(turns)
    return model


def test_a_restarted_gateway_embeds_only_the_new_user_turns(receiver: OTLPReceiver, tmp_path: Path) -> None:
    cache = tmp_path / "embeddings.sqlite"
    first = _gateway_run(receiver, cache, ["Book me a flight to Oslo", "Refund my last payment"])
    menus = {text for text in first.texts if "for the customer" in text}
    assert len(menus) >= sum(len(tools) for tools in MENUS.values())  # each tool's text(s) embedded
    restarted = _gateway_run(receiver, cache, ["Find a hotel in Rome", "Show my invoice for May"])
    assert restarted.calls == 1
    assert not set(restarted.texts) & set(first.texts)
    assert not any("for the customer" in text for text in restarted.texts)


def test_without_the_file_a_restarted_gateway_embeds_the_menus_again(
    receiver: OTLPReceiver, tmp_path: Path
) -> None:
    """The control: with the cache file off, the menus reach the model on every start."""
    first = _gateway_run(receiver, "none", ["Book me a flight to Oslo", "Refund my last payment"])
    restarted = _gateway_run(receiver, "none", ["Find a hotel in Rome", "Show my invoice for May"])
    menus = {text for text in first.texts if "for the customer" in text}
    assert menus and {text for text in restarted.texts if "for the customer" in text} == menus

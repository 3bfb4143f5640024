"""Pass-through: spans that need no evaluation are forwarded as the protobuf they arrived in.

Converting a received span to an SDK ``ReadableSpan`` and encoding it again costs far more than the
checks cost a span they do not apply to, so the gateway does neither for those spans. A stored trace
request is split by its scope groups (one resource's spans of one instrumentation scope):

* with ``--no-checks`` (``evaluate=False``) every group passes through;
* with checks, a group passes through when none of its spans would stop in the span processor's
  ``on_end`` test: no classifying attribute key and no tool-span name (what
  :func:`~otel_shapecheck.readers._classify.classify_span` reads), not the parent of such a span in the
  same request, and no span the ledger waits for
  (:meth:`~otel_shapecheck.pipeline._hot_state.HotPathState.concerns`). The other groups are converted
  and evaluated as before. A byte test on the stored body settles the common case:
  a request none of whose bytes spell a classifying key or the tool-span prefix holds no GenAI span.

A request that passes through whole is forwarded as the stored bytes themselves (validated at the door,
so exactly what was acknowledged); otherwise the passing groups are copied, still as protobuf, into one
request of their own. :class:`RawForwarder` sends these from its own threads (two requests in flight by
default, so a destination's round trip does not cap the rate), through the span exporter's
own connection (:func:`raw_sender`: the SDK's OTLP/gRPC and OTLP/HTTP exporters), under the gateway's
retry policy, and reports each request's spans to the spool queue before and after, as the batch
processor's exporter does for converted spans, so an acknowledged span still leaves the spool only once
the destination took it.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Final, Generic, Protocol, TypeVar

from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.sdk.trace.export import SpanExporter

from otel_shapecheck.gateway._forward import ForwardingPolicy
from otel_shapecheck.gateway._spool_entry import bit
from otel_shapecheck.otlp._suppressed import instrumentation_suppressed
from otel_shapecheck.readers._classify import CLASSIFYING_KEYS
from otel_shapecheck.readers._genai import EXECUTE_TOOL_SPAN_PREFIX

logger = logging.getLogger(__name__)

_EXPORT_METHOD: Final = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
_MARKERS: Final = (
    b"gen_ai.operation.name",
    b".span.kind",  # openinference.span.kind, traceloop.span.kind
    b"llm.request.type",
    b"mcp.method.name",
    b"shapecheck.analyst.",  # the analyst id and attempt
    b"gcp.vertex.agent.",  # google-adk's request, response and tool fields
    b"ai.operationId",  # the AI SDK's own telemetry
    b"put.messages",  # gen_ai.input.messages, gen_ai.output.messages (model calls without an operation name)
    EXECUTE_TOOL_SPAN_PREFIX.encode(),
)
"""Byte strings of which a GenAI-looking span's encoding holds at least one: each classifying key holds
one of them (tests/gateway/test_passthrough.py checks it), as does a tool span's name. Each is one scan
of the request body, so keys that share a part share a marker."""
_AFTER_TOOL_SPAN_NAMES: Final = EXECUTE_TOOL_SPAN_PREFIX[:-1] + chr(ord(EXECUTE_TOOL_SPAN_PREFIX[-1]) + 1)

_Ref = TypeVar("_Ref")
DEFAULT_SENDERS: Final = 2
"""Passed-through requests in flight at once."""


class RawSender(Protocol):
    """Sends one serialized ``ExportTraceServiceRequest``; True when the destination took it."""

    def __call__(self, body: bytes) -> bool: ...


class Evaluating(Protocol):
    """What the split asks the span processor's hot-path state: whether a plain span's end is awaited."""

    def concerns(self, span_id: int) -> bool: ...

    def concerns_any(self) -> bool: ...


def raw_sender(exporter: SpanExporter) -> RawSender | None:
    """A sender of serialized requests over ``exporter``'s own connection, or None for other exporters.

    For the SDK's OTLP/gRPC exporter: its channel (reopened by the exporter after ``UNAVAILABLE``), its
    metadata and timeout; for OTLP/HTTP: its client (endpoint, headers, compression, retries within the
    timeout). tests/gateway/test_passthrough.py pins the exporter fields read here. Those fields are not
    public API: on an exporter release without them there is no raw sender, and the gateway converts and
    exports passed-through spans like evaluated ones (slower, nothing lost).
    """
    if isinstance(exporter, GrpcSpanExporter):
        if not all(hasattr(exporter, name) for name in ("_channel", "_headers", "_timeout", "_shutdown")):
            return None
        return _grpc_sender(exporter)
    if isinstance(exporter, HttpSpanExporter):
        # The HTTP transport client arrived with opentelemetry-exporter-otlp-proto-http 1.45.
        client = getattr(exporter, "_client", None)
        if client is None or not hasattr(client, "export") or not hasattr(exporter, "_shutdown"):
            return None

        def send_http(body: bytes) -> bool:
            if exporter._shutdown:
                return False
            with instrumentation_suppressed():
                return bool(client.export(body).success)

        return send_http
    return None


def _grpc_sender(exporter: GrpcSpanExporter) -> RawSender:
    import grpc  # the gRPC exporter's own dependency

    calls: dict[int, Callable[..., object]] = {}

    def send_grpc(body: bytes) -> bool:
        channel = exporter._channel
        if exporter._shutdown or channel is None:
            return False
        export = calls.get(id(channel))
        if export is None:  # a new channel (the exporter reopens it after UNAVAILABLE): one call object
            calls.clear()
            export = calls[id(channel)] = channel.unary_unary(
                _EXPORT_METHOD,
                request_serializer=None,
                response_deserializer=ExportTraceServiceResponse.FromString,
            )
        try:
            with instrumentation_suppressed():
                export(body, metadata=exporter._headers, timeout=exporter._timeout)
        except grpc.RpcError as error:
            logger.debug("Forwarding a passed-through request failed: %s", error.code())
            return False
        return True

    return send_grpc


@dataclass
class Split:
    """A stored trace request divided into what passes through and what is converted and evaluated."""

    raw: bytes | None
    """The request that passes through, serialized (the stored body itself when all of it does)."""
    raw_indices: list[int]
    """The stored request's span indices in ``raw`` (spans already done are left out)."""
    evaluated: ExportTraceServiceRequest | None
    """The groups to convert, as a request of their own."""
    evaluated_indices: list[int]
    """The stored request's span index of each span of ``evaluated``, in order."""


def split_request(
    message: ExportTraceServiceRequest, body: bytes, done: bytes | bytearray, evaluating: Evaluating | None
) -> Split:
    """Split a stored trace request (``body``, parsed as ``message``) by scope group; see the module.

    ``done`` marks spans already forwarded (a request carried over from a previous run); ``evaluating``
    is the span processor's hot-path state, or None when nothing is evaluated.
    """
    plain_body = evaluating is None or not any(marker in body for marker in _MARKERS)
    if plain_body and (evaluating is None or not evaluating.concerns_any()):
        count = _span_count(message)
        if not any(done):  # the common case: nothing of it forwarded yet, so it goes as it is
            return Split(body, list(range(count)), None, [])
        indices = [index for index in range(count) if not bit(done, index)]
        return Split(_subset(message, done, None) if indices else None, indices, None, [])
    assert evaluating is not None
    parents = set() if plain_body else _genai_parents(message)
    passes: list[bool] = []
    for resource_spans in message.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            passes.append(not _needs_evaluation(scope_spans, parents, evaluating, check_spans=not plain_body))
    raw_indices: list[int] = []
    evaluated_indices: list[int] = []
    index = group = 0
    for resource_spans in message.resource_spans:
        for scope_spans in resource_spans.scope_spans:
            count = len(scope_spans.spans)
            if passes[group]:
                raw_indices.extend(i for i in range(index, index + count) if not bit(done, i))
            else:
                evaluated_indices.extend(range(index, index + count))
            index += count
            group += 1
    raw = _subset(message, done, passes) if raw_indices else None
    evaluated = _groups(message, [not passing for passing in passes]) if evaluated_indices else None
    return Split(raw, raw_indices, evaluated, evaluated_indices)


def _span_count(message: ExportTraceServiceRequest) -> int:
    return sum(len(scope.spans) for resource in message.resource_spans for scope in resource.scope_spans)


def _looks_genai(span: object) -> bool:
    name: str = span.name  # type: ignore[attr-defined]
    if EXECUTE_TOOL_SPAN_PREFIX <= name < _AFTER_TOOL_SPAN_NAMES:
        return True
    return any(pair.key in CLASSIFYING_KEYS for pair in span.attributes)  # type: ignore[attr-defined]


def _genai_parents(message: ExportTraceServiceRequest) -> set[bytes]:
    """Parent span ids of the request's GenAI-looking spans: such a parent must reach the processor."""
    return {
        span.parent_span_id
        for resource_spans in message.resource_spans
        for scope_spans in resource_spans.scope_spans
        for span in scope_spans.spans
        if span.parent_span_id and _looks_genai(span)
    }


def _needs_evaluation(
    scope_spans: ScopeSpans, parents: set[bytes], evaluating: Evaluating, *, check_spans: bool
) -> bool:
    waiting = evaluating.concerns_any()
    for span in scope_spans.spans:
        span_id = span.span_id
        if check_spans and (span_id in parents or _looks_genai(span)):
            return True
        if waiting and evaluating.concerns(int.from_bytes(span_id, "big")):
            return True
    return False


def _groups(message: ExportTraceServiceRequest, keep: Sequence[bool]) -> ExportTraceServiceRequest:
    """A request of the scope groups ``keep`` marks, every span of them, resources and scopes kept."""
    out = ExportTraceServiceRequest()
    group = 0
    for resource_spans in message.resource_spans:
        target: ResourceSpans | None = None
        for scope_spans in resource_spans.scope_spans:
            if keep[group]:
                if target is None:
                    target = _resource_copy(out, resource_spans)
                target.scope_spans.add().CopyFrom(scope_spans)
            group += 1
    return out


def _subset(
    message: ExportTraceServiceRequest, done: bytes | bytearray, keep: Sequence[bool] | None
) -> bytes:
    """The passing groups (every group for None) without the spans already done, serialized."""
    out = ExportTraceServiceRequest()
    index = group = 0
    for resource_spans in message.resource_spans:
        target: ResourceSpans | None = None
        for scope_spans in resource_spans.scope_spans:
            count = len(scope_spans.spans)
            if keep is None or keep[group]:
                kept = [span for i, span in enumerate(scope_spans.spans, start=index) if not bit(done, i)]
                if kept:
                    if target is None:
                        target = _resource_copy(out, resource_spans)
                    copy = target.scope_spans.add()
                    copy.scope.CopyFrom(scope_spans.scope)
                    copy.schema_url = scope_spans.schema_url
                    copy.spans.extend(kept)
            index += count
            group += 1
    return out.SerializeToString()


def _resource_copy(out: ExportTraceServiceRequest, resource_spans: ResourceSpans) -> ResourceSpans:
    target = out.resource_spans.add()
    target.resource.CopyFrom(resource_spans.resource)
    target.schema_url = resource_spans.schema_url
    return target


class RawForwarder(Generic[_Ref]):
    """Sends passed-through requests from its own threads, retrying under the gateway's policy.

    Args:
        send: the sender (:func:`raw_sender`).
        policy: the gateway's forwarding policy (retries, give-up, the shutdown deadline).
        before: called with a request's reference before it is sent (its spans may now arrive twice).
        after: called with it and whether the destination took the request.
        senders: threads sending, each one request at a time (OTLP export requests carry no order).

    What waits here is bounded by the spool queue's item and byte budgets: a request's spans hold their
    budget until ``after`` releases it.
    """

    def __init__(
        self,
        send: RawSender,
        policy: ForwardingPolicy,
        before: Callable[[_Ref], None],
        after: Callable[[_Ref, bool], None],
        *,
        senders: int = DEFAULT_SENDERS,
    ) -> None:
        self._send = send
        self._policy = policy
        self._before = before
        self._after = after
        self._pending: deque[tuple[bytes, _Ref, int]] = deque()
        self._ready = threading.Condition()
        self._stopping = False
        self.exported = 0
        """Spans the destination took."""
        self.failed = 0
        """Spans of requests that failed for good (given up or abandoned at shutdown)."""
        self._counts = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, name=f"shapecheck-gateway-passthrough-{number}", daemon=True)
            for number in range(max(1, senders))
        ]
        for thread in self._threads:
            thread.start()

    def forward(self, body: bytes, ref: _Ref, spans: int) -> None:
        """Queue one serialized request of ``spans`` spans, reported back as ``ref``."""
        with self._ready:
            self._pending.append((body, ref, spans))
            self._ready.notify()

    def shutdown(self) -> None:
        """Send what is queued (until the policy's deadline abandons it), then stop the threads."""
        with self._ready:
            self._stopping = True
            self._ready.notify_all()
        for thread in self._threads:
            thread.join()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending and not self._stopping:
                    self._ready.wait()
                if not self._pending:
                    return
                body, ref, spans = self._pending.popleft()
            try:
                self._before(ref)
                delivered = self._policy.run(partial(self._attempt, body), spans, "spans")
                with self._counts:
                    if delivered:
                        self.exported += spans
                    else:
                        self.failed += spans
                self._after(ref, delivered)
            except Exception:  # a bug must not stop forwarding of everything after it
                logger.exception("Forwarding a passed-through request failed")

    def _attempt(self, body: bytes) -> bool:
        try:
            return self._send(body)
        except Exception:  # an exporter bug is one more failed attempt
            logger.debug("Passed-through export raised", exc_info=True)
            return False

"""The wiring helper: attach otel-shapecheck to an existing application in a few lines.

Usage::

    import otel_shapecheck

    shapecheck = otel_shapecheck.configure(tracer_provider)  # where to: the OTEL_EXPORTER_OTLP_* variables
    shapecheck = otel_shapecheck.configure(tracer_provider, logger_provider, endpoint="http://collector:4317")
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_shapecheck.checks._base import Check
from otel_shapecheck.otlp._endpoints import otlp_log_exporter, otlp_span_exporter
from otel_shapecheck.pipeline._events import EvaluationEventEmitter
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._shapecheck import Shapecheck
from otel_shapecheck.pipeline._sinks import VerdictSink

logger = logging.getLogger(__name__)


def configure(
    tracer_provider: TracerProvider,
    logger_provider: LoggerProvider | None = None,
    endpoint: str | None = None,
    *,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout_seconds: float | None = None,
    checks: Sequence[Check] | None = None,
    events: bool | VerdictSink = True,
    forward: str | None = None,
    include_content: bool | None = None,
    span_exporter: SpanExporter | None = None,
    log_exporter: LogRecordExporter | None = None,
    options: ProcessorOptions | None = None,
) -> Shapecheck:
    """Build the span processor around an OTLP span exporter, with flagged events over OTLP, and register it.

    Args:
        tracer_provider: the application's SDK ``TracerProvider``; the span processor is added to it.
            Do not also add a processor exporting to the same place: the enriched copies replace the
            originals.
        logger_provider: the application's SDK ``LoggerProvider`` when instrumentations write message
            content as log events; the companion log processor is added to it so the checks can read them.
        endpoint: OTLP endpoint for spans and events; default: the standard ``OTEL_EXPORTER_OTLP_*``
            variables. Its spelling never changes the protocol: for gRPC ``http://host:port`` is
            plaintext and ``https://host:port`` TLS; for HTTP it is the base URL the signal paths are
            appended to (see :mod:`otel_shapecheck.otlp._endpoints`).
        protocol: ``grpc`` or ``http/protobuf``; default ``OTEL_EXPORTER_OTLP_{TRACES,LOGS}_PROTOCOL``,
            then ``OTEL_EXPORTER_OTLP_PROTOCOL``, then ``grpc``, as the SDK's auto-configuration decides.
        headers: extra headers for both exporters (default: ``OTEL_EXPORTER_OTLP_HEADERS``).
        timeout_seconds: export timeout of both exporters (default: ``OTEL_EXPORTER_OTLP_TIMEOUT``, 10 s).
        checks: the checks to run (default: every built-in check).
        events: ``True`` sends flagged ``gen_ai.evaluation.result`` log records over OTLP, ``False``
            sends none, and a sink (e.g. an :class:`EvaluationEventEmitter` you keep, to read its
            ``stats()``) is used as given.
        forward, include_content: see :class:`EvaluationEventEmitter`.
        span_exporter, log_exporter: use these instead of building OTLP exporters.
        options: the span processor's bounds (default: :class:`ProcessorOptions` from the environment).

    Returns:
        The :class:`Shapecheck` handle; its ``span_processor`` is registered and shuts down with the provider.

    Raises:
        ValueError: a provider of the wrong kind, or an unknown protocol (argument or variable).
    """
    if not isinstance(tracer_provider, TracerProvider):
        raise ValueError(
            f"tracer_provider={tracer_provider!r} is not a valid value: configure needs the SDK's "
            "opentelemetry.sdk.trace.TracerProvider (span processors cannot be added to the API's default)"
        )
    if logger_provider is not None and not isinstance(logger_provider, LoggerProvider):
        raise ValueError(
            f"logger_provider={logger_provider!r} is not a valid value: it must be the SDK's LoggerProvider"
        )
    if span_exporter is None:
        span_exporter = otlp_span_exporter(
            endpoint, protocol=protocol, headers=headers, timeout=timeout_seconds
        )
    event_sink: VerdictSink | None = None
    if not isinstance(events, bool):
        event_sink = events
    elif events:
        if log_exporter is None:
            log_exporter = otlp_log_exporter(
                endpoint, protocol=protocol, headers=headers, timeout=timeout_seconds
            )
        event_sink = EvaluationEventEmitter(
            log_exporter, resource=tracer_provider.resource, forward=forward, include_content=include_content
        )
    downstream = BatchSpanProcessor(span_exporter)
    try:
        shapecheck = Shapecheck(downstream, events=event_sink, checks=checks, options=options)
    except Exception:  # a bad processor setting: release the threads started above, then report it
        downstream.shutdown()  # type: ignore[no-untyped-call]
        if event_sink is not None and event_sink is not events:
            event_sink.shutdown()
        raise
    tracer_provider.add_span_processor(shapecheck.span_processor)
    if logger_provider is not None:
        logger_provider.add_log_record_processor(shapecheck.log_processor)
    return shapecheck

"""The wiring helper: attach otel-shapecheck to an existing application in a few lines.

Usage::

    import otel_shapecheck

    shapecheck = otel_shapecheck.configure(tracer_provider)  # where to: the OTEL_EXPORTER_OTLP_* variables
    shapecheck = otel_shapecheck.configure(tracer_provider, logger_provider=logger_provider)
    shapecheck = otel_shapecheck.configure(tracer_provider, endpoint="http://collector:4317")
    shapecheck = otel_shapecheck.configure(tracer_provider, metrics=meter_provider)  # the app's own metrics

An application that already exports its spans keeps its exporter: ``configure()`` finds the exporting
processors already on the provider (the SDK's ``BatchSpanProcessor`` and ``SimpleSpanProcessor``) and
puts the checks in front of them, in place, so every span is exported once, enriched where a check
applied. Exporting processors the application adds afterwards go behind the checks too.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence

from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
from opentelemetry.sdk.metrics.export import MetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

from otel_shapecheck.checks._base import Check
from otel_shapecheck.otlp._endpoints import otlp_log_exporter, otlp_metric_exporter, otlp_span_exporter
from otel_shapecheck.outputs._events import EvaluationEventEmitter
from otel_shapecheck.outputs._sinks import VerdictSink
from otel_shapecheck.pipeline._existing_exporters import ExportingProcessors
from otel_shapecheck.pipeline._options import ProcessorOptions
from otel_shapecheck.pipeline._shapecheck import Shapecheck

logger = logging.getLogger(__name__)

OTEL_METRICS_EXPORTER = "OTEL_METRICS_EXPORTER"
"""The SDK's standard variable; ``none`` there means no metric exporter is built."""


def configure(
    tracer_provider: TracerProvider,
    *,
    logger_provider: LoggerProvider | None = None,
    endpoint: str | None = None,
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
    metrics: bool | MeterProvider = True,
    metric_exporter: MetricExporter | None = None,
) -> Shapecheck:
    """Put the checks in front of the provider's span exporting, with flagged events over OTLP.

    Where the spans go: when the provider already has exporting processors (``BatchSpanProcessor``,
    ``SimpleSpanProcessor``) and neither ``endpoint`` nor ``span_exporter`` is given, those processors
    are taken off the provider and put behind the checks, in their place: spans reach the application's
    own exporters once, enriched. Otherwise an OTLP span exporter is built (from ``endpoint`` or the
    standard variables); if the provider also has exporting processors then, each span would be exported
    twice (once as it came, once enriched), so a warning names them and the fix. Exporting processors
    added to the provider after this call are put behind the checks as well.

    Every argument after the provider is keyword-only.

    Args:
        tracer_provider: the application's SDK ``TracerProvider``; the span processor is added to it.
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
        metrics: ``True`` exports the verdict metrics over OTLP (protocol from
            ``OTEL_EXPORTER_OTLP_METRICS_PROTOCOL``, then ``OTEL_EXPORTER_OTLP_PROTOCOL``; interval
            ``OTEL_METRIC_EXPORT_INTERVAL``; none when ``OTEL_METRICS_EXPORTER=none``) through a
            ``MeterProvider`` of their own with the tracer provider's resource, flushed and shut down
            with the span processor; a ``MeterProvider`` (the application's) is used as given;
            ``False`` records them on the global one.
        metric_exporter: use this instead of building an OTLP metric exporter.

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
    own_metrics = _own_metric_exporter(metrics, metric_exporter, endpoint, protocol, headers, timeout_seconds)
    exporting = ExportingProcessors(tracer_provider)
    downstream: SpanProcessor
    if span_exporter is None and endpoint is None and exporting.found:
        downstream = exporting.fan_out
    else:
        if span_exporter is None:
            span_exporter = otlp_span_exporter(
                endpoint, protocol=protocol, headers=headers, timeout=timeout_seconds
            )
        downstream = BatchSpanProcessor(span_exporter)
        exporting.warn_if_found()
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
    owned: SdkMeterProvider | None = None
    if own_metrics is not None:
        owned = SdkMeterProvider(
            metric_readers=[PeriodicExportingMetricReader(own_metrics)],
            resource=tracer_provider.resource,
            shutdown_on_exit=False,  # the span processor shuts it down, after its last verdicts
        )
    meter_provider = owned if owned is not None else metrics if isinstance(metrics, MeterProvider) else None
    try:
        shapecheck = Shapecheck(
            downstream,
            events=event_sink,
            checks=checks,
            options=options,
            meter_provider=meter_provider,
        )
    except Exception:  # a bad processor setting: release the threads started above, then report it
        if downstream is not exporting.fan_out:
            downstream.shutdown()
        if event_sink is not None and event_sink is not events:
            event_sink.shutdown()
        if owned is not None:
            owned.shutdown()
        raise
    if owned is not None:
        shapecheck.span_processor._own_meter_provider(owned)
    exporting.install(shapecheck.span_processor)
    if logger_provider is not None:
        logger_provider.add_log_record_processor(shapecheck.log_processor)
    return shapecheck


def _own_metric_exporter(
    metrics: bool | MeterProvider,
    exporter: MetricExporter | None,
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
    timeout_seconds: float | None,
) -> MetricExporter | None:
    """The exporter of the verdict metrics' own ``MeterProvider``; ``None`` when none is to be built.

    Raises:
        ValueError: ``metrics`` is neither a bool nor a ``MeterProvider``, or an unknown protocol.
    """
    if isinstance(metrics, MeterProvider):
        return None
    if not isinstance(metrics, bool):
        raise ValueError(f"metrics={metrics!r} is not a valid value: it must be a bool or a MeterProvider")
    if not metrics:
        return None
    if exporter is not None:
        return exporter
    if os.environ.get(OTEL_METRICS_EXPORTER, "").strip().lower() == "none":
        return None
    return otlp_metric_exporter(endpoint, protocol=protocol, headers=headers, timeout=timeout_seconds)

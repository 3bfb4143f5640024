"""configure(): the processor, OTLP span exporter and evaluation events, wired from the standard variables."""

from __future__ import annotations

import time

import pytest
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from otlp_receiver import OTLPReceiver, unused_endpoint

import otel_shapecheck
from otel_shapecheck import EvaluationEventEmitter
from otel_shapecheck import _attributes as attrs
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.embedding._embedders import HashingEmbedder
from otel_shapecheck.pipeline._options import ProcessorOptions

from .agent_turn import ANSWER, UNSUPPORTED, instrumented, run_capacity_turn

BOUND_SECONDS = 3.0
"""Generous bound for what must not wait on the backend (the scripted turn itself takes well under it)."""


def _checks() -> list[otel_shapecheck.Check]:
    return [ToolChoiceCheck(embedder=HashingEmbedder()), FiguresCheck()]


def _provider() -> TracerProvider:
    return TracerProvider(
        resource=Resource.create({"service.name": "capacity-agent"}), shutdown_on_exit=False
    )


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_enriched_spans_and_events_arrive_over_otlp(
    protocol: str, receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From the standard variables alone: enriched spans and flagged evaluation records reach the receiver."""
    endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
    monkeypatch.setenv(
        "OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{endpoint}" if protocol == "grpc" else endpoint
    )
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
    provider = _provider()
    shapecheck = otel_shapecheck.configure(provider, checks=_checks())
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    assert provider.force_flush()
    transport = "grpc" if protocol == "grpc" else "http"
    assert receiver.wait_for(lambda r: len(r.spans) >= 3 and len(r.log_records) >= 1, timeout=10)
    provider.shutdown()

    spans = receiver.spans
    assert {span.transport for span in spans} == {transport}
    assert len({span.span_id for span in spans}) == len(spans), "every span exactly once"
    answer = next(span for span in spans if span.attributes.get(attrs.FIGURES_CHECKED))
    assert answer.attributes[attrs.FLAGGED] is True
    assert attrs.FLAG_FIGURES_UNSUPPORTED in answer.attributes[attrs.FLAGS]
    assert UNSUPPORTED in answer.attributes[attrs.FIGURES_UNSUPPORTED]
    assert answer.resource["service.name"] == "capacity-agent"
    assert any(name == attrs.EVALUATION_EVENT for name, _ in answer.events)
    agent = next(span for span in spans if span.name == "invoke_agent capacity")
    assert answer.parent_span_id == agent.span_id
    chooser = next(span for span in spans if span.attributes.get(attrs.TOOL_CHOICE_CHOSEN))
    assert chooser.attributes[attrs.TOOL_CHOICE_CHOSEN] == ("get_capacity",)

    (record,) = [
        r for r in receiver.log_records if r.attributes[attrs.EVALUATION_NAME] == attrs.EVALUATION_FIGURES
    ]
    assert (record.trace_id, record.span_id) == (answer.trace_id, answer.span_id)
    assert record.event_name == attrs.EVALUATION_EVENT
    assert record.attributes[attrs.RESPONSE_ID] == "chatcmpl-capacity-2"
    assert attrs.FIGURES_UNSUPPORTED not in record.attributes
    assert record.resource["service.name"] == "capacity-agent"
    assert shapecheck.span_processor is not None


def test_explicit_endpoint_and_protocol_win_over_the_variables(
    receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """endpoint= and protocol= arguments override OTEL_EXPORTER_OTLP_*; the HTTP paths are appended."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    provider = _provider()
    otel_shapecheck.configure(
        provider,
        endpoint=receiver.http_endpoint,
        protocol="http/protobuf",
        checks=_checks(),
        timeout_seconds=2,
    )
    with provider.get_tracer("tests").start_as_current_span("plain work"):
        pass
    provider.force_flush()
    assert receiver.wait_for(lambda r: any(span.name == "plain work" for span in r.spans), timeout=10)
    provider.shutdown()
    assert {span.transport for span in receiver.spans} == {"http"}


def test_content_read_from_the_applications_log_events(receiver: OTLPReceiver) -> None:
    """With content only in log events, the given LoggerProvider feeds the checks: the answer is judged,
    and its span (which the instrumentation kept free of content) gains counts and flags, not values."""
    from opentelemetry.sdk._logs import LoggerProvider

    provider = _provider()
    logger_provider = LoggerProvider(shutdown_on_exit=False)
    otel_shapecheck.configure(
        provider,
        logger_provider=logger_provider,
        endpoint=f"http://{receiver.grpc_endpoint}",
        checks=_checks(),
    )
    with instrumented(provider, logger_provider, content="EVENT_ONLY"):
        assert run_capacity_turn(provider) == ANSWER
    provider.force_flush()
    assert receiver.wait_for(
        lambda r: any(s.attributes.get(attrs.FIGURES_CHECKED) for s in r.spans), timeout=10
    )
    provider.shutdown()
    logger_provider.shutdown()
    answer = next(span for span in receiver.spans if span.attributes.get(attrs.FIGURES_CHECKED))
    assert answer.attributes[attrs.FLAGGED] is True
    assert attrs.FIGURES_UNSUPPORTED not in answer.attributes
    assert attrs.FIGURES_DERIVATIONS not in answer.attributes
    assert all(UNSUPPORTED not in str(value) for value in answer.attributes.values())


@pytest.mark.parametrize(
    ("kwargs", "env", "name"),
    [
        ({"protocol": "thrift"}, {}, "protocol"),
        ({}, {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, "OTEL_EXPORTER_OTLP_PROTOCOL"),
        ({}, {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "zipkin"}, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"),
    ],
)
def test_bad_protocol_names_the_setting(
    kwargs: dict[str, str], env: dict[str, str], name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown protocol raises ValueError naming the argument or the variable, before anything is added."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    provider = _provider()
    with pytest.raises(ValueError, match=name):
        otel_shapecheck.configure(provider, **kwargs)  # type: ignore[arg-type]
    provider.shutdown()


def test_api_tracer_provider_is_refused() -> None:
    """The API's no-op provider cannot take span processors: a clear ValueError instead of silence."""
    from opentelemetry.trace import NoOpTracerProvider

    with pytest.raises(ValueError, match="tracer_provider"):
        otel_shapecheck.configure(NoOpTracerProvider())  # type: ignore[arg-type]


def test_bad_processor_setting_raises_before_registering() -> None:
    """A bad processor option is a ValueError naming it, and nothing is left registered."""
    provider = _provider()
    with pytest.raises(ValueError, match="max_wait_millis"):
        otel_shapecheck.configure(
            provider,
            endpoint="http://127.0.0.1:9",
            options=ProcessorOptions(max_wait_millis=0),
        )
    with provider.get_tracer("tests").start_as_current_span("still fine"):
        pass
    provider.shutdown()


@pytest.mark.parametrize("failure", ["down", "slow", "error"])
def test_unreachable_backend_never_holds_the_application(failure: str, receiver: OTLPReceiver) -> None:
    """Receiver down, slow or failing: the agent runs at full speed, flushes are bounded, losses counted."""
    if failure == "down":
        grpc_endpoint, _ = unused_endpoint()
    else:
        grpc_endpoint = receiver.grpc_endpoint
        if failure == "slow":
            receiver.behave(delay_seconds=30.0)
        else:
            receiver.behave(error_status=503)
    events = EvaluationEventEmitter(
        GrpcLogExporter(endpoint=grpc_endpoint, insecure=True, timeout=0.5), flush_timeout_millis=300
    )
    provider = _provider()
    shapecheck = otel_shapecheck.configure(
        provider, endpoint=f"http://{grpc_endpoint}", timeout_seconds=0.5, events=events, checks=_checks()
    )
    started = time.monotonic()
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    ran_after = time.monotonic() - started
    provider.force_flush(timeout_millis=1000)
    flushed_after = time.monotonic() - started
    assert ran_after < BOUND_SECONDS
    assert flushed_after < ran_after + BOUND_SECONDS
    assert shapecheck.counts().flagged >= 1
    deadline = time.monotonic() + 5
    while events.stats().export_failed < 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    stats = events.stats()
    assert (stats.exported, stats.export_failed) == (0, 1)
    provider.shutdown()
    assert time.monotonic() - started < ran_after + 3 * BOUND_SECONDS
    assert receiver.log_records == []


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_verdict_metrics_arrive_over_otlp(
    protocol: str, receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """configure() exports the verdict metrics where OTEL_EXPORTER_OTLP_METRICS_PROTOCOL says, with the
    application's resource, when the tracer provider shuts down."""
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://{receiver.grpc_endpoint}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", protocol)
    if protocol == "http/protobuf":
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", f"{receiver.http_endpoint}/v1/metrics")
    provider = _provider()
    otel_shapecheck.configure(provider, checks=_checks(), events=False)
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    provider.shutdown()  # the processor's shutdown flushes the verdicts, then exports the metrics
    verdicts = [point for point in receiver.metric_points if point.name == attrs.METRIC_VERDICTS]
    assert {point.transport for point in verdicts} == {"grpc" if protocol == "grpc" else "http"}
    assert all(point.resource["service.name"] == "capacity-agent" for point in verdicts)
    flagged = [point for point in verdicts if point.attributes[attrs.METRIC_FLAGGED]]
    assert [
        (p.attributes[attrs.METRIC_CHECK], p.attributes[attrs.METRIC_LABEL], p.value) for p in flagged
    ] == [("figures", "unsupported", 1.0)]
    unsupported = [p for p in receiver.metric_points if p.name == attrs.METRIC_FIGURES_UNSUPPORTED]
    assert sum(point.value for point in unsupported) >= 1
    assert {span.transport for span in receiver.spans} == {"grpc"}


def test_an_applications_meter_provider_is_used_as_given(receiver: OTLPReceiver) -> None:
    """metrics=<MeterProvider>: the verdict metrics are recorded there and nothing goes over OTLP for them."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader], shutdown_on_exit=False)
    provider = _provider()
    otel_shapecheck.configure(
        provider, endpoint=f"http://{receiver.grpc_endpoint}", checks=_checks(), metrics=meter_provider
    )
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    provider.shutdown()
    data = reader.get_metrics_data()
    names = {
        metric.name
        for resource_metrics in (data.resource_metrics if data is not None else ())
        for scope_metrics in resource_metrics.scope_metrics
        for metric in scope_metrics.metrics
    }
    assert {attrs.METRIC_VERDICTS, attrs.METRIC_FIGURES_UNSUPPORTED} <= names
    assert receiver.metric_points == []
    meter_provider.shutdown()


def test_metrics_exporter_none_builds_no_metric_exporter(
    receiver: OTLPReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """OTEL_METRICS_EXPORTER=none, the SDK's own switch, turns the OTLP metric export off."""
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "none")
    provider = _provider()
    otel_shapecheck.configure(provider, endpoint=f"http://{receiver.grpc_endpoint}", checks=_checks())
    with instrumented(provider):
        assert run_capacity_turn(provider) == ANSWER
    provider.shutdown()
    assert receiver.spans and receiver.metric_points == []


def test_bad_metrics_argument_raises_before_anything_starts() -> None:
    """metrics= must be a bool or a MeterProvider."""
    provider = _provider()
    with pytest.raises(ValueError, match="metrics"):
        otel_shapecheck.configure(provider, metrics="yes")  # type: ignore[arg-type]
    provider.shutdown()

"""Fault injection around the whole pipeline: the real OTLP exporters (gRPC and HTTP) against a loopback
receiver that is down, slow, failing or flapping; an embedder that fails or hangs; a downstream that raises.

In every case the application's thread stays within :data:`APPLICATION_BOUND_SECONDS` per agent turn,
no exception reaches it, flushes return within their timeout, every span reaches the downstream exactly
once, and the processor's counters say what happened.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pytest
from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpanExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter as HttpLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter
from opentelemetry.sdk._logs.export import LogRecordExporter
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind
from otlp_receiver import OTLPReceiver, unused_endpoint

from otel_shapecheck import (
    Check,
    ConformanceCheck,
    EvaluationEventEmitter,
    FiguresCheck,
    HashingEmbedder,
    ShapecheckSpanProcessor,
    ToolChoiceCheck,
)
from otel_shapecheck._attributes import (
    EVALUATION_FIGURES,
    EVALUATION_TOOL_CHOICE,
    FIGURES_CHECKED,
    FLAGGED,
    RUN_SCORED,
    RUN_SKIPPED,
    TOOL_CHOICE_SKIPPED,
)
from otel_shapecheck.pipeline._options import ProcessorOptions

from .telemetry import SPANS_PER_TURN, IdRecorder, agent_turn, chat_attributes, longest_turn, messages

APPLICATION_BOUND_SECONDS = 1.5
"""Longest one agent turn (four span ends) may take on the application's thread, whatever fails.

Normal turns take well under a millisecond; the bound is generous for a shared two-core machine."""
EXPORT_TIMEOUT_SECONDS = 0.5
FLUSH_TIMEOUT_MILLIS = 1000
SLACK_SECONDS = 1.0
"""Allowed beyond a timeout for thread scheduling on a loaded machine."""
SHUTDOWN_BOUND_SECONDS = 10.0
TURNS = 20


def _checks() -> list[Check]:
    return [ToolChoiceCheck(HashingEmbedder()), ConformanceCheck(), FiguresCheck()]


@dataclass
class Pipeline:
    """Provider → shapecheck → (ids noted) → ``BatchSpanProcessor`` → exporter, with flagged events."""

    provider: TracerProvider
    processor: ShapecheckSpanProcessor
    forwarded: IdRecorder
    originals: IdRecorder
    events: EvaluationEventEmitter | None

    def run_turns(self, turns: int = TURNS) -> float:
        """Run agent turns on this thread; the longest took this many seconds."""
        return longest_turn(self.provider.get_tracer("tests.reliability"), turns)

    def timed_flush(self, timeout_millis: int = FLUSH_TIMEOUT_MILLIS) -> float:
        """Flush the provider; how long it took (it must not raise)."""
        started = time.monotonic()
        self.provider.force_flush(timeout_millis=timeout_millis)
        return time.monotonic() - started

    def timed_shutdown(self) -> float:
        """Shut the provider down; how long it took (it must not raise)."""
        started = time.monotonic()
        self.provider.shutdown()
        return time.monotonic() - started

    def assert_each_span_forwarded_once(self) -> None:
        """Every span the application ended reached the downstream exactly once."""
        assert self.forwarded.duplicates() == {}
        assert self.forwarded.ids() == self.originals.ids()
        assert len(self.forwarded) == len(self.originals)


def pipeline(
    downstream: SpanProcessor | None,
    *,
    log_exporter: LogRecordExporter | None = None,
    checks: Sequence[Check] | None = None,
    shutdown_timeout_millis: int = 5000,
) -> Pipeline:
    """The pipeline a user builds, around ``downstream`` (or only noting ids when it is ``None``)."""
    forwarded = IdRecorder(downstream)
    events = (
        None
        if log_exporter is None
        else EvaluationEventEmitter(log_exporter, schedule_delay_millis=50, flush_timeout_millis=300)
    )
    processor = ShapecheckSpanProcessor(
        forwarded,
        events=events,
        checks=_checks() if checks is None else checks,
        options=ProcessorOptions(schedule_delay_millis=20, shutdown_timeout_millis=shutdown_timeout_millis),
    )
    originals = IdRecorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(originals)
    return Pipeline(provider, processor, forwarded, originals, events)


def _exporters(transport: str, grpc_endpoint: str, http_base: str) -> tuple[SpanProcessor, LogRecordExporter]:
    """A ``BatchSpanProcessor`` around the real OTLP span exporter, and the real OTLP log exporter."""
    span_exporter: SpanExporter
    log_exporter: LogRecordExporter
    if transport == "grpc":
        span_exporter = GrpcSpanExporter(
            endpoint=grpc_endpoint, insecure=True, timeout=EXPORT_TIMEOUT_SECONDS
        )
        log_exporter = GrpcLogExporter(endpoint=grpc_endpoint, insecure=True, timeout=EXPORT_TIMEOUT_SECONDS)
    else:
        span_exporter = HttpSpanExporter(endpoint=f"{http_base}/v1/traces", timeout=EXPORT_TIMEOUT_SECONDS)
        log_exporter = HttpLogExporter(endpoint=f"{http_base}/v1/logs", timeout=EXPORT_TIMEOUT_SECONDS)
    return BatchSpanProcessor(span_exporter, schedule_delay_millis=50), log_exporter


@contextmanager
def flapping(receiver: OTLPReceiver, period_seconds: float = 0.05) -> Iterator[None]:
    """Have the receiver alternate between answering 503 and accepting, every ``period_seconds``."""
    stop = threading.Event()

    def toggle() -> None:
        failing = True
        while not stop.wait(period_seconds):
            receiver.behave(error_status=503 if failing else None)
            failing = not failing

    thread = threading.Thread(target=toggle, name="flapping-receiver", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
        receiver.behave()


RECEIVER_STATES = ["up", "down", "slow", "error-503", "error-400", "flapping"]


@pytest.mark.parametrize("transport", ["grpc", "http"])
@pytest.mark.parametrize("state", RECEIVER_STATES)
def test_receiver_faults_never_reach_the_application(transport: str, state: str) -> None:
    """Receiver up, down, slow, failing or flapping: bounded turns and flushes, every span forwarded once."""
    with OTLPReceiver() as receiver:
        grpc_endpoint, http_base = (
            unused_endpoint() if state == "down" else (receiver.grpc_endpoint, receiver.http_endpoint)
        )
        if state == "slow":
            receiver.behave(delay_seconds=2.0)
        elif state.startswith("error-"):
            receiver.behave(error_status=int(state.removeprefix("error-")))
        downstream, log_exporter = _exporters(transport, grpc_endpoint, http_base)
        under_test = pipeline(downstream, log_exporter=log_exporter)
        with flapping(receiver) if state == "flapping" else _nothing():
            longest = under_test.run_turns()
            flush_seconds = under_test.timed_flush()
            if state == "flapping":
                for _ in range(20):  # later flushes find the receiver up again
                    if receiver.spans:
                        break
                    under_test.run_turns(2)
                    under_test.timed_flush()
        counts = under_test.processor.counts()
        shutdown_seconds = under_test.timed_shutdown()

        assert longest < APPLICATION_BOUND_SECONDS
        assert flush_seconds < FLUSH_TIMEOUT_MILLIS / 1000 + SLACK_SECONDS
        assert shutdown_seconds < SHUTDOWN_BOUND_SECONDS
        under_test.assert_each_span_forwarded_once()
        assert counts.seen == len(under_test.originals)
        assert counts.held == counts.evaluated == 2 * len(under_test.originals) // SPANS_PER_TURN
        if state == "slow":  # a flush that outlives its timeout is counted, and nothing else
            assert {kind for kind, _ in counts.errors} <= {"flush_hung:downstream", "flush_hung:events"}
        else:
            assert counts.errors == ()
        assert under_test.events is not None
        stats = under_test.events.stats()
        assert stats.errors == 0
        received_ids = [span.span_id for span in receiver.spans]
        if state == "up":
            assert len(received_ids) == TURNS * SPANS_PER_TURN
            assert stats.exported == stats.emitted > 0
        elif state == "flapping":
            assert received_ids, "nothing arrived while the receiver was up"
            assert len(received_ids) == len(set(received_ids))
        elif state in ("down", "error-503", "error-400"):
            assert received_ids == []
            assert stats.exported == 0
            assert stats.dropped == stats.emitted > 0


@contextmanager
def _nothing() -> Iterator[None]:
    yield


class FailingEmbedder:
    """An embedder plug-in that always raises."""

    id = "failing"

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        raise RuntimeError("the embedding service is down")


class HangingEmbedder:
    """An embedder plug-in whose calls block until released (or 30 s pass), then embed by hashing."""

    id = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self._hashing = HashingEmbedder()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.entered.set()
        self.release.wait(30)
        return self._hashing.embed(texts)


class PoisonedEmbedder(HashingEmbedder):
    """The hashing embedder, raising on every call whose texts include one chosen word (as a service
    refuses an input it cannot embed)."""

    def __init__(self, poison: str) -> None:
        super().__init__()
        self.poison = poison
        self.batches: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(list(texts))
        if any(self.poison in text for text in texts):
            raise ValueError("the embedding service rejected an input")
        return super().embed(texts)


POISON = "zqxpoison"
POISONED_TURNS = 30


def _choice_turns(tracer: trace.Tracer, turns: int, poisoned: int) -> None:
    """``turns`` agent turns, each choosing ``get_capacity`` for its own question; one includes ``POISON``."""
    for number in range(turns):
        question = f"How much usable storage does cluster number {number} have?"
        if number == poisoned:
            question += f" {POISON}"
        request = [{"type": "tool_call", "id": f"call_{number}", "name": "get_capacity", "arguments": {}}]
        attributes = {
            **chat_attributes(request, "tool_calls"),
            "gen_ai.input.messages": messages("user", [{"type": "text", "content": question}]),
        }
        agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "storage"}
        with (
            tracer.start_as_current_span("invoke_agent storage", context=Context(), attributes=agent),
            tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes),
        ):
            pass


def test_one_text_the_embedder_refuses_costs_only_the_call_that_needs_it() -> None:
    """30 calls in one batch, one of them with a text the embedder raises on: 29 scored, 1 skipped."""
    embedder = PoisonedEmbedder(POISON)
    memory = InMemorySpanExporter()
    forwarded = IdRecorder(SimpleSpanProcessor(memory))
    processor = ShapecheckSpanProcessor(
        forwarded,
        checks=[ToolChoiceCheck(embedder)],
        options=ProcessorOptions(schedule_delay_millis=60_000),
    )
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    _choice_turns(provider.get_tracer("tests.reliability"), POISONED_TURNS, poisoned=7)
    assert provider.force_flush(30_000)
    counts = processor.counts()
    provider.shutdown()

    chats = [span for span in memory.get_finished_spans() if span.name.startswith("chat")]
    assert len(chats) == POISONED_TURNS
    contexts = [text for text in embedder.batches[0] if "cluster number" in text]
    assert len(contexts) == POISONED_TURNS, "the 30 calls were not evaluated in one batch"
    scored = [span for span in chats if "shapecheck.tool_choice.margin" in (span.attributes or {})]
    skipped = [span.attributes.get(TOOL_CHOICE_SKIPPED) for span in chats if span not in scored]
    assert len(scored) == POISONED_TURNS - 1
    assert skipped == ["embedding-failed"]
    assert counts.errors == ()
    # Bisection, not one call per text: about 2 log2(n) calls after the failed batch.
    assert len(embedder.batches) <= 1 + 2 * math.ceil(math.log2(len(embedder.batches[0])))
    runs = [span.attributes or {} for span in memory.get_finished_spans() if span.name.startswith("invoke")]
    assert sum(int(run.get(RUN_SKIPPED, 0)) for run in runs) == 1
    assert sum(int(run.get(RUN_SCORED, 0)) for run in runs) == POISONED_TURNS - 1


def _by_evaluation(spans: Sequence[ReadableSpan], key: str) -> list[ReadableSpan]:
    return [span for span in spans if key in (span.attributes or {})]


def test_failing_embedder_leaves_the_other_checks_and_every_span() -> None:
    """An embedder that always raises costs the tool-choice verdicts only: each batch counted as a failed
    check (its texts are not isolated one by one), logged once, spans forwarded."""
    embedder = FailingEmbedder()
    memory = InMemorySpanExporter()
    under_test = pipeline(
        SimpleSpanProcessor(memory), checks=[ToolChoiceCheck(embedder), ConformanceCheck(), FiguresCheck()]
    )
    longest = under_test.run_turns()
    assert under_test.provider.force_flush(10_000)
    counts = under_test.processor.counts()
    under_test.timed_shutdown()

    assert longest < APPLICATION_BOUND_SECONDS
    under_test.assert_each_span_forwarded_once()
    failed_batches = counts.error_count(f"check:{EVALUATION_TOOL_CHOICE}")
    assert failed_batches >= 1
    # A down embedder is recognised once the batch and its halves and quarters all failed: 7 calls at most.
    assert failed_batches <= embedder.calls <= 7 * failed_batches
    assert counts.evaluated == TURNS * 2
    exported = memory.get_finished_spans()
    assert len(_by_evaluation(exported, FIGURES_CHECKED)) == TURNS
    assert not [span for span in exported if "shapecheck.tool_choice.margin" in (span.attributes or {})]


def test_hanging_embedder_holds_neither_the_application_nor_a_flush() -> None:
    """A hung embedder: turns stay fast, flushes return at their timeout, and once it recovers all is sent."""
    embedder = HangingEmbedder()
    under_test = pipeline(None, checks=[ToolChoiceCheck(embedder), FiguresCheck()])
    try:
        longest = under_test.run_turns()
        assert embedder.entered.wait(10)
        longest = max(longest, under_test.run_turns())
        flush_seconds = under_test.timed_flush(timeout_millis=300)
        assert not under_test.processor.force_flush(timeout_millis=100)
    finally:
        embedder.release.set()
    assert under_test.provider.force_flush(30_000)
    counts = under_test.processor.counts()
    under_test.timed_shutdown()

    assert longest < APPLICATION_BOUND_SECONDS
    assert flush_seconds < 0.3 + SLACK_SECONDS
    under_test.assert_each_span_forwarded_once()
    assert counts.evaluated == counts.held
    assert counts.errors == (("flush_timeout", 2),)


def test_shutdown_with_a_hung_embedder_is_bounded_and_forwards_what_waits() -> None:
    """Shutdown waits ``shutdown_timeout_millis`` at most for a hung check, forwarding waiting spans as is.

    The batch inside the hung check is forwarded when the check returns (after the downstream was shut
    down, so a real downstream may refuse it); every other held span reaches the downstream at shutdown.
    """
    embedder = HangingEmbedder()
    under_test = pipeline(None, checks=[ToolChoiceCheck(embedder)], shutdown_timeout_millis=300)
    under_test.run_turns(TURNS)
    assert embedder.entered.wait(10)
    under_test.run_turns(TURNS)
    shutdown_seconds = under_test.timed_shutdown()
    forwarded_at_shutdown = len(under_test.forwarded)
    counts = under_test.processor.counts()
    embedder.release.set()
    deadline = time.monotonic() + 10
    while len(under_test.forwarded) < len(under_test.originals) and time.monotonic() < deadline:
        time.sleep(0.01)

    assert shutdown_seconds < 0.3 + SLACK_SECONDS
    assert counts.error_count("shutdown_timeout") == 1
    assert counts.forwarded_unevaluated >= 1
    in_hung_batch = len(under_test.originals) - forwarded_at_shutdown
    assert 0 < in_hung_batch <= 64  # at most one evaluation batch was inside the check
    under_test.assert_each_span_forwarded_once()


class _RaisingDownstream(IdRecorder):
    """Notes each span, then raises on every third ``on_end``, and on every flush and shutdown."""

    def __init__(self) -> None:
        super().__init__()
        self.raised = 0

    def on_end(self, span: ReadableSpan) -> None:
        super().on_end(span)
        if len(self) % 3 == 0:
            self.raised += 1
            raise RuntimeError("downstream fails")

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        raise RuntimeError("downstream flush fails")

    def shutdown(self) -> None:
        raise RuntimeError("downstream shutdown fails")


def test_raising_downstream_is_counted_and_never_raises_into_the_application() -> None:
    """A downstream raising in ``on_end``, flush and shutdown: each raise counted, spans handed over once."""
    downstream = _RaisingDownstream()
    processor = ShapecheckSpanProcessor(
        downstream,
        checks=_checks(),
        options=ProcessorOptions(schedule_delay_millis=20),
    )
    originals = IdRecorder()
    provider = TracerProvider(shutdown_on_exit=False)
    provider.add_span_processor(processor)
    provider.add_span_processor(originals)
    longest = longest_turn(provider.get_tracer("tests.reliability"), TURNS)
    flushed = processor.force_flush(5000)
    provider.shutdown()
    counts = processor.counts()

    assert longest < APPLICATION_BOUND_SECONDS
    assert flushed is False
    assert downstream.duplicates() == {}
    assert downstream.ids() == originals.ids()
    assert counts.error_count("downstream") == downstream.raised + 2  # + the failing flush and shutdown
    assert counts.seen == TURNS * SPANS_PER_TURN
    assert counts.evaluated == TURNS * 2


def test_flagged_answers_reach_the_receiver_enriched() -> None:
    """Control for the fault matrix: with the receiver up, enriched answers and their events arrive."""
    with OTLPReceiver() as receiver:
        downstream, log_exporter = _exporters("http", receiver.grpc_endpoint, receiver.http_endpoint)
        under_test = pipeline(downstream, log_exporter=log_exporter)
        agent_turn(under_test.provider.get_tracer("tests.reliability"))
        assert under_test.provider.force_flush(10_000)
        under_test.timed_shutdown()
        assert receiver.wait_for(lambda r: len(r.spans) == SPANS_PER_TURN and len(r.log_records) >= 1)
    flagged = [span for span in receiver.spans if span.attributes.get(FLAGGED)]
    assert [span.name for span in flagged] == ["chat gpt-4o-mini"]
    assert flagged[0].attributes["shapecheck.figures.unsupported"] == ("4200 TB",)
    assert {record.attributes["gen_ai.evaluation.name"] for record in receiver.log_records} == {
        EVALUATION_FIGURES
    }

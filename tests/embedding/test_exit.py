"""A process may exit while the evaluation worker is inside an inference: exit code as meant, no abort.

Without the exit hook of ``otel_shapecheck._native``, a daemon thread inside onnxruntime when the
interpreter finalises is ended by ``pthread_exit`` through C++ frames: "terminate called without an
active exception", exit code 134. Each scenario runs in a child process (the abort depends on where
the thread is when the interpreter exits, so the daemon-thread case runs three times).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

_EMBEDDING_THREAD = """
import sys, threading, time
import otel_shapecheck
from otel_shapecheck import MiniLMEmbedder

embedder = MiniLMEmbedder(intra_op_num_threads=2)
embedder.embed(["load the model"])
inside = threading.Event()

def work():
    while True:
        inside.set()
        embedder.embed(["a long text to embed " * 60] * 64)

threading.Thread(target=work, daemon=True).start()
inside.wait()
time.sleep(0.5)
sys.exit(int(sys.argv[1]))
"""

_TIMED_OUT_SHUTDOWN = """
import sys, threading, time
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor
from otel_shapecheck import MiniLMEmbedder, ProcessorOptions, ShapecheckSpanProcessor

embedder = MiniLMEmbedder(intra_op_num_threads=2)
embedder.embed(["load the model"])
started = threading.Event()

class EmbeddingCheck:
    name = "embedding"

    def evaluate(self, subjects):
        started.set()
        for _ in range(50):
            embedder.embed(["a long text to embed " * 60] * 64)
        return [None] * len(subjects)

class Downstream(SpanProcessor):
    def on_end(self, span):
        pass

processor = ShapecheckSpanProcessor(
    Downstream(),
    checks=[EmbeddingCheck()],
    options=ProcessorOptions(shutdown_timeout_millis=300, max_wait_millis=1, schedule_delay_millis=1),
)
span = ReadableSpan(name="chat", attributes={"gen_ai.operation.name": "chat"}, start_time=1, end_time=2)
processor.on_end(span)
processor.force_flush(10)
started.wait(30)
time.sleep(0.3)
processor.shutdown()
sys.exit(int(sys.argv[1]))
"""


def _run(script: str, code: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), str(code)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("script", "code", "runs"),
    [(_EMBEDDING_THREAD, 3, 3), (_TIMED_OUT_SHUTDOWN, 0, 1)],
    ids=["daemon-thread", "timed-out-shutdown"],
)
def test_exit_during_an_inference_keeps_the_exit_code(script: str, code: int, runs: int) -> None:
    """Exiting while a daemon thread runs the model returns the code the program asked for, every run.

    Without the hook the daemon-thread case aborted in about half the runs on the reference machine.
    """
    for _ in range(runs):
        result = _run(script, code)
        assert "terminate called" not in result.stderr, result.stderr
        assert result.returncode == code, result.stderr


def test_no_native_call_starts_once_exiting() -> None:
    """After the exit hook ran, an embed raises instead of entering the runtime, and the hook was quick."""
    script = """
    import sys, time
    from otel_shapecheck import MiniLMEmbedder
    from otel_shapecheck._native import InterpreterExitingError, stop_native_calls

    embedder = MiniLMEmbedder()
    embedder.embed(["load the model"])
    started = time.monotonic()
    assert stop_native_calls(1.0)
    assert time.monotonic() - started < 1.0
    try:
        embedder.embed(["refused"])
    except InterpreterExitingError:
        sys.exit(0)
    sys.exit(1)
    """
    result = _run(script, 0)
    assert result.returncode == 0, result.stderr

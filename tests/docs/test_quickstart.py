"""The quick start's main snippet runs as written, in a fresh interpreter, against a loopback receiver."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from otlp_receiver import OTLPReceiver

QUICKSTART = Path(__file__).resolve().parents[2] / "docs" / "quickstart.md"
PYTHON_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
APPLICATION_PLACEHOLDER = (
    "# ... instrument your LLM client with this tracer provider and run the agent as usual ..."
)


def test_attach_snippet_exports_through_the_standard_variables() -> None:
    """The 'Attach' snippet, with a span where the application goes, delivers that span over OTLP."""
    snippet = next(block for block in PYTHON_BLOCK.findall(QUICKSTART.read_text()) if "configure(" in block)
    assert APPLICATION_PLACEHOLDER in snippet
    program = snippet.replace(
        APPLICATION_PLACEHOLDER, 'trace.get_tracer("quickstart").start_span("application work").end()'
    )
    with OTLPReceiver() as receiver:
        environment = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{receiver.grpc_endpoint}",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        }
        completed = subprocess.run(
            [sys.executable, "-c", program], env=environment, capture_output=True, text=True, timeout=120
        )
        assert completed.returncode == 0, completed.stderr
        assert receiver.wait_for(
            lambda r: any(span.name == "application work" for span in r.spans), timeout=10
        )
    (span,) = [span for span in receiver.spans if span.name == "application work"]
    assert span.resource["service.name"] == "capacity-agent"

"""The SDK span fields the hot path reads, probed at import: both sides give the same verdicts.

On this SDK the fields exist (``SPAN_FIELDS``). A release that renamed one must cost speed, never spans:
the second side runs in a fresh process whose SDK spans' ``context`` property returns a copy of the field
(patched before otel_shapecheck is imported), so the probe finds field and property disagreeing and every
read goes through the public properties. Both processes run the
same scripted turns through the real processor and print every forwarded span with its attributes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from otel_shapecheck.otlp._sdk_fields import SPAN_FIELDS, own_attributes, span_context, span_name

ROOT = Path(__file__).resolve().parents[2]

_PROPERTIES_DISAGREE = """
from opentelemetry.sdk import trace as sdk_trace
from opentelemetry.trace import SpanContext
_context = sdk_trace.ReadableSpan.context.fget
def _copied(self):
    c = _context(self)
    if c is None:
        return None
    return SpanContext(c.trace_id, c.span_id, c.is_remote, c.trace_flags, c.trace_state)
sdk_trace.ReadableSpan.context = property(_copied)
"""

_RUN = """
import json
from opentelemetry.sdk.trace import TracerProvider
from otel_shapecheck.checks._builtin import build_checks
from otel_shapecheck.otlp._sdk_fields import SPAN_FIELDS
from otel_shapecheck.pipeline._offline import CollectingSpanProcessor
from otel_shapecheck.pipeline._processor import ShapecheckSpanProcessor
from pipeline.runs import CONVENTIONS, run

collected = CollectingSpanProcessor()
processor = ShapecheckSpanProcessor(collected, checks=build_checks("hashing"))
provider = TracerProvider(shutdown_on_exit=False)
provider.add_span_processor(processor)
tracer = provider.get_tracer("app")
for convention in CONVENTIONS:
    run(tracer, convention)
with tracer.start_as_current_span("GET /health"):
    pass
assert processor.force_flush()
provider.shutdown()
spans = sorted(
    (
        [span.name, {k: v for k, v in sorted((span.attributes or {}).items()) if k.startswith("shapecheck.")}]
        for span in collected.spans
    ),
    key=json.dumps,
)
counts = processor.counts()
summary = {"fields": SPAN_FIELDS, "spans": spans, "counts": [counts.seen, counts.evaluated, len(spans)]}
print(json.dumps(summary))
"""


def _run(prelude: str) -> dict[str, object]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    completed = subprocess.run(
        [sys.executable, "-c", prelude + _RUN],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    result: dict[str, object] = json.loads(completed.stdout.splitlines()[-1])
    return result


def test_this_sdks_spans_have_the_fields() -> None:
    span = ReadableSpan(name="probe", attributes={"a": 1})
    assert SPAN_FIELDS
    assert span_name(span) == "probe" and span_context(span) is None
    assert dict(own_attributes(span)) == {"a": 1}


def test_without_the_fields_the_public_path_gives_the_same_verdicts() -> None:
    with_fields = _run("")
    without_fields = _run(_PROPERTIES_DISAGREE)
    assert (with_fields["fields"], without_fields["fields"]) == (True, False)
    assert without_fields["spans"] == with_fields["spans"]
    assert without_fields["counts"] == with_fields["counts"]
    flagged = [attributes for _, attributes in with_fields["spans"] if attributes.get("shapecheck.flagged")]
    assert flagged, "the scripted turns are evaluated and flagged on both sides"

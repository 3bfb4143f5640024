"""Our own exports leave no telemetry: instrumentation is suppressed around them, as the SDK does.

The SDK's batch processors attach a context with ``_SUPPRESS_INSTRUMENTATION_KEY`` set around every
export, so an instrumented HTTP client (requests, urllib3) in the same process records no spans of the
exporter's own requests. Where we call an exporter (or its transport) ourselves, off those processors,
the same context is attached here: the instrumentation key, the plain-string key that older
instrumentations read, and the HTTP-instrumentation key.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import context

# Both keys are module constants of opentelemetry-api (1.39 and later); the instrumentations read them.
from opentelemetry.context import _SUPPRESS_HTTP_INSTRUMENTATION_KEY, _SUPPRESS_INSTRUMENTATION_KEY

_PLAIN_KEY = "suppress_instrumentation"
"""The string key opentelemetry-instrumentation still reads for instrumentations that predate the API's."""


@contextmanager
def instrumentation_suppressed() -> Iterator[None]:
    """Run the block in a context where instrumentations record nothing."""
    suppressed = context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True)
    suppressed = context.set_value(_PLAIN_KEY, True, suppressed)
    suppressed = context.set_value(_SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, suppressed)
    token = context.attach(suppressed)
    try:
        yield
    finally:
        context.detach(token)

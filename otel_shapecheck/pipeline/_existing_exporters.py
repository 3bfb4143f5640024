"""The exporting span processors an application already has, and putting the checks in front of them.

An application that exports its spans has a ``BatchSpanProcessor`` (or ``SimpleSpanProcessor``) on its
provider. Adding the checks beside it would export every span twice: once as it came, once enriched.
So ``configure()`` takes those processors off the provider and makes them the checks' downstream, in
the slot of the first one (the SDK calls processors in the order they were added). Processors the
application adds afterwards are routed the same way, through the provider's ``add_span_processor``.

The provider's list of processors (``_active_span_processor._span_processors``, a tuple replaced under
the multi-processor's lock, as the SDK's own ``add_span_processor`` does) is not public API; where a
release lacks it, nothing is moved and a warning names the fix instead.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from opentelemetry.sdk.trace import SpanProcessor, SynchronousMultiSpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

logger = logging.getLogger(__name__)

_FIX = (
    "wrap the exporting processor instead: "
    "provider.add_span_processor(ShapecheckSpanProcessor(BatchSpanProcessor(exporter))), "
    "or call otel_shapecheck.configure(provider) without endpoint/span_exporter to use it"
)


def is_exporting(processor: SpanProcessor) -> bool:
    """Whether ``processor`` is one of the SDK's exporting processors."""
    return isinstance(processor, (BatchSpanProcessor, SimpleSpanProcessor))


def _describe(processor: SpanProcessor) -> str:
    exporter: Any = getattr(processor, "span_exporter", None)
    batch = getattr(processor, "_batch_processor", None)
    if exporter is None and batch is not None:
        exporter = getattr(batch, "_exporter", None)
    inner = f"({type(exporter).__name__})" if exporter is not None else ""
    return f"{type(processor).__name__}{inner}"


class ExportingProcessors:
    """The exporting processors found on a provider, gathered behind one fan-out for the checks."""

    def __init__(self, provider: TracerProvider) -> None:
        self._provider = provider
        self._multi: Any = getattr(provider, "_active_span_processor", None)
        current = getattr(self._multi, "_span_processors", None)
        self._movable = isinstance(current, tuple) and hasattr(self._multi, "_lock")
        listed: tuple[SpanProcessor, ...] = current if isinstance(current, tuple) else ()
        self._existing = tuple(processor for processor in listed if is_exporting(processor))
        self.fan_out = SynchronousMultiSpanProcessor()  # type: ignore[no-untyped-call]
        """The checks' downstream when the application's own exporters are kept."""
        for processor in self._existing:
            self.fan_out.add_span_processor(processor)

    @property
    def found(self) -> bool:
        """Whether the provider already has exporting processors that can be moved behind the checks."""
        return bool(self._existing) and self._movable

    def warn_if_found(self) -> None:
        """Warn that the provider's exporting processors stay beside the checks (spans exported twice)."""
        if self._existing:
            names = ", ".join(_describe(processor) for processor in self._existing)
            logger.warning(
                "The tracer provider already exports spans through %s; with another exporter for the "
                "checks every span is exported twice (as it came and enriched). To export once, %s",
                names,
                _FIX,
            )

    def install(self, checks: SpanProcessor) -> None:
        """Register ``checks`` on the provider, in place of the exporting processors it now leads."""
        if self.found and self.fan_out_in_use(checks):
            multi = self._multi
            with multi._lock:
                processors: list[SpanProcessor] = []
                for processor in multi._span_processors:
                    if processor in self._existing:
                        if checks not in processors:
                            processors.append(checks)
                    else:
                        processors.append(processor)
                multi._span_processors = tuple(processors)
        else:
            self._provider.add_span_processor(checks)
        self._route_later_additions(checks)

    def fan_out_in_use(self, checks: SpanProcessor) -> bool:
        """Whether ``checks`` forwards to this fan-out (else the exporting processors stay where they are)."""
        return getattr(checks, "_downstream", None) is self.fan_out

    def _route_later_additions(self, checks: SpanProcessor) -> None:
        """Watch what the application adds from now on: an exporting processor goes behind the checks
        when they lead the application's exporters, and is warned about (once) when they export on
        their own, since every span would then be exported twice."""
        original = self._provider.add_span_processor
        behind_checks = self.fan_out_in_use(checks)
        fan_out = self.fan_out
        warned = threading.Event()

        def add_span_processor(span_processor: SpanProcessor) -> None:
            if not is_exporting(span_processor):
                original(span_processor)
            elif behind_checks:
                fan_out.add_span_processor(span_processor)
                logger.info(
                    "%s was added after otel_shapecheck.configure(): it is put behind the checks and "
                    "exports each span once, enriched",
                    _describe(span_processor),
                )
            else:
                original(span_processor)
                if not warned.is_set():
                    warned.set()
                    logger.warning(
                        "%s was added after otel_shapecheck.configure(), which exports on its own: every "
                        "span is now exported twice. To export once, %s",
                        _describe(span_processor),
                        _FIX,
                    )

        self._provider.add_span_processor = add_span_processor  # type: ignore[method-assign]

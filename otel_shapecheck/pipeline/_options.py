"""The span processor's settings: one frozen object, resolved once, shared by every entry point.

Like the SDK's ``SpanLimits``, each setting left out (or ``None``) is read from its ``OTEL_SHAPECHECK_*``
variable, else its default; a bad argument raises ``ValueError`` naming it, a bad variable logs one
warning and the default applies. ``ShapecheckSpanProcessor``, ``Shapecheck``, ``configure()``, the
gateway and the offline ``check`` all take the same object, so a setting is named and validated in one
place: the table of ``otel_shapecheck._settings_table``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from otel_shapecheck._settings_table import DEFAULT_ANSWER_TOOLS, PROCESSOR

__all__ = ["DEFAULT_ANSWER_TOOLS", "ProcessorOptions"]


@dataclass(frozen=True, init=False)
class ProcessorOptions:
    """Bounds of the span processor in time and space (whole numbers ≥ 1), how it reads calls, and what
    its verdict metrics are broken down by.

    Args:
        max_wait_millis: longest a span waits for facts (its parent's end) before it is evaluated as
            incomplete (:envvar:`OTEL_SHAPECHECK_MAX_WAIT_MILLIS`, 30000).
        max_pending_spans: spans waiting for facts at once; past it the oldest is evaluated as
            incomplete (:envvar:`OTEL_SHAPECHECK_MAX_PENDING_SPANS`, 10000).
        max_queue_size: spans waiting for the worker; past it new spans are forwarded un-evaluated
            (:envvar:`OTEL_SHAPECHECK_MAX_QUEUE_SIZE`, 2048). Ended spans queued for the recording
            thread are held to it too: past it the ending thread records the oldest one itself.
        max_evaluation_batch_size: spans per check call
            (:envvar:`OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE`, 64).
        schedule_delay_millis: longest wait before a partial batch is evaluated
            (:envvar:`OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS`, 200).
        max_traces: traces whose facts are kept, least recently active dropped first
            (:envvar:`OTEL_SHAPECHECK_MAX_TRACES`, 1000).
        max_finished_traces: local roots that end after a trace's own before its facts go (once its
            held spans are released): what a span ending after its root can still find
            (:envvar:`OTEL_SHAPECHECK_MAX_FINISHED_TRACES`, 256).
        max_facts_per_trace: facts kept per trace (:envvar:`OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE`, 512).
        max_fact_bytes: estimated bytes all kept facts may hold; past it the least recently active traces
            are forgotten first (:envvar:`OTEL_SHAPECHECK_MAX_FACT_BYTES`, 64 MiB).
        shutdown_timeout_millis: longest ``shutdown`` waits for the worker before it forwards what is left
            un-evaluated (:envvar:`OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS`, 30000).
        answer_tools: tools through which a model answers instead of choosing a tool (a trailing ``*``
            matches a prefix), for calls whose framework does not declare its output tools; such a call
            gets no tool-choice score (``answer-tool``) and its figures are read from the call's
            arguments (:envvar:`OTEL_SHAPECHECK_ANSWER_TOOLS`, ``final_answer,final_result,final_result_*``).
            A processor-level setting, not a check's: it decides what a call *is* (an answer), and both
            tool choice and figures must agree on it.
        metrics_tool_names: add the chosen tool's name (``gen_ai.tool.name``) to the tool-choice verdict
            metrics, one series per tool (:envvar:`OTEL_SHAPECHECK_METRICS_TOOL_NAMES`, ``false``).

    Raises:
        ValueError: a bound that is not a whole number ≥ 1, ``answer_tools`` that is not a sequence
            of non-empty names, or a ``metrics_tool_names`` that is not a bool.
    """

    max_wait_millis: int
    max_pending_spans: int
    max_queue_size: int
    max_evaluation_batch_size: int
    schedule_delay_millis: int
    max_traces: int
    max_finished_traces: int
    max_facts_per_trace: int
    max_fact_bytes: int
    shutdown_timeout_millis: int
    answer_tools: tuple[str, ...]
    metrics_tool_names: bool

    def __init__(
        self,
        *,
        max_wait_millis: int | None = None,
        max_pending_spans: int | None = None,
        max_queue_size: int | None = None,
        max_evaluation_batch_size: int | None = None,
        schedule_delay_millis: int | None = None,
        max_traces: int | None = None,
        max_finished_traces: int | None = None,
        max_facts_per_trace: int | None = None,
        max_fact_bytes: int | None = None,
        shutdown_timeout_millis: int | None = None,
        answer_tools: Sequence[str] | None = None,
        metrics_tool_names: bool | None = None,
    ) -> None:
        arguments = locals()
        for setting in PROCESSOR:  # the fields, their variables and defaults: one row each in the table
            # frozen: the only writes happen here
            object.__setattr__(self, setting.name, setting.resolve(arguments[setting.name]))

    def replace(self, **changes: object) -> ProcessorOptions:
        """A copy with ``changes`` applied (validated like constructor arguments)."""
        return ProcessorOptions(**{**dataclasses.asdict(self), **changes})

    @property
    def max_wait_seconds(self) -> float:
        """``max_wait_millis`` in seconds."""
        return self.max_wait_millis / 1000

    @property
    def schedule_delay_seconds(self) -> float:
        """``schedule_delay_millis`` in seconds."""
        return self.schedule_delay_millis / 1000

    @property
    def shutdown_timeout_seconds(self) -> float:
        """``shutdown_timeout_millis`` in seconds."""
        return self.shutdown_timeout_millis / 1000

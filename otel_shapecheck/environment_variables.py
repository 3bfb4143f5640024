"""Every ``OTEL_SHAPECHECK_*`` environment variable, one constant each, named exactly like the variable.

Precedence is the SDK's (``opentelemetry.sdk.environment_variables``): an explicit constructor argument
wins, then the variable, then the default. A bad argument raises ``ValueError`` naming it; a bad variable
logs one warning naming the variable and its value, and the default applies, so a typo in a deployment's
environment never stops the application from starting. The constants are checked against the one
settings table (``otel_shapecheck._settings_table``), which ``ProcessorOptions``, ``GatewayOptions`` and
``serve``'s flags are built from. Durations are whole milliseconds, as in the SDK's variables.
"""

from __future__ import annotations

from typing import Final

# The span processor (ShapecheckSpanProcessor, Shapecheck, configure(), the gateway, check).

OTEL_SHAPECHECK_MAX_WAIT_MILLIS: Final = "OTEL_SHAPECHECK_MAX_WAIT_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_WAIT_MILLIS

Longest a held span waits for facts (its parent's end, sibling tool spans) before it is evaluated as
``incomplete``. Whole number ≥ 1; default 30000.
"""

OTEL_SHAPECHECK_MAX_PENDING_SPANS: Final = "OTEL_SHAPECHECK_MAX_PENDING_SPANS"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_PENDING_SPANS

Spans waiting for facts at once; past it the oldest is evaluated as ``incomplete``. Default 10000.
"""

OTEL_SHAPECHECK_MAX_QUEUE_SIZE: Final = "OTEL_SHAPECHECK_MAX_QUEUE_SIZE"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_QUEUE_SIZE

Spans waiting for the evaluation worker; past it new spans are forwarded un-evaluated. Default 2048.
"""

OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE: Final = "OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE

Spans per check call (one embedding call per batch). Default 64.
"""

OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS: Final = "OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS

Longest wait before a partial batch is evaluated. Default 200.
"""

OTEL_SHAPECHECK_MAX_TRACES: Final = "OTEL_SHAPECHECK_MAX_TRACES"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_TRACES

Traces whose facts (tool executions, attempts, content records) are kept, least recently active
dropped first. Default 1000.
"""

OTEL_SHAPECHECK_MAX_FINISHED_TRACES: Final = "OTEL_SHAPECHECK_MAX_FINISHED_TRACES"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_FINISHED_TRACES

Local root spans (no parent, or a remote one that is not live in this process) that end after a
trace's own before the trace's facts go, once its held spans are released: the facts of a finished
trace are kept while a span ending after its root (a background task's, say) could still need them,
not until ``max_traces`` others started. Processors that see spans start only (in-process, ``check``);
the gateway keeps facts to ``max_traces``. Default 256.
"""

OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE: Final = "OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE

Facts kept per trace. Default 512.
"""

OTEL_SHAPECHECK_MAX_FACT_BYTES: Final = "OTEL_SHAPECHECK_MAX_FACT_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_FACT_BYTES

Estimated bytes all kept facts (tool results, content records, attempts) may hold; past it the least
recently active traces are forgotten first. Default 67108864 (64 MiB).
"""

OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS: Final = "OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS

Longest ``shutdown`` waits for the worker before it forwards what is left un-evaluated. Default 30000.
"""

OTEL_SHAPECHECK_METRICS_TOOL_NAMES: Final = "OTEL_SHAPECHECK_METRICS_TOOL_NAMES"
"""
.. envvar:: OTEL_SHAPECHECK_METRICS_TOOL_NAMES

``true`` adds the chosen tool's name (``gen_ai.tool.name``) to the tool-choice verdict metrics, one
series per tool: opt in only for catalogs of a bounded size. Default ``false``.
"""

# Evaluation events (EvaluationEventEmitter).

OTEL_SHAPECHECK_EVENTS_FORWARD: Final = "OTEL_SHAPECHECK_EVENTS_FORWARD"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_FORWARD

Which verdicts become ``gen_ai.evaluation.result`` log records: ``flagged`` (default) or ``all``.
"""

OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT: Final = "OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT

``true`` also sends the verdict attributes that quote the answer or tool results. Default ``false``.
"""

OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE: Final = "OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE

Records waiting for export; past it new records are refused and counted. Default 2048.
"""

OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE: Final = "OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE

Records per export call (at most the queue size). Default 512.
"""

OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS: Final = "OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS

Longest wait before a partial batch of records is exported. Default 1000.
"""

OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS: Final = "OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS

The most ``force_flush`` and ``shutdown`` wait, even when the endpoint hangs. Default 10000.
"""

# Tool choice.

OTEL_SHAPECHECK_TOOL_CHOICE_SCORING: Final = "OTEL_SHAPECHECK_TOOL_CHOICE_SCORING"
"""
.. envvar:: OTEL_SHAPECHECK_TOOL_CHOICE_SCORING

How the tool-choice check scores a choice: ``calibrated`` (default; parameter-aware tool text fused with
a lexical score, each of several chosen tools scored) or ``seed`` (the ported rule, text and threshold
exactly).
"""

OTEL_SHAPECHECK_MARGIN_THRESHOLD: Final = "OTEL_SHAPECHECK_MARGIN_THRESHOLD"
"""
.. envvar:: OTEL_SHAPECHECK_MARGIN_THRESHOLD

Margins below it are ``narrow``. Finite number ≥ 0; default: the scoring's own, 0.01 for ``calibrated``
and 0.05 for ``seed``. When set, it applies to whichever scoring is in use.
"""

OTEL_SHAPECHECK_MAX_SLOT_CHARS: Final = "OTEL_SHAPECHECK_MAX_SLOT_CHARS"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_SLOT_CHARS

Characters kept from each slot of the choice context (user text, assistant text). Default 2000.
"""

OTEL_SHAPECHECK_EMBEDDER_THREADS: Final = "OTEL_SHAPECHECK_EMBEDDER_THREADS"
"""
.. envvar:: OTEL_SHAPECHECK_EMBEDDER_THREADS

Threads onnxruntime may use for one MiniLM inference. Default 1 (stay off the application's cores).
"""

OTEL_SHAPECHECK_MAX_MENU_TOOLS: Final = "OTEL_SHAPECHECK_MAX_MENU_TOOLS"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_MENU_TOOLS

Distinct tools a menu may offer and still be scored; a bigger menu is skipped as ``menu-too-large``.
Menus of more than 2 048 tools are scored through a FAISS index of their tool vectors. Default 100000.
"""

OTEL_SHAPECHECK_MAX_MENU_BYTES: Final = "OTEL_SHAPECHECK_MAX_MENU_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_MAX_MENU_BYTES

Characters of tool text (each tool's name and description, and its parameter text, after the per-tool
caps) a menu may hold and still be scored; a bigger menu is skipped as ``menu-too-large``.
Default 33554432 (32 MiB).
"""

OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES: Final = "OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES"
"""
.. envvar:: OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES

Vectors kept by an embedding cache. Default 1024.
"""

OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH: Final = "OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH"
"""
.. envvar:: OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH

The sqlite file that keeps MiniLM vectors across processes and restarts (shared by ``check``, ``serve``
and the span processor; several processes may use it at once), or ``none`` to keep vectors in memory
only. An absolute path; a leading ``~`` is expanded. Default:
``$XDG_CACHE_HOME/otel-shapecheck/embeddings.sqlite``, else ``~/.cache/otel-shapecheck/embeddings.sqlite``.
A corrupt, locked, read-only or full file is logged once and bypassed.
"""

OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES: Final = "OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES

Bytes the embedding cache file may hold (vectors, keys and row overhead; the file itself stays under
twice this), least recently used first out. Default 134217728 (128 MiB).
"""

# Figures.

OTEL_SHAPECHECK_FIGURES_MIN_DIGITS: Final = "OTEL_SHAPECHECK_FIGURES_MIN_DIGITS"
"""
.. envvar:: OTEL_SHAPECHECK_FIGURES_MIN_DIGITS

Digits a bare number (one without a unit) needs to be checked. Default 4.
"""

OTEL_SHAPECHECK_FIGURES_DERIVATIONS: Final = "OTEL_SHAPECHECK_FIGURES_DERIVATIONS"
"""
.. envvar:: OTEL_SHAPECHECK_FIGURES_DERIVATIONS

Which derivations support a figure: ``closed`` (the reference's set only: rounded, unit-scale,
complement, column sum, ratio, difference) or ``extended`` (also cell arithmetic: differences, percent
changes, averages, ratios and shares of cells in one row or column, accepted only below the coincidence
bound). Default ``extended``.
"""

OTEL_SHAPECHECK_FIGURES_COINCIDENCE: Final = "OTEL_SHAPECHECK_FIGURES_COINCIDENCE"
"""
.. envvar:: OTEL_SHAPECHECK_FIGURES_COINCIDENCE

The bound ``p`` of the extended derivations: one is accepted only when the chance that a random number
of the figure's magnitude and precision would match some candidate is below it (a match among the cells
the answer's own words name: below min(0.5, 10 · p); the whole table when those words name cells the
figure is none of: below p / 4). A number in [0, 1]; default 0.05 (with the named cells' factor and
cap, the setting accepting the most faithful worded figures of the four seen files together, both
TAT-QA files, FinQA's and ConvFinQA's, among those letting at most 1 % of mutated and 0.5 % of
invented figures through there, worded and bare).
"""

# How the span processor reads calls.

OTEL_SHAPECHECK_ANSWER_TOOLS: Final = "OTEL_SHAPECHECK_ANSWER_TOOLS"
"""
.. envvar:: OTEL_SHAPECHECK_ANSWER_TOOLS

Tools through which a model delivers its answer instead of choosing a tool, comma-separated; a name
ending in ``*`` matches every name with that prefix. Used for calls whose framework does not declare its
output tools itself (pydantic-ai does). Default ``final_answer,final_result,final_result_*``
(smolagents' ``final_answer``, pydantic-ai's output tools).
"""

# The gateway (otel-shapecheck serve).

OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE: Final = "OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE

Spans and log records in memory at once, being evaluated and forwarded (the rest waits in the spool); a
request with more items than this is refused for good ("send smaller batches"). Default 16384.
"""

OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS: Final = "OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS

The retry delay suggested to refused senders (HTTP's ``Retry-After`` rounds it up to whole seconds, at
least 1). Whole number ≥ 0; default 1000.
"""

OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES: Final = "OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES

Largest request body accepted, decompressed. Default 4194304 (4 MiB).
"""

OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES: Final = "OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES

Bytes of accepted requests (as stored) whose items are in memory at once, being evaluated and forwarded;
the rest waits in the spool. Default 67108864 (64 MiB).
"""

OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES: Final = "OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES

Bytes of request bodies being received and decoded at once; a request that does not fit is refused
with backpressure before its body is read. Default 67108864 (64 MiB).
"""

OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES: Final = "OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES

Bytes the spool may hold; past it requests are refused with backpressure, never dropped. Default
1073741824 (1 GiB), or 134217728 (128 MiB) with ``--no-spool``.
"""

OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS: Final = "OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS

Longest the durable spool keeps the deletes (and ``done`` marks) of forwarded requests in memory before
writing them (eight to a transaction, sooner when eight are waiting). A crash loses at most these
writes, so their requests are forwarded again (counted as possibly sent twice), never lost. Whole number
≥ 0; default 250.
"""

OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS: Final = "OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS

Longest a stop spends evaluating and forwarding what the gateway holds; the rest stays in the spool for
the next start. Whole number ≥ 0; default 25000.
"""

# Deprecated names, still read (as seconds) when the new variable is unset; reading one logs a warning.

OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS: Final = "OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS

Deprecated: :envvar:`OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS`, in seconds.
"""

OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS: Final = "OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS

Deprecated: :envvar:`OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS`, in seconds.
"""

OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS: Final = "OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS"
"""
.. envvar:: OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS

Deprecated: :envvar:`OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS`, in seconds.
"""

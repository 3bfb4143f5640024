"""Every ``OTEL_SHAPECHECK_*`` setting, described once: its argument, variable, default, kind and flag.

One row per setting, like the ``ConfigParam`` table of pydantic's logfire: ``ProcessorOptions`` and
``GatewayOptions`` take their fields from it, ``serve`` builds its flags from it, and tests check
``otel_shapecheck.environment_variables`` and ``docs/configuration.md`` against it, so a new setting is
added here and nowhere it can be forgotten. Durations are whole milliseconds in variables and arguments,
the OpenTelemetry SDK's unit (``OTEL_BSP_SCHEDULE_DELAY``); a flag names its unit, and flags of a
millisecond setting may read seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from otel_shapecheck import _settings
from otel_shapecheck import environment_variables as env

MIB = 1024 * 1024
_ROW_DEFAULT: Any = object()
"""What :meth:`Setting.resolve` is given when the row's own default applies."""


@dataclass(frozen=True)
class Kind:
    """What values a setting takes: how its variable is resolved, and the requirement a bad one breaks."""

    requirement: str
    resolve: Callable[[str, Any, str, Any], Any]


@dataclass(frozen=True)
class Whole(Kind):
    """A whole number ≥ ``minimum`` (counts, bytes, milliseconds)."""

    minimum: int


def _whole(minimum: int) -> Whole:
    return Whole(
        f"a whole number ≥ {minimum}",
        lambda name, explicit, variable, default: _settings.whole(name, explicit, variable, default, minimum),
        minimum,
    )


@dataclass(frozen=True)
class Choice(Kind):
    """One of ``allowed`` (any case; resolved in lower case)."""

    allowed: tuple[str, ...]


def _choice(*allowed: str) -> Choice:
    return Choice(
        f"one of {', '.join(allowed)}",
        lambda name, explicit, variable, default: _settings.choice(
            name, explicit, variable, default, allowed
        ),
        allowed,
    )


COUNT = _whole(1)
MILLIS = _whole(1)
MILLIS_OR_ZERO = _whole(0)
NUMBER = Kind("a finite number ≥ 0", _settings.non_negative_float)
PROBABILITY = Kind("a number in [0, 1]", _settings.probability)
BOOLEAN = Kind("true or false", _settings.boolean)
NAMES = Kind("comma-separated non-empty names", _settings.names)
FILE_OR_OFF = Kind("an absolute path or none", _settings.path_or_off)


@dataclass(frozen=True)
class Setting:
    """One setting: the argument ``name`` of its ``component``, its variable, default and kind.

    ``default`` ``None`` means the component decides (``shown_default`` says how). ``flag`` is its
    command-line spelling, if it has one (``flag_in_seconds``: the flag reads seconds for a millisecond
    setting; ``old_flags`` are deprecated spellings kept working). ``renamed_from`` is a deprecated
    ``..._SECONDS`` variable still read (as seconds) when the new one is unset.
    """

    component: str
    name: str
    variable: str
    default: Any
    kind: Kind
    doc: str
    flag: str | None = None
    flag_in_seconds: bool = False
    old_flags: tuple[str, ...] = ()
    renamed_from: str | None = None
    shown_default: str | None = None

    def resolve(self, explicit: Any, *, default: Any = _ROW_DEFAULT) -> Any:
        """``explicit``, else the variable (else its deprecated name), else the default.

        ``default`` is the component's, for a row whose default the component computes when it is
        built (the row's ``default`` is ``None``): the cache file's location depends on the environment,
        the margin threshold on the scoring.

        Raises:
            ValueError: ``explicit`` is not a valid value (the message names the argument).
        """
        if default is _ROW_DEFAULT:
            default = self.default
        else:
            assert self.default is None, f"{self.name} has a tabled default; it is not computed"
        if explicit is None and self.renamed_from is not None and _settings.unset(self.variable):
            assert isinstance(self.kind, Whole)
            old = _settings.renamed_seconds(
                self.name, self.renamed_from, self.variable, default, self.kind.minimum
            )
            if old is not None:
                return old
        return self.kind.resolve(self.name, explicit, self.variable, default)

    @property
    def default_text(self) -> str:
        """The default as the docs and ``--help`` show it."""
        if self.shown_default is not None:
            return self.shown_default
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        if isinstance(self.default, tuple):
            return ",".join(self.default)
        if self.name.endswith("_bytes") and isinstance(self.default, int) and self.default % MIB == 0:
            return f"{self.default} ({self.default // MIB} MiB)"
        return str(self.default)


def _processor(name: str, variable: str, default: Any, kind: Kind, doc: str, **more: Any) -> Setting:
    return Setting("processor", name, variable, default, kind, doc, **more)


def _gateway(name: str, variable: str, default: Any, kind: Kind, doc: str, **more: Any) -> Setting:
    return Setting("gateway", name, variable, default, kind, doc, **more)


DEFAULT_ANSWER_TOOLS = ("final_answer", "final_result", "final_result_*")
"""smolagents' ``final_answer``; pydantic-ai's output tools (``final_result``, ``final_result_<Type>``)."""

PROCESSOR = (
    _processor(
        "max_wait_millis",
        env.OTEL_SHAPECHECK_MAX_WAIT_MILLIS,
        30_000,
        MILLIS,
        "longest a span waits for facts before it is evaluated as incomplete",
        flag="--max-wait-millis",
    ),
    _processor(
        "max_pending_spans",
        env.OTEL_SHAPECHECK_MAX_PENDING_SPANS,
        10_000,
        COUNT,
        "spans waiting for facts at once; past it the oldest is evaluated as incomplete",
    ),
    _processor(
        "max_queue_size",
        env.OTEL_SHAPECHECK_MAX_QUEUE_SIZE,
        2048,
        COUNT,
        "spans waiting for the evaluation worker; past it new spans are forwarded un-evaluated",
    ),
    _processor(
        "max_evaluation_batch_size",
        env.OTEL_SHAPECHECK_MAX_EVALUATION_BATCH_SIZE,
        64,
        COUNT,
        "spans per check call (one embedding call per batch)",
    ),
    _processor(
        "schedule_delay_millis",
        env.OTEL_SHAPECHECK_SCHEDULE_DELAY_MILLIS,
        200,
        MILLIS,
        "longest wait before a partial batch is evaluated",
    ),
    _processor(
        "max_traces",
        env.OTEL_SHAPECHECK_MAX_TRACES,
        1000,
        COUNT,
        "traces whose facts are kept, least recently active dropped first",
    ),
    _processor(
        "max_finished_traces",
        env.OTEL_SHAPECHECK_MAX_FINISHED_TRACES,
        256,
        COUNT,
        "local roots ending after a trace's own before its facts go (once its held spans are released)",
    ),
    _processor(
        "max_facts_per_trace", env.OTEL_SHAPECHECK_MAX_FACTS_PER_TRACE, 512, COUNT, "facts kept per trace"
    ),
    _processor(
        "max_fact_bytes",
        env.OTEL_SHAPECHECK_MAX_FACT_BYTES,
        64 * MIB,
        COUNT,
        "estimated bytes all kept facts may hold; past it the least recently active traces go first",
    ),
    _processor(
        "shutdown_timeout_millis",
        env.OTEL_SHAPECHECK_SHUTDOWN_TIMEOUT_MILLIS,
        30_000,
        MILLIS,
        "longest shutdown waits for the worker before forwarding what is left un-evaluated",
    ),
    _processor(
        "answer_tools",
        env.OTEL_SHAPECHECK_ANSWER_TOOLS,
        DEFAULT_ANSWER_TOOLS,
        NAMES,
        "tools through which a model answers rather than chooses (a trailing * matches a prefix)",
    ),
    _processor(
        "metrics_tool_names",
        env.OTEL_SHAPECHECK_METRICS_TOOL_NAMES,
        False,
        BOOLEAN,
        "add the chosen tool's name to the tool-choice verdict metrics (one series per tool)",
    ),
)
"""The span processor's settings: the fields of ``ProcessorOptions``, in order."""

GATEWAY = (
    _gateway(
        "max_queue_size",
        env.OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_SIZE,
        16_384,
        COUNT,
        "spans and log records in memory at once; a request with more is refused for good",
        flag="--max-queue-size",
    ),
    _gateway(
        "max_queue_bytes",
        env.OTEL_SHAPECHECK_GATEWAY_MAX_QUEUE_BYTES,
        64 * MIB,
        COUNT,
        "bytes of accepted requests in memory at once (the rest waits in the spool)",
        flag="--max-queue-bytes",
    ),
    _gateway(
        "max_receiving_bytes",
        env.OTEL_SHAPECHECK_GATEWAY_MAX_RECEIVING_BYTES,
        64 * MIB,
        COUNT,
        "bytes of request bodies being received at once; past it 429 before the body is read",
        flag="--max-receiving-bytes",
    ),
    _gateway(
        "max_request_bytes",
        env.OTEL_SHAPECHECK_GATEWAY_MAX_REQUEST_BYTES,
        4 * MIB,
        COUNT,
        "largest request body, decompressed",
        flag="--max-request-bytes",
    ),
    _gateway(
        "retry_after_millis",
        env.OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_MILLIS,
        1000,
        MILLIS_OR_ZERO,
        "retry delay suggested to refused senders",
        flag="--retry-after-seconds",
        flag_in_seconds=True,
        renamed_from=env.OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
    ),
    _gateway(
        "spool_max_bytes",
        env.OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES,
        None,
        COUNT,
        "bytes the spool may hold; past it 429, never dropped",
        flag="--spool-max-bytes",
        shown_default=f"{1024 * MIB} ({128 * MIB} with --no-spool)",
    ),
    _gateway(
        "spool_flush_millis",
        env.OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS,
        250,
        MILLIS_OR_ZERO,
        "longest the spool defers deletes of forwarded requests; a crash re-sends at most these",
        flag="--spool-flush-seconds",
        flag_in_seconds=True,
        renamed_from=env.OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS,
    ),
    _gateway(
        "shutdown_timeout_millis",
        env.OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_MILLIS,
        25_000,
        MILLIS_OR_ZERO,
        "longest a stop spends evaluating and forwarding; the rest stays in the spool",
        flag="--shutdown-timeout-seconds",
        flag_in_seconds=True,
        old_flags=("--shutdown-timeout",),
        renamed_from=env.OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS,
    ),
)
"""The gateway's settings: the fields of ``GatewayOptions``, in order."""

EVENTS = (
    Setting(
        "events",
        "forward",
        env.OTEL_SHAPECHECK_EVENTS_FORWARD,
        "flagged",
        _choice("flagged", "all"),
        "which verdicts become evaluation events",
        flag="--events-forward",
    ),
    Setting(
        "events",
        "include_content",
        env.OTEL_SHAPECHECK_EVENTS_INCLUDE_CONTENT,
        False,
        BOOLEAN,
        "events also quote the answer or tool results",
        flag="--include-content",
    ),
    Setting(
        "events",
        "max_queue_size",
        env.OTEL_SHAPECHECK_EVENTS_MAX_QUEUE_SIZE,
        2048,
        COUNT,
        "records waiting for export; past it new records are refused and counted",
    ),
    Setting(
        "events",
        "max_export_batch_size",
        env.OTEL_SHAPECHECK_EVENTS_MAX_EXPORT_BATCH_SIZE,
        512,
        COUNT,
        "records per export call (at most the queue size)",
    ),
    Setting(
        "events",
        "schedule_delay_millis",
        env.OTEL_SHAPECHECK_EVENTS_SCHEDULE_DELAY_MILLIS,
        1000,
        MILLIS,
        "longest wait before a partial batch of records is exported",
    ),
    Setting(
        "events",
        "flush_timeout_millis",
        env.OTEL_SHAPECHECK_EVENTS_FLUSH_TIMEOUT_MILLIS,
        10_000,
        MILLIS,
        "the most force_flush and shutdown wait, even when the endpoint hangs",
    ),
)
"""``EvaluationEventEmitter``'s settings."""

TOOL_CHOICE = (
    Setting(
        "tool_choice",
        "scoring",
        env.OTEL_SHAPECHECK_TOOL_CHOICE_SCORING,
        "calibrated",
        _choice("calibrated", "seed"),
        "how a choice is scored",
    ),
    Setting(
        "tool_choice",
        "margin_threshold",
        env.OTEL_SHAPECHECK_MARGIN_THRESHOLD,
        None,
        NUMBER,
        "margins below it are narrow (under `calibrated`, the margin as a share of the top score)",
        shown_default="the scoring's: 0.03125 (`calibrated`, relative), 0.05 (`seed`)",
    ),
    Setting(
        "tool_choice",
        "max_slot_chars",
        env.OTEL_SHAPECHECK_MAX_SLOT_CHARS,
        2000,
        COUNT,
        "characters kept from each slot of the choice context",
    ),
    Setting(
        "tool_choice",
        "max_menu_tools",
        env.OTEL_SHAPECHECK_MAX_MENU_TOOLS,
        100_000,
        COUNT,
        "distinct tools a menu may offer and still be scored",
    ),
    Setting(
        "tool_choice",
        "max_menu_bytes",
        env.OTEL_SHAPECHECK_MAX_MENU_BYTES,
        32 * MIB,
        COUNT,
        "characters of tool text a menu may hold and still be scored",
    ),
)
"""``ToolChoiceCheck``'s settings."""

EMBEDDING = (
    Setting(
        "embedding",
        "intra_op_num_threads",
        env.OTEL_SHAPECHECK_EMBEDDER_THREADS,
        1,
        COUNT,
        "threads onnxruntime may use for one MiniLM inference",
    ),
    Setting(
        "embedding",
        "max_entries",
        env.OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES,
        1024,
        COUNT,
        "vectors kept by an embedding cache",
    ),
    Setting(
        "embedding",
        "path",
        env.OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH,
        None,
        FILE_OR_OFF,
        "the file that keeps MiniLM vectors across processes and restarts, or none",
        flag="--embedding-cache",
        shown_default="`$XDG_CACHE_HOME/otel-shapecheck/embeddings.sqlite`, else under `~/.cache`",
    ),
    Setting(
        "embedding",
        "max_file_bytes",
        env.OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES,
        128 * MIB,
        COUNT,
        "bytes the embedding cache file may hold, least recently used first out",
    ),
)
"""The embedders' and the embedding cache's settings."""

FIGURES = (
    Setting(
        "figures",
        "min_digits",
        env.OTEL_SHAPECHECK_FIGURES_MIN_DIGITS,
        4,
        COUNT,
        "digits a bare number needs to be checked",
    ),
    Setting(
        "figures",
        "derivations",
        env.OTEL_SHAPECHECK_FIGURES_DERIVATIONS,
        "extended",
        _choice("closed", "extended"),
        "which derivations support a figure",
        flag="--figures-derivations",
    ),
    Setting(
        "figures",
        "coincidence",
        env.OTEL_SHAPECHECK_FIGURES_COINCIDENCE,
        0.05,
        PROBABILITY,
        "the coincidence bound of the extended derivations",
        flag="--figures-coincidence",
    ),
)
"""``FiguresCheck``'s settings."""

SETTINGS: tuple[Setting, ...] = PROCESSOR + GATEWAY + EVENTS + TOOL_CHOICE + EMBEDDING + FIGURES
"""Every setting, once."""


def by_name(settings: tuple[Setting, ...], name: str) -> Setting:
    """The setting called ``name`` among ``settings``."""
    for setting in settings:
        if setting.name == name:
            return setting
    raise KeyError(name)

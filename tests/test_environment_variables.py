"""Every OTEL_SHAPECHECK_* variable, one row per setting of the table: unset → the default, a good value
applies, a bad one warns once and the default applies; renamed variables still work, with a warning."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import logging
from collections.abc import Callable
from pathlib import Path

import pytest
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter

from otel_shapecheck import _settings
from otel_shapecheck import environment_variables as env
from otel_shapecheck._settings_table import (
    BOOLEAN,
    EMBEDDING,
    FILE_OR_OFF,
    GATEWAY,
    NAMES,
    NUMBER,
    PROBABILITY,
    PROCESSOR,
    SETTINGS,
    Choice,
    Setting,
    Whole,
    by_name,
)
from otel_shapecheck.checks.figures._check import FiguresCheck
from otel_shapecheck.checks.tool_choice._check import ToolChoiceCheck
from otel_shapecheck.checks.tool_choice._scoring import CALIBRATED_MARGIN_THRESHOLD
from otel_shapecheck.embedding._cache import EmbeddingCache
from otel_shapecheck.embedding._embedders import HashingEmbedder, MiniLMEmbedder
from otel_shapecheck.embedding._store import default_store_path
from otel_shapecheck.gateway._options import GatewayOptions
from otel_shapecheck.gateway._spool import spool_flush_seconds
from otel_shapecheck.outputs._events import EvaluationEventEmitter
from otel_shapecheck.pipeline._options import ProcessorOptions


@pytest.fixture(autouse=True)
def _forget_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bad (variable, value) pair is logged once per process: start every test with none logged."""
    monkeypatch.setattr(_settings, "_warned", set())


def _event(name: str) -> Callable[[], object]:
    def read() -> object:
        emitter = EvaluationEventEmitter(InMemoryLogRecordExporter())
        try:
            return getattr(emitter, name)
        finally:
            emitter.shutdown()

    return read


COMPONENT_READERS: dict[str, Callable[[str], Callable[[], object]]] = {
    "processor": lambda name: lambda: getattr(ProcessorOptions(), name),
    "gateway": lambda name: lambda: getattr(GatewayOptions(), name),
    "events": _event,
    "tool_choice": lambda name: lambda: getattr(ToolChoiceCheck(HashingEmbedder()), name),
    "figures": lambda name: lambda: getattr(FiguresCheck(), name),
}
"""How a component reads a setting called ``name``: its options object, or the built component."""

READERS: dict[str, Callable[[], object]] = {
    env.OTEL_SHAPECHECK_EMBEDDER_THREADS: lambda: MiniLMEmbedder().intra_op_num_threads,
    env.OTEL_SHAPECHECK_EMBEDDING_CACHE_ENTRIES: lambda: (
        EmbeddingCache(HashingEmbedder()).stats().max_entries
    ),
    env.OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH: lambda: EmbeddingCache(HashingEmbedder()).path,
    env.OTEL_SHAPECHECK_EMBEDDING_CACHE_MAX_FILE_BYTES: lambda: (
        EmbeddingCache(HashingEmbedder()).max_file_bytes
    ),
}
"""Settings whose component does not expose them under their argument name."""

READ_DEFAULTS: dict[str, object] = {env.OTEL_SHAPECHECK_MARGIN_THRESHOLD: CALIBRATED_MARGIN_THRESHOLD}
"""Settings whose default the component decides (the calibrated scoring's threshold)."""


def _read(setting: Setting) -> Callable[[], object]:
    if setting.variable in READERS:
        return READERS[setting.variable]
    return COMPONENT_READERS[setting.component](setting.name)


def _default(setting: Setting) -> object:
    if setting.variable == env.OTEL_SHAPECHECK_EMBEDDING_CACHE_PATH:
        return default_store_path()  # under the session's own XDG_CACHE_HOME
    return READ_DEFAULTS.get(setting.variable, setting.default)


def _good(setting: Setting) -> tuple[str, object]:
    """A valid value of the setting's kind, and what it reads as."""
    kind = setting.kind
    if isinstance(kind, Whole):
        return str(kind.minimum + 6), kind.minimum + 6
    if isinstance(kind, Choice):
        other = next(value for value in kind.allowed if value != setting.default)
        return other.upper(), other
    if kind is BOOLEAN:
        return ("FALSE", False) if setting.default else ("True", True)
    if kind is NUMBER:
        return "0.02", 0.02
    if kind is PROBABILITY:
        return "0.05", 0.05
    if kind is NAMES:
        return "submit, Report*", ("submit", "Report*")
    if kind is FILE_OR_OFF:
        return "/var/cache/shapecheck/vectors.sqlite", Path("/var/cache/shapecheck/vectors.sqlite")
    raise AssertionError(f"no good value for the kind of {setting.variable}")


def _bad(setting: Setting) -> list[str]:
    """Values of the wrong kind or out of range."""
    kind = setting.kind
    if isinstance(kind, Whole):
        return ["soon", str(kind.minimum - 1), "1.5", "1e3"]
    if isinstance(kind, Choice):
        return ["everything"]
    if kind is BOOLEAN:
        return ["yes", "1"]
    if kind is NUMBER:
        return ["nan", "-1", "wide"]
    if kind is PROBABILITY:
        return ["1.5", "-0.1", "p"]
    if kind is NAMES:
        return ["a,,b", ","]
    if kind is FILE_OR_OFF:
        return ["vectors.sqlite", "./cache/vectors.sqlite"]
    raise AssertionError(f"no bad value for the kind of {setting.variable}")


def _bad_argument(setting: Setting) -> object:
    """An explicit argument the setting refuses."""
    if setting.kind is NAMES:
        return ["submit", ""]
    if isinstance(setting.kind, Whole):
        return setting.kind.minimum - 1
    return "yes" if setting.kind is BOOLEAN else "nope"


BAD = [(setting, bad) for setting in SETTINGS for bad in _bad(setting)]


def test_every_constant_is_a_setting_of_the_table() -> None:
    """otel_shapecheck.environment_variables holds the table's variables and its deprecated names, only."""
    defined = {value for name, value in vars(env).items() if name.startswith("OTEL_SHAPECHECK_")}
    renamed = {setting.renamed_from for setting in SETTINGS if setting.renamed_from}
    assert defined == {setting.variable for setting in SETTINGS} | renamed
    assert len(SETTINGS) == len({setting.variable for setting in SETTINGS})


def test_every_constant_is_documented_with_its_default() -> None:
    """Each constant is followed by an ``.. envvar::`` docstring that states the table's default."""
    tree = ast.parse(Path(inspect.getfile(env)).read_text(encoding="utf-8"))
    docs: dict[str, str] = {}
    for statement, following in zip(tree.body, tree.body[1:], strict=False):
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            assert isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
            docs[statement.target.id] = " ".join(str(following.value.value).split()).replace("``", "")
    for setting in SETTINGS:
        text = docs[setting.variable]
        assert f".. envvar:: {setting.variable}" in text
        if setting.default is not None:
            assert setting.default_text in text, (setting.variable, text)


@pytest.mark.parametrize(
    ("options", "settings"),
    [(ProcessorOptions, PROCESSOR), (GatewayOptions, GATEWAY)],
    ids=["processor", "gateway"],
)
def test_the_options_objects_have_exactly_the_table_fields(
    options: type, settings: tuple[Setting, ...]
) -> None:
    """ProcessorOptions and GatewayOptions: one field and one keyword argument per row, in order."""
    names = [setting.name for setting in settings]
    assert [field.name for field in dataclasses.fields(options)] == names
    assert list(inspect.signature(options).parameters) == names


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.variable)
class TestVariable:
    def test_unset_reads_the_default(self, setting: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the variable, the setting is its documented default."""
        monkeypatch.delenv(setting.variable, raising=False)
        assert _read(setting)() == _default(setting)

    def test_good_value_applies(self, setting: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
        """A valid value is read (enums case-insensitively)."""
        raw, reads_as = _good(setting)
        monkeypatch.setenv(setting.variable, raw)
        assert _read(setting)() == reads_as

    def test_bad_explicit_argument_raises_naming_it(self, setting: Setting) -> None:
        """A bad argument is a programming error: ValueError naming the argument."""
        with pytest.raises(ValueError, match=setting.name):
            setting.resolve(_bad_argument(setting))


@pytest.mark.parametrize(("setting", "bad"), BAD, ids=[f"{setting.variable}={bad}" for setting, bad in BAD])
def test_bad_value_warns_once_and_the_default_applies(
    setting: Setting, bad: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A bad value never raises: one warning names the variable and the value, the default applies."""
    monkeypatch.setenv(setting.variable, bad)
    read = _read(setting)
    with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
        assert read() == _default(setting)
        assert read() == _default(setting)
    warnings = [record.getMessage() for record in caplog.records if setting.variable in record.getMessage()]
    assert len(warnings) == 1
    assert repr(bad) in warnings[0]


RENAMED = [setting for setting in SETTINGS if setting.renamed_from]


def test_three_variables_were_renamed_to_milliseconds() -> None:
    """The gateway's ..._SECONDS variables became ..._MILLIS ones."""
    assert {setting.renamed_from for setting in RENAMED} == {
        env.OTEL_SHAPECHECK_GATEWAY_RETRY_AFTER_SECONDS,
        env.OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_SECONDS,
        env.OTEL_SHAPECHECK_GATEWAY_SHUTDOWN_TIMEOUT_SECONDS,
    }


@pytest.mark.parametrize("setting", RENAMED, ids=lambda setting: str(setting.renamed_from))
class TestRenamedVariable:
    def test_the_old_name_reads_seconds_and_warns_once(
        self, setting: Setting, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The deprecated variable still applies, as seconds, and one warning names the new variable."""
        assert setting.renamed_from is not None
        monkeypatch.delenv(setting.variable, raising=False)
        monkeypatch.setenv(setting.renamed_from, "2.5")
        with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
            assert _read(setting)() == 2500
            assert _read(setting)() == 2500
        warnings = [
            record.getMessage() for record in caplog.records if setting.renamed_from in record.getMessage()
        ]
        assert len(warnings) == 1
        assert "deprecated" in warnings[0] and setting.variable in warnings[0]

    def test_the_new_name_wins(self, setting: Setting, monkeypatch: pytest.MonkeyPatch) -> None:
        """With both set, the new variable applies."""
        assert setting.renamed_from is not None
        monkeypatch.setenv(setting.renamed_from, "2.5")
        monkeypatch.setenv(setting.variable, "7")
        assert _read(setting)() == 7

    def test_a_bad_old_value_warns_and_the_default_applies(
        self, setting: Setting, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A bad value of the old name is treated like a bad variable."""
        assert setting.renamed_from is not None
        monkeypatch.delenv(setting.variable, raising=False)
        monkeypatch.setenv(setting.renamed_from, "soon")
        with caplog.at_level(logging.WARNING, logger="otel_shapecheck"):
            assert _read(setting)() == setting.default
        assert any("'soon'" in record.getMessage() for record in caplog.records)


def test_the_durable_spool_reads_its_flush_interval_in_milliseconds(monkeypatch: pytest.MonkeyPatch) -> None:
    """SqliteSpool's flush_seconds default comes from OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS."""
    monkeypatch.setenv(env.OTEL_SHAPECHECK_GATEWAY_SPOOL_FLUSH_MILLIS, "400")
    assert spool_flush_seconds() == 0.4
    assert spool_flush_seconds(1.5) == 1.5


def test_the_gateway_spool_default_depends_on_where_it_lives(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset, the spool holds 1 GiB on disk and 128 MiB in memory; set, the variable applies to both."""
    monkeypatch.delenv(env.OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES, raising=False)
    assert GatewayOptions().spool_bytes(durable=True) == 1024**3
    assert GatewayOptions().spool_bytes(durable=False) == 128 * 1024**2
    monkeypatch.setenv(env.OTEL_SHAPECHECK_GATEWAY_SPOOL_MAX_BYTES, "65536")
    assert GatewayOptions().spool_bytes(durable=False) == 65536


def test_the_table_choices_are_the_components_choices() -> None:
    """The values a choice setting takes in the table are the ones its component accepts."""
    from otel_shapecheck.checks.figures._findings import DERIVATION_SETS
    from otel_shapecheck.checks.tool_choice._scoring import SCORINGS

    components = {
        env.OTEL_SHAPECHECK_FIGURES_DERIVATIONS: DERIVATION_SETS,
        env.OTEL_SHAPECHECK_TOOL_CHOICE_SCORING: SCORINGS,
    }
    choices = {setting.variable: setting.kind for setting in SETTINGS if isinstance(setting.kind, Choice)}
    assert set(choices) == set(components) | {env.OTEL_SHAPECHECK_EVENTS_FORWARD}
    del choices[env.OTEL_SHAPECHECK_EVENTS_FORWARD]  # the emitter resolves it through the table
    for variable, kind in choices.items():
        assert isinstance(kind, Choice) and set(kind.allowed) == set(components[variable]), variable


def test_a_default_the_component_computes_is_supplied_at_resolution(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache file's row leaves its default to the component: unset, the computed one applies; the
    variable and an explicit argument still win, and a tabled default cannot be overridden."""
    row = by_name(EMBEDDING, "path")
    computed = Path("/var/cache/computed/embeddings.sqlite")
    monkeypatch.delenv(row.variable, raising=False)
    assert row.resolve(None, default=computed) == computed
    assert row.resolve("/srv/vectors.sqlite", default=computed) == Path("/srv/vectors.sqlite")
    monkeypatch.setenv(row.variable, "none")
    assert row.resolve(None, default=computed) is None
    with pytest.raises(AssertionError, match="tabled default"):
        by_name(EMBEDDING, "max_entries").resolve(None, default=5)

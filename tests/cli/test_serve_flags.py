"""serve's setting flags come from the settings table: each names its unit, stores the setting's unit."""

from __future__ import annotations

import argparse

import pytest

from otel_shapecheck._settings_table import GATEWAY, SETTINGS, Setting
from otel_shapecheck.cli._main import _parser
from otel_shapecheck.cli._setting_flags import setting_arguments
from otel_shapecheck.gateway._options import GatewayOptions

UNITS = ("-seconds", "-millis", "-bytes", "-size")


def _serve(*flags: str) -> argparse.Namespace:
    return _parser().parse_args(["serve", "--forward", "127.0.0.1:4317", *flags])


def _help(command: str) -> str:
    subparsers = next(
        action for action in _parser()._actions if isinstance(action, argparse._SubParsersAction)
    )
    return str(subparsers.choices[command].format_help())


@pytest.mark.parametrize("setting", [s for s in SETTINGS if s.flag], ids=lambda setting: str(setting.flag))
def test_every_table_flag_is_a_flag_of_serve(setting: Setting) -> None:
    """serve offers each flag of the table (the figures and embedding cache ones on check too)."""
    assert f"{setting.flag} " in _help("serve")
    if setting.component in ("figures", "embedding"):
        assert f"{setting.flag} " in _help("check")


def test_every_duration_and_size_flag_names_its_unit() -> None:
    """A flag of a duration or a bound says seconds, millis, bytes or size."""
    for setting in GATEWAY:
        assert setting.flag is not None and setting.flag.endswith(UNITS), setting.flag


def test_seconds_flags_store_milliseconds_and_reach_the_gateway_options() -> None:
    """--retry-after-seconds 0.25 is retry_after_millis=250; a flag left out leaves it to its variable."""
    arguments = _serve(
        "--retry-after-seconds", "0.25", "--spool-flush-seconds", "2", "--shutdown-timeout-seconds", "3.5"
    )
    options = GatewayOptions(**setting_arguments(arguments, GATEWAY))
    assert (options.retry_after_millis, options.spool_flush_millis, options.shutdown_timeout_millis) == (
        250,
        2000,
        3500,
    )
    assert setting_arguments(_serve(), GATEWAY) == {setting.name: None for setting in GATEWAY}


def test_the_old_shutdown_flag_still_works_hidden_and_says_it_is_deprecated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--shutdown-timeout SECONDS is --shutdown-timeout-seconds: same value, a notice, not in --help."""
    assert _serve("--shutdown-timeout", "2").shutdown_timeout_millis == 2000
    assert "--shutdown-timeout is deprecated; use --shutdown-timeout-seconds" in capsys.readouterr().err
    assert "--shutdown-timeout " not in _help("serve")
    assert "--shutdown-timeout-seconds SECONDS" in _help("serve")


@pytest.mark.parametrize(
    "flags",
    [
        ("--shutdown-timeout-seconds", "-1"),
        ("--retry-after-seconds", "soon"),
        ("--max-queue-size", "0"),
        ("--max-wait-millis", "1.5"),
        ("--spool-max-bytes", "1GB"),
    ],
)
def test_a_bad_value_is_a_usage_error(flags: tuple[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    """argparse refuses it at the boundary, naming the flag (exit 2)."""
    with pytest.raises(SystemExit) as exited:
        _serve(*flags)
    assert exited.value.code == 2
    assert flags[0] in capsys.readouterr().err

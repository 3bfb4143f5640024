"""Command-line flags built from the settings table, each checked by argparse at the boundary.

A setting's flag reads its value in the unit the flag names (``--retry-after-seconds`` reads seconds for
the millisecond setting ``retry_after_millis``) and stores it in the setting's own unit under the
setting's name, so :func:`setting_arguments` hands the parsed flags to ``GatewayOptions`` as they are.
Left out, a flag stores ``None`` and the setting's variable or default applies.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any

from otel_shapecheck._settings_table import Setting, Whole


def whole(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number ≥ ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r} must be ≥ {minimum}")
        return value

    return parse


def seconds(*, positive: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds ≥ 0 (> 0 when ``positive``)."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
        if not math.isfinite(value) or value < 0 or (positive and value == 0):
            raise argparse.ArgumentTypeError(f"{text!r} must be a finite number {'>' if positive else '≥'} 0")
        return value

    return parse


def _seconds_as_millis(minimum: int) -> Callable[[str], int]:
    read = seconds(positive=minimum > 0)

    def parse(text: str) -> int:
        return round(read(text) * 1000)

    return parse


def _flag_type(setting: Setting) -> Callable[[str], Any]:
    if not isinstance(setting.kind, Whole):
        raise TypeError(f"{setting.name}: only whole-number settings have derived flags")
    if setting.flag_in_seconds:
        return _seconds_as_millis(setting.kind.minimum)
    return whole(setting.kind.minimum)


class _Deprecated(argparse.Action):
    """A deprecated spelling of a flag: works, says once on stderr which spelling replaces it."""

    def __init__(self, *args: Any, replacement: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._replacement = replacement

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        print(
            f"{parser.prog}: {option_string} is deprecated; use {self._replacement}",
            file=sys.stderr,
        )
        setattr(namespace, self.dest, values)


def add_setting_flag(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup, setting: Setting, *, help: str | None = None
) -> None:
    """Add ``setting``'s flag (and its hidden deprecated spellings), stored under ``setting.name``."""
    if setting.flag is None:
        raise ValueError(f"{setting.name} has no flag")
    parse = _flag_type(setting)
    metavar = "SECONDS" if setting.flag_in_seconds else "N"
    text = help if help is not None else setting.doc
    parser.add_argument(
        setting.flag,
        dest=setting.name,
        type=parse,
        metavar=metavar,
        help=f"{text} ({_shown_default(setting)})",
    )
    for old in setting.old_flags:
        parser.add_argument(
            old,
            dest=setting.name,
            type=parse,
            action=_Deprecated,
            replacement=setting.flag,
            help=argparse.SUPPRESS,
        )


def setting_arguments(args: argparse.Namespace, settings: Sequence[Setting]) -> dict[str, Any]:
    """The parsed flags of ``settings`` that have one, by setting name (``None`` where left out)."""
    return {setting.name: getattr(args, setting.name) for setting in settings if setting.flag is not None}


def _shown_default(setting: Setting) -> str:
    if setting.flag_in_seconds and isinstance(setting.default, int):
        return f"{setting.default / 1000:g}"
    return setting.default_text

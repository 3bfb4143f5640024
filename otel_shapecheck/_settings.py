"""Resolving one setting: an explicit argument, else its ``OTEL_SHAPECHECK_*`` variable, else the default.

The rule is the OpenTelemetry SDK's: a bad explicit argument is a programming error and raises
``ValueError`` naming the argument, while a bad environment value logs a warning naming the variable and
the value and the default applies (``BatchSpanProcessor`` does the same with ``OTEL_BSP_*``), so a typo in
one variable cannot stop an application at start-up. Each bad (variable, value) pair is logged once.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

logger = logging.getLogger(__name__)

_T = TypeVar("_T", int, float, str, bool)

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()

_TRUE = ("true",)
_BOOLEANS = ("true", "false")


def _environment_value(env_var: str | None) -> str | None:
    if env_var is None:
        return None
    raw = os.environ.get(env_var, "").strip()
    return raw or None


def unset(env_var: str) -> bool:
    """Whether ``env_var`` is unset or blank."""
    return _environment_value(env_var) is None


def _warn_bad_variable(env_var: str, raw: str, requirement: str, default: object) -> None:
    with _warned_lock:
        if (env_var, raw) in _warned:
            return
        _warned.add((env_var, raw))
    logger.warning(
        "Invalid value %r for %s: it must be %s; using the default %r", raw, env_var, requirement, default
    )


def _resolve(
    name: str,
    explicit: _T | None,
    env_var: str | None,
    default: _T,
    parse: Callable[[str], _T],
    valid: Callable[[_T], bool],
    requirement: str,
) -> _T:
    if explicit is not None:
        if not valid(explicit):
            raise ValueError(f"{name}={explicit!r} is not a valid value: {name} must be {requirement}")
        return explicit
    raw = _environment_value(env_var)
    if raw is None or env_var is None:
        return default
    try:
        value = parse(raw)
    except ValueError:
        value = None
    if value is None or not valid(value):
        _warn_bad_variable(env_var, raw, requirement, default)
        return default
    return value


def _is_whole(value: object, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def positive_int(name: str, explicit: int | None, env_var: str | None, default: int) -> int:
    """A whole-number setting that must be ≥ 1."""
    return whole(name, explicit, env_var, default, 1)


def whole(name: str, explicit: int | None, env_var: str | None, default: int, minimum: int) -> int:
    """A whole-number setting that must be ≥ ``minimum``."""
    return _resolve(
        name,
        explicit,
        env_var,
        default,
        int,
        lambda v: _is_whole(v, minimum),
        f"a whole number ≥ {minimum}",
    )


def renamed_seconds(name: str, old_var: str, new_var: str, default: int, minimum: int) -> int | None:
    """A millisecond setting read from its deprecated ``..._SECONDS`` variable, or ``None`` if unset.

    The old variable still works (a number of seconds, converted to whole milliseconds); reading it logs
    one warning naming the new variable. A bad old value warns like a bad variable and the default applies.
    """
    raw = _environment_value(old_var)
    if raw is None:
        return None
    with _warned_lock:
        first = (old_var, "") not in _warned
        _warned.add((old_var, ""))
    if first:
        logger.warning(
            "%s is deprecated: set %s (milliseconds) instead; reading %r as seconds", old_var, new_var, raw
        )

    def parse(text: str) -> int:
        seconds = float(text)
        if not math.isfinite(seconds):
            raise ValueError(text)
        return round(seconds * 1000)

    return _resolve(
        name,
        None,
        old_var,
        default,
        parse,
        lambda v: _is_whole(v, minimum),
        f"a finite number of seconds ≥ {minimum / 1000:g}",
    )


def non_negative_float(name: str, explicit: float | None, env_var: str | None, default: float) -> float:
    """A finite number setting that must be ≥ 0."""
    return _resolve(
        name,
        explicit,
        env_var,
        default,
        float,
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
        "a finite number ≥ 0",
    )


def probability(name: str, explicit: float | None, env_var: str | None, default: float) -> float:
    """A number setting that must lie in [0, 1]."""
    return _resolve(
        name,
        explicit,
        env_var,
        default,
        float,
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1,
        "a number in [0, 1]",
    )


def choice(
    name: str, explicit: str | None, env_var: str | None, default: str, allowed: tuple[str, ...]
) -> str:
    """A string setting restricted to ``allowed`` (compared case-insensitively); returned in lower case."""
    if explicit is not None and not isinstance(explicit, str):
        raise ValueError(
            f"{name}={explicit!r} is not a valid value: {name} must be one of {', '.join(allowed)}"
        )
    return _resolve(
        name,
        explicit.strip().lower() if explicit is not None else None,
        env_var,
        default,
        lambda raw: raw.lower(),
        lambda v: v in allowed,
        f"one of {', '.join(allowed)}",
    )


def boolean(name: str, explicit: bool | None, env_var: str | None, default: bool) -> bool:
    """A true/false setting; the variable reads ``true`` or ``false`` (any case)."""
    if explicit is not None and not isinstance(explicit, bool):
        raise ValueError(f"{name}={explicit!r} is not a valid value: {name} must be a bool")
    raw = _environment_value(env_var) if explicit is None else None
    if raw is None or env_var is None:
        return default if explicit is None else explicit
    if raw.lower() not in _BOOLEANS:
        _warn_bad_variable(env_var, raw, "true or false", default)
        return default
    return raw.lower() in _TRUE


def names(
    name: str, explicit: Sequence[str] | None, env_var: str | None, default: tuple[str, ...]
) -> tuple[str, ...]:
    """A list of names; the variable reads them comma-separated (``final_answer,final_result*``).

    An explicit argument must be a sequence of non-empty strings (an empty one turns the setting off); a
    variable with no name in it, or a name with a comma-less blank, is bad.
    """
    if explicit is not None:
        if isinstance(explicit, str) or not all(isinstance(item, str) and item.strip() for item in explicit):
            raise ValueError(
                f"{name}={explicit!r} is not a valid value: {name} must be a sequence of non-empty names"
            )
        return tuple(item.strip() for item in explicit)
    raw = _environment_value(env_var)
    if raw is None or env_var is None:
        return default
    items = [item.strip() for item in raw.split(",")]
    if not all(items):
        _warn_bad_variable(env_var, raw, "comma-separated non-empty names", ",".join(default))
        return default
    return tuple(items)


OFF = ("none", "")
"""Values of a path setting that turn its file off."""


def path_or_off(name: str, explicit: object, env_var: str | None, default: Path | None) -> Path | None:
    """A file setting: an absolute path (a leading ``~`` expanded), or ``none`` for no file (``None``).

    An explicit ``""`` also turns the file off; a blank variable is unset, as every variable is.
    """
    requirement = "an absolute path or none"
    if explicit is not None:
        if not isinstance(explicit, str | os.PathLike) or isinstance(explicit, bytes):
            raise ValueError(f"{name}={explicit!r} is not a valid value: {name} must be {requirement}")
        text = os.fspath(explicit)
        if not isinstance(text, str):
            raise ValueError(f"{name}={explicit!r} is not a valid value: {name} must be {requirement}")
        if text.strip().lower() in OFF:
            return None
        path = Path(text).expanduser()
        if not path.is_absolute():
            raise ValueError(f"{name}={explicit!r} is not a valid value: {name} must be {requirement}")
        return path
    raw = _environment_value(env_var)
    if raw is None or env_var is None:
        return default
    if raw.lower() in OFF:
        return None
    path = Path(raw).expanduser()
    if not path.is_absolute():
        _warn_bad_variable(env_var, raw, requirement, str(default) if default is not None else "none")
        return default
    return path

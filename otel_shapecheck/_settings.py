"""Configuration values: an explicit argument, else an ``OTEL_SHAPECHECK_*`` variable, else the default.

A bad explicit argument raises ``ValueError`` at construction, naming the setting; a bad environment
value also raises ``ValueError`` naming the variable, so a misconfigured deployment fails at start-up
instead of silently running with a setting nobody asked for.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T", int, float)


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
        value = explicit
        source = name
    elif env_var is not None and os.environ.get(env_var, "").strip():
        raw = os.environ[env_var].strip()
        source = env_var
        try:
            value = parse(raw)
        except ValueError:
            raise ValueError(
                f"{env_var}={raw!r} is not a valid value: {name} must be {requirement}"
            ) from None
    else:
        return default
    if isinstance(value, bool) or not valid(value):
        raise ValueError(f"{source}={value!r} is not a valid value: {name} must be {requirement}")
    return value


def positive_int(name: str, explicit: int | None, env_var: str | None, default: int) -> int:
    """An integer setting that must be ≥ 1."""
    return _resolve(
        name,
        explicit,
        env_var,
        default,
        int,
        lambda v: isinstance(v, int) and v >= 1,
        "a whole number ≥ 1",
    )


def non_negative_float(name: str, explicit: float | None, env_var: str | None, default: float) -> float:
    """A finite float setting that must be ≥ 0."""
    return _resolve(
        name,
        explicit,
        env_var,
        default,
        float,
        lambda v: isinstance(v, (int, float)) and math.isfinite(v) and v >= 0,
        "a finite number ≥ 0",
    )


def choice(
    name: str, explicit: str | None, env_var: str | None, default: str, allowed: tuple[str, ...]
) -> str:
    """A string setting restricted to ``allowed`` (compared case-insensitively)."""
    if explicit is not None:
        value, source = explicit, name
    elif env_var is not None and os.environ.get(env_var, "").strip():
        value, source = os.environ[env_var].strip(), env_var
    else:
        return default
    if value.lower() not in allowed:
        raise ValueError(
            f"{source}={value!r} is not a valid value: {name} must be one of {', '.join(allowed)}"
        )
    return value.lower()

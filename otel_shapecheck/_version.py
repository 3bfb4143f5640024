"""The package version (``pyproject.toml`` reads it from here, so it is written once)."""

from __future__ import annotations

__version__ = "0.2.0"

"""The package version, read from its installed metadata."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("otel-shapecheck")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"

"""``python -m otel_shapecheck``: the ``otel-shapecheck`` command."""

from __future__ import annotations

import sys

from otel_shapecheck.cli._main import main

if __name__ == "__main__":
    sys.exit(main())

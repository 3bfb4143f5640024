"""The ``otel-shapecheck`` command line: ``check``, ``lint-tools``, ``serve``, ``demo`` and their output.

Nothing here is API: import from ``otel_shapecheck``.
"""

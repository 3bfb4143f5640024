"""The three checks, as plain functions and classes over the plain model (no OpenTelemetry types):
tool choice, figures and conformance, with the ``Check``/``Subject``/``Verdict`` protocol they share.

Nothing here is API: import from ``otel_shapecheck``.
"""

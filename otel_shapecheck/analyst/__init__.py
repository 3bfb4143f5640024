"""Application-side helpers for structured-output analysts: the protocol, the shape-collapse retry
wrapper and row validation.

Nothing here is API: import from ``otel_shapecheck``.
"""

"""Conformance: the record of a structured-output analyst's attempts, and the check that reads it.

Nothing here is API: import from ``otel_shapecheck``.
"""

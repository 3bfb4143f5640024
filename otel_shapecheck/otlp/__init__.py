"""OTLP I/O: exported files into SDK telemetry and back, the one id codec, JSON Lines exporters, and the
one endpoint rule with the exporter factory every entry point uses.

Nothing here is API: import from ``otel_shapecheck``.
"""

"""The demo: a scripted agent against a scripted OpenAI-compatible server on loopback.

Nothing here is API: import from ``otel_shapecheck``.
"""

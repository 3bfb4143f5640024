"""Conventions into the plain model: classify a span once, then read it with the reader of its convention
(OTel GenAI spans and events, OpenLLMetry, OpenInference). Readers never raise.

Nothing here is API: import from ``otel_shapecheck``.
"""

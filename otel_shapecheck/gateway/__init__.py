"""The OTLP gateway (``otel-shapecheck serve``): admission, decoding, the gRPC and HTTP listeners.

Nothing here is API: import from ``otel_shapecheck``.
"""

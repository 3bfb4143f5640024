"""The tool-catalog lint: confusable pairs and descriptions that cannot help a model choose.

Nothing here is API: import from ``otel_shapecheck``.
"""

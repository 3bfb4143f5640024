"""Tool choice: choice-context margins over embedded tool texts, the embedders, their cache, the tool index.

Nothing here is API: import from ``otel_shapecheck``.
"""

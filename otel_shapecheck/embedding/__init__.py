"""Embeddings: embedders, the MiniLM runner and its buckets, the cache, tool texts, their index, neighbours.

Used by the tool-choice check and the catalog lint alike, and importing neither.

Nothing here is API: import from ``otel_shapecheck``.
"""

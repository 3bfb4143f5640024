"""Figures: the numbers of an answer, the basis of carried numbers and derivations, and the check.

Nothing here is API: import from ``otel_shapecheck``.
"""

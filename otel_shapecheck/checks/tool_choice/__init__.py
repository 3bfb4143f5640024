"""Tool choice: how clearly a choice context favours the chosen tools, scored over embedded tool texts.

The check, its menu plans, the seed and calibrated scorings (small menus from cached matrices, large
menus by one bounded scan), the lexical score and the recorded calls. The embedders, their cache and the
tool index it scores with live in ``otel_shapecheck.embedding``.

Nothing here is API: import from ``otel_shapecheck``.
"""

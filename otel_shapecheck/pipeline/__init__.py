"""The in-process engine: span and log processors, the ledger of held spans and facts, the evaluation
worker, run tallies, counters and verdict metrics, ``configure()`` and the offline replay ``check`` uses.
What it hands out (enriched copies, sinks, evaluation events) lives in ``outputs/``.

Nothing here is API: import from ``otel_shapecheck``.
"""

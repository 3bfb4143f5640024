"""The in-process engine: span and log processors, the ledger of held spans and facts, the evaluation
worker, enriched copies, verdict sinks, counters, ``configure()`` and the offline replay ``check`` uses.

Nothing here is API: import from ``otel_shapecheck``.
"""

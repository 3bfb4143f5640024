"""What the pipeline hands out: enriched, duplicate and run copies of spans, the verdict-free view of
an export, verdict sinks, the evaluation events and their exporter, and the bounded calls into the
downstream code (processors, exporters) that receives them.

Nothing here is API: import from ``otel_shapecheck``.
"""

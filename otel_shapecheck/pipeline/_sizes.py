"""An estimate of the memory a fact holds (a span or a log record the ledger keeps), for byte budgets.

Counts the characters of attribute keys and string values (and of a log record's body), walking at most
:data:`MAX_NODES` values, so a tool span with a 3 MB result weighs about 3 MB and the estimate costs
little next to reading the same span. It is an estimate, not ``sys.getsizeof``: Python objects cost more
than their text, by a roughly constant factor that a byte budget absorbs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_NODES = 2000
_FIXED_COST = 256
"""What an item costs besides its text (the objects themselves)."""


def fact_bytes(item: object) -> int:
    """About how many bytes ``item`` (a ``ReadableSpan`` or an API ``LogRecord``) keeps alive."""
    attributes = getattr(item, "attributes", None)
    total = _FIXED_COST + _weigh(attributes)
    body = getattr(item, "body", None)
    if body is not None:
        total += _weigh(body)
    return total


def _weigh(value: Any) -> int:
    total = 0
    stack = [value]
    nodes = 0
    while stack and nodes < MAX_NODES:
        node = stack.pop()
        nodes += 1
        if isinstance(node, str | bytes):
            total += len(node)
        elif isinstance(node, Mapping):
            for key, child in node.items():
                total += len(key) if isinstance(key, str) else 8
                stack.append(child)
        elif isinstance(node, list | tuple):
            stack.extend(node)
        else:
            total += 8
    return total

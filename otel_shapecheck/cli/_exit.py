"""Exit codes of the ``otel-shapecheck`` commands and the usage error every command raises."""

from __future__ import annotations

EXIT_OK = 0
"""Done (and, under ``check --fail-on flagged``, nothing flagged)."""
EXIT_FLAGGED = 1
"""``check --fail-on flagged`` found a flag; ``demo`` could not deliver to its endpoint."""
EXIT_USAGE = 2
"""A usage error or unreadable input; the message names the input and the problem."""
EXIT_INTERNAL_ERROR = 3
"""A bug: the traceback goes to stderr."""


class UsageError(Exception):
    """A problem with the command line or its inputs; reported on stderr with exit code 2."""

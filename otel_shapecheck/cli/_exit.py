"""Exit codes of the ``otel-shapecheck`` commands and the usage error every command raises."""

from __future__ import annotations

EXIT_OK = 0
"""Done (and, under ``check --fail-on flagged``, nothing flagged; under ``unchecked``, every run read)."""
EXIT_FLAGGED = 1
"""``check --fail-on flagged`` found a flag, ``--fail-on unchecked`` a run with coverage ``none``;
``demo`` could not deliver to its endpoint."""
EXIT_USAGE = 2
"""A usage error or unreadable input; the message names the input and the problem."""
EXIT_INTERNAL_ERROR = 3
"""A bug: the traceback goes to stderr (``serve``: items unaccounted for at the stop)."""
EXIT_LEFT_IN_SPOOL = 4
"""``serve`` stopped before forwarding everything: the rest is in the durable spool for the next start."""
EXIT_LOST = 5
"""``serve`` stopped with items it could not forward and cannot keep (``--no-spool``, or given up after
``--give-up-after-seconds``): the summary says how many."""


class UsageError(Exception):
    """A problem with the command line or its inputs; reported on stderr with exit code 2."""

"""The ``otel-shapecheck`` command: ``check`` exported traces offline, ``demo``, ``lint-tools``, ``serve``.

Exit codes: 0 done (and, under ``--fail-on flagged``, nothing flagged), 1 something flagged under
``--fail-on flagged``, 2 a usage error or unreadable input (the message names the input and the problem),
3 an internal error (a bug: the traceback goes to stderr).
"""

from __future__ import annotations

import argparse
import sys
import traceback

from otel_shapecheck._version import __version__
from otel_shapecheck.cli import _check, _demo_command, _lint, _serve
from otel_shapecheck.cli._exit import EXIT_INTERNAL_ERROR, EXIT_USAGE, UsageError
from otel_shapecheck.otlp._errors import UnreadableTraceFile

_PROG = "otel-shapecheck"


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit code."""
    parser = _parser()
    try:
        arguments = parser.parse_args(argv)
    except SystemExit as exit_request:  # argparse exits on --help, --version and usage errors
        return exit_request.code if isinstance(exit_request.code, int) else EXIT_USAGE
    try:
        code: int = arguments.run(arguments)
    except (UsageError, UnreadableTraceFile) as error:
        print(f"{_PROG} {arguments.command}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # a crash must not read as "flagged" (1) to a CI job
        traceback.print_exc()
        print(f"{_PROG} {arguments.command}: internal error (exit {EXIT_INTERNAL_ERROR})", file=sys.stderr)
        return EXIT_INTERNAL_ERROR
    return code


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=_PROG,
        description="Judge-free checks of LLM agent runs from their OpenTelemetry GenAI telemetry.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _check.register(subparsers)
    _demo_command.register(subparsers)
    _lint.register(subparsers)
    _serve.register(subparsers)
    return parser

"""The figures flags ``check`` and ``serve`` share: which derivations support a figure, and the bound."""

from __future__ import annotations

import argparse
import math

from otel_shapecheck.checks.figures._findings import DERIVATION_SETS


def add_figures_arguments(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--figures-derivations`` and ``--figures-coincidence`` (default: the variables, else built-in)."""
    parser.add_argument(
        "--figures-derivations",
        choices=DERIVATION_SETS,
        help="closed: the reference's derivations only; extended: also cell arithmetic below the "
        "coincidence bound (default: OTEL_SHAPECHECK_FIGURES_DERIVATIONS, else extended)",
    )
    parser.add_argument(
        "--figures-coincidence",
        type=float,
        metavar="P",
        help="infer a figure only when its coincidence chance is below P, in [0, 1] "
        "(default: OTEL_SHAPECHECK_FIGURES_COINCIDENCE, else 0.05)",
    )


def require_figures_arguments(arguments: argparse.Namespace) -> None:
    """Raise ``ValueError`` naming the flag when ``--figures-coincidence`` is not a number in [0, 1]."""
    p = arguments.figures_coincidence
    if p is not None and not (math.isfinite(p) and 0 <= p <= 1):
        raise ValueError(f"--figures-coincidence {p}: must be a number in [0, 1]")

"""Verdicts shaped like the built-in checks' output, for the export tests."""

from __future__ import annotations

from otel_shapecheck import _attributes as attrs
from otel_shapecheck.checks._base import Verdict


def figures_verdict(*, flagged: bool = True) -> Verdict:
    """A figures verdict; flagged ones carry an unsupported value quoted from the answer."""
    return Verdict(
        evaluation=attrs.EVALUATION_FIGURES,
        attributes={
            attrs.FIGURES_CHECKED: 3,
            attrs.FIGURES_CARRIED: 2 if flagged else 3,
            attrs.FIGURES_COMPUTED: 0,
            attrs.FIGURES_UNSUPPORTED: ("4200 TB",) if flagged else (),
            attrs.FIGURES_DERIVATIONS: ("1526.3 = column-sum: sum of rows[].usable_tb",),
            attrs.FIGURES_TRUNCATED: False,
        },
        label="unsupported" if flagged else "supported",
        explanation="1 of 3 figures is not carried by any tool result." if flagged else "All carried.",
        score=2 / 3 if flagged else 1.0,
        flags=(attrs.FLAG_FIGURES_UNSUPPORTED,) if flagged else (),
        response_id="chatcmpl-42",
        content_keys=frozenset({attrs.FIGURES_UNSUPPORTED, attrs.FIGURES_DERIVATIONS}),
    )


def tool_choice_verdict(*, flagged: bool = True) -> Verdict:
    """A tool-choice verdict, narrow when flagged."""
    return Verdict(
        evaluation=attrs.EVALUATION_TOOL_CHOICE,
        attributes={
            attrs.TOOL_CHOICE_OFFERED_COUNT: 4,
            attrs.TOOL_CHOICE_CHOSEN: ("get_weather",),
            attrs.TOOL_CHOICE_TOP: "get_weather",
            attrs.TOOL_CHOICE_MARGIN: 0.01 if flagged else 0.3,
            attrs.TOOL_CHOICE_NARROW: flagged,
            attrs.TOOL_CHOICE_PROXY_DISAGREEMENT: False,
            attrs.TOOL_CHOICE_EMBEDDER: "hashing-256",
        },
        label="narrow" if flagged else "clear",
        explanation="The chosen tool scored barely above the next one.",
        score=0.01 if flagged else 0.3,
        flags=(attrs.FLAG_TOOL_CHOICE_NARROW,) if flagged else (),
    )

"""Property tests: carried numbers are never flagged, perturbed ones are, and no input breaks the fold."""

from __future__ import annotations

import json
import math
import re
from decimal import ROUND_HALF_EVEN, Decimal

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from otel_shapecheck._model import JSONValue, ToolResult
from otel_shapecheck.checks.figures._basis import figure_basis
from otel_shapecheck.checks.figures._carried import MAX_BASIS_NUMBERS, MAX_DERIVED
from otel_shapecheck.checks.figures._findings import check_figures
from otel_shapecheck.checks.figures._text import figures_in, normalize_token, numbers_in_text

SCALES = [float(base**power) for power in range(1, 6) for base in (1000, 1024)]

decimals = st.integers(min_value=0, max_value=4)


@st.composite
def exact_decimals(draw: st.DrawFn, below: int = 10**6) -> Decimal:
    """A decimal number under ``below`` in magnitude as a tool would print it, with 0–4 decimals."""
    places = draw(decimals)
    bound = below * 10**places - 1
    mantissa = draw(st.integers(min_value=-bound, max_value=bound))
    return Decimal(mantissa).scaleb(-places)


def written(number: Decimal, places: int, grouped: bool) -> str:
    """``number`` rounded to ``places`` decimals, as an answer would write it."""
    rounded = number.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_EVEN)
    return f"{rounded:,}" if grouped else f"{rounded}"


def tolerance(places: int) -> float:
    return 0.5 * 10.0**-places


def carried_as(number: Decimal, form: str) -> ToolResult:
    if form == "json-number":
        return ToolResult(json.dumps({"rows": [{"value": float(number)}]}))
    if form == "numeric-string":
        return ToolResult({"reading": f"{number}%"})
    return ToolResult(f"The probe reported {number} units at 12:30 on host CLUSTER-A01.")


class TestCarriedNumbersAreNeverFlagged:
    @settings(max_examples=300, deadline=None)
    @given(
        number=exact_decimals(),
        data=st.data(),
        grouped=st.booleans(),
        form=st.sampled_from(["json-number", "numeric-string", "text"]),
        unit=st.sampled_from(["TB", "%", " ms", " IOPS", "GiB/s", ""]),
    )
    def test_written_back_at_any_precision_up_to_its_own(
        self, number: Decimal, data: st.DataObject, grouped: bool, form: str, unit: str
    ) -> None:
        """A carried number written with as many decimals as it has, or fewer, is carried or rounded."""
        own_places = max(0, -int(number.as_tuple().exponent))
        places = data.draw(st.integers(min_value=0, max_value=own_places))
        figure = f"{written(number, places, grouped)}{unit}"
        finding = check_figures(f"The result is {figure} right now.", [carried_as(number, form)])
        digits = sum(char.isdigit() for char in figure)
        assert finding.checked == (1 if unit or digits >= 4 else 0)
        assert finding.unsupported == ()


class TestPerturbedNumbersAreFlagged:
    @settings(max_examples=300, deadline=None)
    @given(
        first=exact_decimals(below=1000),
        second=exact_decimals(below=1000),
        guess=exact_decimals(below=10**5),
        unit=st.sampled_from(["TB", "%", " ms"]),
    )
    def test_outside_the_precision_window_and_not_derivable(
        self, first: Decimal, second: Decimal, guess: Decimal, unit: str
    ) -> None:
        """A figure farther than its precision window from every carried and derivable value is flagged."""
        places = max(0, -int(guess.as_tuple().exponent))
        value = float(guess)
        derivable = closed_derivable(float(first), float(second))
        assume(all(abs(value - candidate) > tolerance(places) * 1.001 for candidate in derivable))
        rows = [{"reading": float(first)}, {"reading": float(second)}]
        finding = check_figures(
            f"It reads {guess}{unit}.", [ToolResult(json.dumps(rows))], derivations="closed"
        )
        assert finding.unsupported == (f"{guess}{unit}",)

    @settings(max_examples=300, deadline=None)
    @given(
        first=exact_decimals(below=1000),
        second=exact_decimals(below=1000),
        guess=exact_decimals(below=10**5),
        unit=st.sampled_from(["TB", "%", " ms"]),
    )
    def test_extended_outside_every_window_is_flagged(
        self, first: Decimal, second: Decimal, guess: Decimal, unit: str
    ) -> None:
        """Under the extended derivations too, a figure outside every candidate's window is flagged."""
        places = max(0, -int(guess.as_tuple().exponent))
        a, b = float(first), float(second)
        # Two cells of one column: their differences, in larger units for a size figure, the shares of a
        # percentage figure, the cells as percents and negatives' magnitudes, on top of the closed set.
        derivable = closed_derivable(a, b) + [a - b, b - a]
        derivable += [(a - b) / scale for scale in SCALES] + [(b - a) / scale for scale in SCALES]
        derivable += [100 * x / y for x, y in ((a, a + b), (b, a + b), (a, b), (b, a)) if y]
        if unit == "%":  # a carried fraction written as a percent
            derivable += [100 * x for x in (a, b) if abs(x) <= 1]
        derivable += [-x for x in (a, b) if x < 0]  # a carried negative's magnitude
        assume(all(abs(float(guess) - candidate) > tolerance(places) * 1.001 for candidate in derivable))
        rows = [{"reading": a}, {"reading": b}]
        finding = check_figures(f"It reads {guess}{unit}.", [ToolResult(json.dumps(rows))], coincidence=1.0)
        assert finding.unsupported == (f"{guess}{unit}",)


def closed_derivable(first: float, second: float) -> list[float]:
    """The closed derivation set for two rows of one unit-less field: each value, their sum, and the sum
    in a larger unit when it reaches 1000."""
    total = first + second
    return [first, second, total, *(total / scale for scale in SCALES if abs(total) >= 1000)]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=8) | st.dictionaries(st.text(max_size=12), children, max_size=8)
    ),
    max_leaves=60,
)


def as_content(value: JSONValue, shape: str, tail: str) -> JSONValue:
    if shape == "structured":
        return value
    text = json.dumps(value)
    if shape == "json-and-text":
        return f"{text}\n{tail}"
    if shape == "cut-json":
        return text[: len(text) // 2]
    return tail


class TestArbitraryInput:
    @settings(max_examples=300, deadline=None)
    @given(
        values=st.lists(json_values, max_size=3),
        shape=st.sampled_from(["structured", "json", "json-and-text", "cut-json", "text"]),
        tail=st.text(max_size=200),
        answer=st.text(max_size=300),
    )
    def test_never_raises_and_respects_bounds(
        self, values: list[JSONValue], shape: str, tail: str, answer: str
    ) -> None:
        """Any JSON, cut JSON or text as tool results, and any answer text, gives a bounded finding."""
        results = [ToolResult(as_content(value, shape, tail)) for value in values]
        basis = figure_basis(results)
        assert len(basis.carried) <= MAX_BASIS_NUMBERS
        assert len(basis.derived) <= MAX_DERIVED
        assert all(math.isfinite(number.value) for number in basis.carried + basis.derived)
        finding = check_figures(answer, results)
        assert finding.checked == len(finding.carried) + len(finding.computed) + len(finding.unsupported)
        assert 0.0 <= finding.supported_share <= 1.0

    @settings(max_examples=200, deadline=None)
    @given(
        values=st.lists(json_values, max_size=3),
        shape=st.sampled_from(["structured", "json", "json-and-text", "text"]),
        tail=st.text(alphabet=st.sampled_from("0123456789.,-()$% abTB"), max_size=80),
        answer=st.text(alphabet=st.sampled_from("0123456789.,-% TBms\n"), max_size=120),
    )
    def test_extended_never_changes_a_closed_verdict(
        self, values: list[JSONValue], shape: str, tail: str, answer: str
    ) -> None:
        """The extended layer only moves unsupported figures to inferred; the closed fold is unchanged."""
        results = [ToolResult(as_content(value, shape, tail)) for value in values]
        plain, noted = figure_basis(results), figure_basis(results, structure=True)
        assert (plain.carried, plain.derived) == (noted.carried, noted.derived)
        closed = check_figures(answer, results, derivations="closed")
        extended = check_figures(answer, results, derivations="extended", coincidence=1.0)
        assert (extended.carried, extended.computed) == (closed.carried, closed.computed)
        assert set(extended.unsupported) | {figure.written for figure in extended.inferred} == set(
            closed.unsupported
        )
        assert all(0 <= figure.chance < 1 for figure in extended.inferred)

    @settings(max_examples=200, deadline=None)
    @given(answer=st.text(alphabet=st.sampled_from("0123456789.,-+% TBmsKi/x#:\n"), max_size=200))
    def test_figures_of_numeric_noise(self, answer: str) -> None:
        """Every figure found in noisy text has a plain-number value that parses as a float."""
        for figure in figures_in(answer):
            assert math.isfinite(float(figure.value))
            assert figure.written in answer


def tokenizer_numbers(text: str) -> list[float]:
    """The numbers of a text by the tokenizer's plain definition: every token, every comma piece."""
    numbers = []
    for token in re.findall(r"[A-Za-z0-9:_\-/.,%+@#$]+", text):
        for piece in re.split(r"(?<![0-9]),|,(?![0-9])", token):
            normalized = normalize_token(piece)
            if re.fullmatch(r"[-+]?[0-9]+(?:\.[0-9]+)?", normalized):
                numbers.append(float(normalized))
                continue
            figure = re.fullmatch(
                r"(?P<n>[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?)"
                r"(?:%|(?:percent|iops|mbps|gbps|kib|mib|gib|tib|pib|kb|mb|gb|tb|pb|ms|us)(?:/s)?(?![a-z0-9]))",
                normalized,
            )
            if figure:
                numbers.append(float(figure.group("n").replace(",", "").lstrip("+")))
    return [number for number in numbers if math.isfinite(number)]


class TestTextNumbers:
    @settings(max_examples=500, deadline=None)
    @given(text=st.text(alphabet=st.sampled_from("0123456789.,-+%$#@:/_ aTBmsx(\n"), max_size=80))
    def test_scan_finds_what_the_tokenizer_finds(self, text: str) -> None:
        """The fast scan of a text yields exactly the numbers of a token-by-token reading, in order."""
        assert list(numbers_in_text(text)) == tokenizer_numbers(text)

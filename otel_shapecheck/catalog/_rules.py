"""The structural rules of the tool-catalog lint: descriptions a model cannot choose a tool by.

Each rule is a plain function from one :class:`CatalogTool` to its findings. The four defaults flag a
description that is missing or short, one that says what a tool returns but not when to pick it, legal
values listed in prose instead of a JSON-Schema ``enum``, and an optional parameter whose omission is
never explained.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Literal

DEFAULT_MIN_DESCRIPTION_CHARS: Final = 40
WHEN_CUES: Final = ("for", "when", "after", "first", "fallback", "only")
OMISSION_CUES: Final = (
    "optional",
    "default",
    "defaults",
    "omit",
    "omitted",
    "if not",
    "when not",
    "absent",
    "all",
    "entire",
    "every",
    "fallback",
)
_IDENT = r"[A-Za-z][A-Za-z0-9_.-]*"
_PIPE_LIST = re.compile(rf"({_IDENT})(?:\s*\|\s*(?:{_IDENT}))+")
_COMMA_LIST = re.compile(
    rf"(?:one of|allowed values?|valid values?|options|values)\s*:?\s*({_IDENT}(?:\s*,\s*{_IDENT})+)",
    re.IGNORECASE,
)

Severity = Literal["error", "warn"]


@dataclass(frozen=True)
class CatalogTool:
    """One tool of a catalog: its name, description and JSON-Schema input (any of the four shapes)."""

    name: str
    description: str | None = None
    input_schema: Mapping[str, object] | None = None


@dataclass(frozen=True)
class StructuralFinding:
    """A structural problem of one tool (or one of its parameters)."""

    rule: str
    tool: str
    severity: Severity
    message: str
    param: str | None = None
    suggestion: str | None = None
    """For ``enum-in-prose``: the ``"enum": [...]`` to declare."""


Rule = Callable[[CatalogTool], Iterable[StructuralFinding]]
"""A structural rule: the findings for one tool."""


def _has_whole_word(text: str, word: str) -> bool:
    return re.search(rf"(?:^|[^a-z0-9]){re.escape(word.lower())}(?:[^a-z0-9]|$)", text.lower()) is not None


def _schema_properties(tool: CatalogTool) -> tuple[list[tuple[str, Mapping[str, object]]], set[str]]:
    """``properties`` and ``required`` of a JSON-Schema-ish input, tolerating any malformed shape."""
    schema = tool.input_schema or {}
    raw = schema.get("properties")
    properties = (
        [(name, value) for name, value in raw.items() if isinstance(value, Mapping)]
        if isinstance(raw, Mapping)
        else []
    )
    required = schema.get("required")
    names = {name for name in required if isinstance(name, str)} if isinstance(required, list) else set()
    return [(str(name), value) for name, value in properties], names


def description_rule(min_chars: int = DEFAULT_MIN_DESCRIPTION_CHARS) -> Rule:
    """``description-missing-or-short``: no description is an error, fewer than ``min_chars`` a warning."""

    def check(tool: CatalogTool) -> list[StructuralFinding]:
        description = (tool.description or "").strip()
        if not description:
            message = "tool has no description: the model can only guess from the name"
            return [StructuralFinding("description-missing-or-short", tool.name, "error", message)]
        if len(description) < min_chars:
            message = (
                f"description is {len(description)} chars (< {min_chars}): too short to tell this tool "
                "from its siblings"
            )
            return [StructuralFinding("description-missing-or-short", tool.name, "warn", message)]
        return []

    return check


def says_what_not_when_rule(cues: Sequence[str] = WHEN_CUES) -> Rule:
    """``says-what-not-when``: a description with none of the cue words gives no cue for when to pick it."""

    def check(tool: CatalogTool) -> list[StructuralFinding]:
        description = (tool.description or "").strip()
        if not description or any(_has_whole_word(description, cue) for cue in cues):
            return []
        listed = "/".join(f"'{cue}'" for cue in cues)
        message = (
            f"description says what the tool returns but not when to use it (no {listed}): add the "
            'choice condition, e.g. "Use when ..." / "Call first" / "Fallback if ..."'
        )
        return [StructuralFinding("says-what-not-when", tool.name, "warn", message)]

    return check


def _prose_literals(description: str) -> list[str] | None:
    if (pipe := _PIPE_LIST.search(description)) is not None:
        return [value.strip() for value in pipe.group(0).split("|")]
    if (comma := _COMMA_LIST.search(description)) is not None:
        return [value.strip() for value in comma.group(1).split(",")]
    return None


def _is_string_type(declared: object) -> bool:
    """``"string"``, or a type list that admits it (``["string", "null"]``, strict mode's optional field)."""
    if isinstance(declared, list):
        return "string" in declared
    return declared == "string"


def enum_in_prose_rule() -> Rule:
    """``enum-in-prose``: a string parameter without ``enum`` whose description lists its values."""

    def check(tool: CatalogTool) -> list[StructuralFinding]:
        findings: list[StructuralFinding] = []
        for param, prop in _schema_properties(tool)[0]:
            if "enum" in prop or not _is_string_type(prop.get("type", "string")):
                continue
            description = prop.get("description")
            if not isinstance(description, str) or not description:
                continue
            literals = _prose_literals(description)
            if literals is None:
                continue
            message = (
                f"param '{param}' lists its legal values in prose (\"{description[:80]}\"): declare them "
                "as a JSON-Schema enum so the model picks reliably"
            )
            suggestion = '"enum": ' + json.dumps(literals, separators=(",", ":"))
            findings.append(StructuralFinding("enum-in-prose", tool.name, "warn", message, param, suggestion))
        return findings

    return check


def optional_param_rule(cues: Sequence[str] = OMISSION_CUES) -> Rule:
    """``optional-param-undocumented``: an optional parameter that never says what leaving it out means."""

    def check(tool: CatalogTool) -> list[StructuralFinding]:
        findings: list[StructuralFinding] = []
        properties, required = _schema_properties(tool)
        for param, prop in properties:
            if param in required:
                continue
            raw = prop.get("description")
            description = raw.strip() if isinstance(raw, str) else ""
            if not description:
                message = f"optional param '{param}' has no description: say what happens when it is omitted"
            elif not any(_has_whole_word(description, cue) for cue in cues):
                message = (
                    f"optional param '{param}' never says what omitting it means: add e.g. "
                    '"optional, defaults to ..." / "omit for all ..."'
                )
            else:
                continue
            findings.append(
                StructuralFinding("optional-param-undocumented", tool.name, "warn", message, param)
            )
        return findings

    return check


DEFAULT_RULES: Final[tuple[Rule, ...]] = (
    description_rule(),
    says_what_not_when_rule(),
    enum_in_prose_rule(),
    optional_param_rule(),
)

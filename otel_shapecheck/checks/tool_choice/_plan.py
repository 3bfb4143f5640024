"""A menu as the tool-choice check scores it, prepared once per distinct menu.

A menu recurs on every call of an agent (the readers hand every call with the same tool-definitions
string the same tuple), so the work that depends on the menu alone is done once and kept: repeated
names removed (first wins), both tool texts of each tool (capped), whether a cap cut any of them, the
menu's size in characters, and its vector rows in the tool index. The cache also keeps each small
menu's scoring matrices (:class:`~._small_menu_scoring.MenuMatrices`) beside its plan, counted in its
byte bound and dropped with the plan, so a call of a known menu reads no index rows and converts nothing.
"""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass, field
from typing import Final

import numpy as np
import numpy.typing as npt

from otel_shapecheck._bounded_lru import BoundedLRU
from otel_shapecheck._model import OfferedTool
from otel_shapecheck.checks.tool_choice._small_menu_scoring import MenuMatrices
from otel_shapecheck.embedding._tool_index import tool_texts
from otel_shapecheck.readers._parse_cache import parsed_bytes

MAX_PLANS: Final = 256
MAX_PLAN_BYTES: Final = 64 * 1024 * 1024
"""Estimated bytes of the menus (and their scoring matrices) the plan cache keeps alive, at most (a bigger
menu is planned per call, and matrices that do not fit are built per call)."""
_TOOL_SLOT_BYTES: Final = 120
"""Estimated bytes a plan keeps per tool beyond its records and texts: the slots of its text and name
tuples, its name set and its index rows."""


@dataclass
class MenuPlan:
    """One distinct menu, ready to score."""

    offered: tuple[OfferedTool, ...]
    """The menu as the model saw it, duplicates removed (first wins)."""
    names: tuple[str, ...]
    seed_texts: tuple[str, ...]
    parameter_texts: tuple[str, ...]
    cut: bool
    """A tool text was cut at a cap (its name, description or whole text)."""
    text_chars: int
    """Characters of the distinct texts that would be embedded for this menu."""
    nbytes: int
    """Estimated bytes the plan keeps alive: the parsed menu (by
    :func:`~otel_shapecheck.readers._parse_cache.parsed_bytes`), its texts and its per-tool slots."""
    key: bytes = b""
    """A digest of the menu's texts (for the large-menu index)."""
    name_set: frozenset[str] = frozenset()
    """The names, for membership tests that would otherwise walk the menu on every call."""
    rows: dict[int, tuple[int, npt.NDArray[np.intp], npt.NDArray[np.intp]]] = field(default_factory=dict)
    """Per tool index (by id), its reset count and the seed and parameter rows, once looked up."""


def build_plan(offered: tuple[OfferedTool, ...]) -> MenuPlan:
    """The plan of a menu as read (possibly with repeated names)."""
    unique: dict[str, OfferedTool] = {}
    for tool in offered:
        unique.setdefault(tool.name, tool)
    tools = tuple(unique.values()) if len(unique) != len(offered) else offered
    seeds, parameters, cut = [], [], False
    for tool in tools:
        seed, full, was_cut = tool_texts(tool.name, tool.description, tool.parameters)
        seeds.append(seed)
        parameters.append(full)
        cut = cut or was_cut
    distinct = set(seeds) | set(parameters)
    nbytes = parsed_bytes(tools) + sum(map(sys.getsizeof, distinct)) + _TOOL_SLOT_BYTES * len(tools)
    digest = hashlib.blake2b(digest_size=16)
    # The names too: texts tokenise them (``a_b`` and ``a-b`` read alike), and a cached menu index
    # answers with its own names.
    for text in (*unique, *seeds, *parameters):
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")
    return MenuPlan(
        offered=tools,
        names=tuple(unique),
        seed_texts=tuple(seeds),
        parameter_texts=tuple(parameters),
        cut=cut,
        text_chars=sum(map(len, distinct)),
        nbytes=nbytes,
        key=digest.digest(),
        name_set=frozenset(unique),
    )


class PlanCache:
    """Plans of recent menus, keyed by the identity of the tuple the reader produced (kept alive here).

    Each entry may also hold the menu's scoring matrices; an entry's bytes are its plan's estimate plus
    its matrices', and the least recently used entries go first when either bound is passed. A plan or
    plan with matrices may take the whole byte bound.
    """

    def __init__(self, max_plans: int = MAX_PLANS, max_bytes: int = MAX_PLAN_BYTES) -> None:
        self._kept: BoundedLRU[int, _Entry] = BoundedLRU(max_plans, max_bytes, max_entry_bytes=max_bytes)

    def __len__(self) -> int:
        return len(self._kept)

    @property
    def nbytes(self) -> int:
        """Estimated bytes of the kept plans and matrices."""
        return self._kept.nbytes

    def plan(self, offered: tuple[OfferedTool, ...]) -> MenuPlan:
        """The plan of ``offered``, built on first sight of this tuple."""
        entry = self._kept.get(id(offered))
        if entry is not None and entry.offered is offered:
            return entry.plan
        plan = build_plan(offered)
        self._kept.put(id(offered), _Entry(offered, plan), plan.nbytes)  # a plan past the bound is not kept
        return plan

    def matrices(self, plan: MenuPlan, index_key: int, resets: int) -> MenuMatrices | None:
        """The kept matrices of ``plan`` for that tool index at that reset count, if any."""
        entry = self._kept.get(id(plan.offered))
        if entry is None or entry.plan is not plan:
            return None
        matrices = entry.matrices
        if matrices is None or matrices.index_key != index_key or matrices.resets != resets:
            return None
        return matrices

    def keep_matrices(self, plan: MenuPlan, matrices: MenuMatrices) -> bool:
        """Keep ``matrices`` with ``plan`` while the plan is kept; whether they were kept (they must fit)."""
        entry = self._kept.get(id(plan.offered))
        if entry is None or entry.plan is not plan:
            return False
        return self._kept.put(
            id(plan.offered), _Entry(plan.offered, plan, matrices), plan.nbytes + matrices.nbytes
        )

    @property
    def max_bytes(self) -> int:
        """The bound on :attr:`nbytes`."""
        return self._kept.max_bytes

    def clear(self) -> None:
        """Forget every plan and its matrices."""
        self._kept.clear()


@dataclass(frozen=True)
class _Entry:
    """One kept menu: the tuple it was read as (kept alive so its id stays unique), its plan, its matrices."""

    offered: tuple[OfferedTool, ...]
    plan: MenuPlan
    matrices: MenuMatrices | None = None

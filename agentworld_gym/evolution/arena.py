"""Arena sampling: K environments per L1 category, balanced over the taxonomy.

Every round evaluates on an *arena*: a seeded sample of the pool with ``k`` environments from
each L1 category, so that a category with hundreds of environments does not drown one with
five. Inside a category the draw goes round-robin over L2 groups (each shuffled) so that the
``k`` environments also spread over sub-domains.

The remainder: a category with fewer than ``k`` environments gives all it has, and by default
the places it leaves empty stay empty (the arena is then smaller than ``k`` x categories, and
every category still weighs at most ``k``). With ``redistribute=True`` the empty places go,
one at a time, round-robin over the categories that still have environments left (in the
seeded category order), until the arena has ``k`` x categories environments or the pool is
used up. Environments without an L1 label form the category ``"uncategorized"``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.registry import IndexEntry

UNCATEGORIZED = "uncategorized"


def category_of(entry: IndexEntry) -> str:
    return entry.taxonomy.get("l1") or UNCATEGORIZED


def latest_entries(entries: list[IndexEntry]) -> list[IndexEntry]:
    """The newest version of every environment id that has tasks (the live pool): an
    environment for which synthesis could make no solvable task has nothing to reset to."""
    newest: dict[str, IndexEntry] = {}
    for entry in entries:
        if entry.n_tasks <= 0:
            continue
        current = newest.get(entry.id)
        if current is None or entry.version > current.version:
            newest[entry.id] = entry
    return sorted(newest.values(), key=lambda e: e.id)


@dataclass
class Arena:
    """The environments drawn for one round, per category."""

    entries: list[IndexEntry]
    by_category: dict[str, list[str]] = field(default_factory=dict)
    """L1 category -> gym ids drawn from it."""
    available: dict[str, int] = field(default_factory=dict)
    """L1 category -> environments it had in the pool."""
    shortfall: dict[str, int] = field(default_factory=dict)
    """L1 category -> places it could not fill (``k`` minus what it had, when positive)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "envs": [e.gym_id for e in self.entries],
            "by_category": self.by_category,
            "available": self.available,
            "shortfall": self.shortfall,
        }


def _stratified_order(entries: list[IndexEntry], rng: random.Random) -> list[IndexEntry]:
    """The category's environments in draw order: L2 groups shuffled, then round-robin."""
    groups: dict[str, list[IndexEntry]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.id):
        groups[entry.taxonomy.get("l2", "")].append(entry)
    names = sorted(groups)
    rng.shuffle(names)
    for name in names:
        rng.shuffle(groups[name])
    order: list[IndexEntry] = []
    while any(groups[n] for n in names):
        for name in names:
            if groups[name]:
                order.append(groups[name].pop())
    return order


def sample_arena(
    entries: list[IndexEntry], k: int, seed: int, *, redistribute: bool = False
) -> Arena:
    """Draw up to ``k`` environments per L1 category (see the module docstring).

    >>> e = [IndexEntry(f"e{i}", 0, "", "", {"l1": "A" if i < 3 else "B"}) for i in range(4)]
    >>> arena = sample_arena(e, k=2, seed=0)
    >>> {c: len(ids) for c, ids in arena.by_category.items()}
    {'A': 2, 'B': 1}
    """
    rng = random.Random(seed)
    pool = latest_entries(entries)
    by_cat: dict[str, list[IndexEntry]] = defaultdict(list)
    for entry in pool:
        by_cat[category_of(entry)].append(entry)
    categories = sorted(by_cat)
    orders = {c: _stratified_order(by_cat[c], rng) for c in categories}
    taken = {c: orders[c][:k] for c in categories}
    if redistribute:
        target = k * len(categories)
        rest = {c: orders[c][k:] for c in categories}
        turn = list(categories)
        rng.shuffle(turn)
        while sum(len(v) for v in taken.values()) < target and any(rest.values()):
            for c in turn:
                if rest[c] and sum(len(v) for v in taken.values()) < target:
                    taken[c].append(rest[c].pop(0))
    chosen = [e for c in categories for e in taken[c]]
    return Arena(
        entries=chosen,
        by_category={c: [e.gym_id for e in taken[c]] for c in categories},
        available={c: len(by_cat[c]) for c in categories},
        shortfall={c: k - len(by_cat[c]) for c in categories if len(by_cat[c]) < k},
    )

"""Arena sampling: K per L1 category, seeded, small categories give all, remainder rules."""

from __future__ import annotations

from collections import Counter

from agentworld_gym.evolution.arena import UNCATEGORIZED, latest_entries, sample_arena
from agentworld_gym.registry import IndexEntry


def _pool() -> list[IndexEntry]:
    sizes = {"A": 9, "B": 4, "C": 1}
    entries = []
    for cat, n in sizes.items():
        for i in range(n):
            entries.append(
                IndexEntry(f"{cat.lower()}{i}", 0, "", "", {"l1": cat, "l2": f"g{i % 3}"}, 3, 9)
            )
    entries.append(IndexEntry("loose", 0, "", "", {}, 3, 9))
    return entries


def test_balanced_per_category_and_small_categories_give_all():
    arena = sample_arena(_pool(), k=3, seed=0)
    counts = {c: len(ids) for c, ids in arena.by_category.items()}
    assert counts == {"A": 3, "B": 3, "C": 1, UNCATEGORIZED: 1}
    assert arena.shortfall == {"C": 2, UNCATEGORIZED: 2}
    assert arena.available == {"A": 9, "B": 4, "C": 1, UNCATEGORIZED: 1}
    assert len(arena.entries) == 8 and len({e.id for e in arena.entries}) == 8


def test_within_a_category_the_draw_spreads_over_l2_groups():
    arena = sample_arena(_pool(), k=3, seed=5)
    a = [e for e in arena.entries if e.taxonomy.get("l1") == "A"]
    assert len({e.taxonomy["l2"] for e in a}) == 3


def test_seeded_and_varies_with_the_seed():
    ids = [tuple(e.id for e in sample_arena(_pool(), k=2, seed=s).entries) for s in range(6)]
    assert ids[0] == tuple(e.id for e in sample_arena(_pool(), k=2, seed=0).entries)
    assert len(set(ids)) > 1


def test_remainder_is_redistributed_only_when_asked():
    plain = sample_arena(_pool(), k=3, seed=1)
    spread = sample_arena(_pool(), k=3, seed=1, redistribute=True)
    assert len(plain.entries) == 8
    assert len(spread.entries) == 12  # k x 4 categories, filled from A and B
    counts = Counter(e.taxonomy.get("l1") for e in spread.entries)
    assert counts["C"] == 1 and counts["A"] + counts["B"] == 10
    assert {e.id for e in plain.entries} <= {e.id for e in spread.entries}


def test_only_the_newest_version_of_an_env_is_in_the_pool():
    entries = [
        IndexEntry("x", 0, "", "x", {"l1": "A"}, 3, 9),
        IndexEntry("x", 2, "", "x.v2", {"l1": "A"}, 3, 9),
        IndexEntry("x", 1, "", "x.v1", {"l1": "A"}, 3, 9),
    ]
    assert [(e.id, e.version) for e in latest_entries(entries)] == [("x", 2)]
    assert sample_arena(entries, k=5, seed=0).by_category == {"A": ["AgentWorld/x-v2"]}


def test_an_environment_without_tasks_is_never_drawn():
    # synthesis made no solvable task for "empty": a draw of it could only fail to reset
    entries = [IndexEntry("x", 0, "", "x", {"l1": "A"}, 3, 9)]
    entries.append(IndexEntry("empty", 0, "", "empty", {"l1": "A"}, 3, 0))
    assert [e.id for e in latest_entries(entries)] == ["x"]
    assert sample_arena(entries, k=5, seed=0).by_category == {"A": ["AgentWorld/x-v0"]}

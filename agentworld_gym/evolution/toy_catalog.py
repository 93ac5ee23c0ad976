"""A tiny catalog of ``op`` environments across L1 categories, for tests and dry runs.

Each environment is a team directory (``teams`` and ``members``, members referencing their
team) served by six declarative tools, with seeded records that differ per environment and
seed tasks written by the fallback synthesizer. It exercises everything the loop touches —
references, enums, unique fields, formats, paging — in well under a second per environment.
"""

from __future__ import annotations

import random
from pathlib import Path

import agentworld_gym.ops  # noqa: F401  (registers the "op" implementation)
from agentworld_gym.evolution.fallback import FallbackSynthesizer
from agentworld_gym.ops import op_tool
from agentworld_gym.registry import IndexEntry, build_index, read_index
from agentworld_gym.spec import EnvSpec, RuntimeSpec, ToolSpec

ROLES = ["engineer", "manager", "designer"]
REGIONS = ["north", "south", "east"]
_FIRST = ["Ada", "Linus", "Grace", "Alan", "Edsger", "Barbara", "Ken", "Margaret", "Dennis"]
_LAST = ["Lovelace", "Torvalds", "Hopper", "Turing", "Dijkstra", "Liskov", "Thompson", "Ritchie"]
_TEAMS = ["Atlas", "Borealis", "Comet", "Delta", "Echo", "Falcon", "Gemini", "Helix"]

S = {"type": "string"}


def tools() -> list[ToolSpec]:
    role = {"type": "string", "enum": ROLES}
    region = {"type": "string", "enum": REGIONS}
    limit = {"type": "integer", "minimum": 1, "maximum": 100}
    page = {"style": "offset", "size": "limit", "default": 10, "max": 100}
    return [
        op_tool(
            "get_team",
            "read",
            {"teamId": S},
            ["teamId"],
            {"op": "get", "collection": "teams", "key": "teamId"},
        ),
        op_tool(
            "list_teams",
            "read",
            {"region": region, "limit": limit},
            [],
            {
                "op": "list",
                "collection": "teams",
                "filters": {"region": "region"},
                "page": page,
                "response": {"items": "teams", "total": "total"},
            },
        ),
        op_tool(
            "get_member",
            "read",
            {"memberId": S},
            ["memberId"],
            {
                "op": "get",
                "collection": "members",
                "key": "memberId",
                "response": {"wrap": "member"},
            },
        ),
        op_tool(
            "list_members",
            "read",
            {"teamId": S, "role": role, "name": S, "email": S, "limit": limit},
            [],
            {
                "op": "list",
                "collection": "members",
                "page": page,
                "filters": {"teamId": "teamId", "role": "role", "name": "name", "email": "email"},
                "response": {"items": "members"},
            },
        ),
        op_tool(
            "update_member",
            "write",
            {"memberId": S, "role": role, "level": {"type": "integer"}},
            ["memberId"],
            {
                "op": "update",
                "collection": "members",
                "key": "memberId",
                "body": {"role": "role", "level": "level"},
            },
        ),
        op_tool(
            "create_member",
            "write",
            {"teamId": S, "name": S, "role": role, "email": {"type": "string"}},
            ["teamId", "name", "role"],
            {
                "op": "create",
                "collection": "members",
                "key_gen": "hex:8",
                "unique": ["email"],
                "parents": [{"arg": "teamId", "field": "teamId", "collection": "teams"}],
                "body": {"name": "name", "role": "role", "email": "email"},
            },
        ),
    ]


def records(seed: int, n_teams: int = 4, n_members: int = 10) -> dict[str, list[dict]]:
    rng = random.Random(seed)
    teams = [
        {
            "id": f"t{i + 1}",
            "name": f"{name} {rng.randrange(10, 99)}",
            "region": rng.choice(REGIONS),
            "budget": rng.randrange(10, 90) * 1000,
        }
        for i, name in enumerate(rng.sample(_TEAMS, n_teams))
    ]
    people = rng.sample([f"{f} {la}" for f in _FIRST for la in _LAST], n_members)
    members = [
        {
            "id": f"m{i + 1:03d}",
            "teamId": rng.choice(teams)["id"],
            "name": name,
            "email": name.lower().replace(" ", ".") + "@example.org",
            "role": ROLES[i % len(ROLES)],
            "level": rng.randrange(1, 6),
            "joined": f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 28):02d}",
        }
        for i, name in enumerate(people)
    ]
    return {"teams": teams, "members": members}


def make_env(slug: str, l1: str, l2: str = "", seed: int = 0, n_tasks: int = 6) -> EnvSpec:
    """One team-directory environment with ``n_tasks`` verified seed tasks (last third test)."""
    spec = EnvSpec(
        id=slug,
        name=f"Team directory {slug}",
        description="Teams and their members: look up, count, update and add people.",
        tools=tools(),
        collections={
            "teams": {"primary_key": "id"},
            "members": {"primary_key": "id", "references": {"teamId": "teams"}},
        },
        taxonomy={"l1": l1, "l2": l2 or "Directories", "l3": f"{slug}: members"},
        provenance={"source": "agentworld_gym.evolution.toy_catalog", "seed": seed},
        runtime=RuntimeSpec(max_turns=8),
        records=records(seed),
    )
    tasks = FallbackSynthesizer().synthesize(spec, n_tasks, seed)
    n_test = max(1, len(tasks) // 3)
    for i, task in enumerate(tasks):
        task.id = f"{slug}-{i + 1:04d}"
        task.split = "test" if i >= len(tasks) - n_test else "train"
    spec.tasks = tasks
    return spec


def build_toy_catalog(
    root: str | Path, per_category: dict[str, int], seed: int = 0, prefix: str = "teams"
) -> list[IndexEntry]:
    """Write ``per_category[l1]`` environments per L1 category under ``root`` and index them.

    Slugs are ``<prefix>-00``, ``<prefix>-01``...: Gymnasium's registry is global to the
    process, so two catalogs in one process need different prefixes.
    """
    root = Path(root)
    i = 0
    for l1, n in sorted(per_category.items()):
        for j in range(n):
            slug = f"{prefix}-{i:02d}"
            make_env(slug, l1, f"Group {j % 2}", seed=seed * 1000 + i).save(root / slug)
            i += 1
    build_index(root)
    return read_index(root)


__all__ = ["IndexEntry", "build_toy_catalog", "make_env", "records", "tools"]

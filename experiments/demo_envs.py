"""Three small hand-built environments, written as a catalog: the self-evolution demo
(``experiments/evolve.py``, ``catalog=demo``) and ``benchmarks/grpo_step.py`` use them.

The main job (``experiments/train.py``) trains on catalog environments instead (a computed
rule, ``algorithms/catalog_split.py``). These three are small on purpose — four tools each,
short JSON results, one- or two-call gold chains — so that a self-evolution round fits in
minutes on two CPU cores.
They are ordinary ``EnvSpec`` folders with an ``index.json``: the trainer sees them only
through the registry and the Gymnasium API, like any catalog environment. Test tasks ask the
same kinds of questions about entities that no training task mentions.

``python experiments/demo_envs.py [FOLDER]`` writes the catalog (default: the cache folder).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from agentworld_gym.database import copy_record
from agentworld_gym.errors import ToolExecutionError
from agentworld_gym.llm.embedded import cache_root
from agentworld_gym.registry import build_index
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import ToolContext

CATALOG_VERSION = 1
TRAIN_PER_TEMPLATE = 8
"""Entities 0..7 appear in training tasks; the rest only in test tasks."""

NAMES = [
    "Alpha Launch",
    "Budget Review",
    "Client Onboarding",
    "Data Cleanup",
    "Email Campaign",
    "Field Survey",
    "Hiring Plan",
    "Invoice Audit",
    "Kickoff Deck",
    "Lab Move",
    "Market Study",
    "Office Party",
]
PEOPLE = [
    "Ada Lovelace",
    "Alan Turing",
    "Grace Hopper",
    "Edsger Dijkstra",
    "Barbara Liskov",
    "Donald Knuth",
    "Frances Allen",
    "John Backus",
    "Radia Perlman",
    "Ken Thompson",
    "Margaret Hamilton",
    "Tim Berners",
]
PRODUCTS = [
    "Blue Kettle",
    "Desk Lamp",
    "Green Mug",
    "Oak Shelf",
    "Paper Tray",
    "Red Stapler",
    "Steel Bottle",
    "Wall Clock",
    "Wool Blanket",
    "Yoga Mat",
    "Glass Vase",
    "Cotton Towel",
]
ENVS = {
    # env id: (collection, noun, names, value field, update field, values, question template)
    "tracker": ("items", "item", NAMES, "points", "status"),
    "contacts": ("people", "person", PEOPLE, "desk", "phone"),
    "inventory": ("products", "product", PRODUCTS, "stock", "price"),
}


def _collection(ctx: ToolContext) -> str:
    return ENVS[ctx.env_id.removeprefix("demo-")][0]


def search(ctx: ToolContext, query: str) -> dict[str, Any]:
    """Records whose name contains ``query`` (case-insensitive)."""
    needle = query.casefold().strip()
    rows = [r for r in ctx.db.scan(_collection(ctx)) if needle and needle in r["name"].casefold()]
    return {"results": rows, "count": len(rows)}


def get(ctx: ToolContext, id: str) -> dict[str, Any]:  # noqa: A002 - the API's field name
    record = ctx.db.get(_collection(ctx), id)
    if record is None:
        raise ToolExecutionError(f"no record {id}", body={"error": f"not found: {id}"})
    return record


def update(ctx: ToolContext, id: str, **changes: Any) -> dict[str, Any]:  # noqa: A002
    record = copy_record(get(ctx, id))
    record.update(changes)
    return ctx.db.put(_collection(ctx), record)


def list_all(ctx: ToolContext) -> dict[str, Any]:
    rows = [{"id": r["id"], "name": r["name"]} for r in ctx.db.scan(_collection(ctx))]
    return {"results": rows, "count": len(rows)}


def _tool(name: str, description: str, props: dict, required: list[str], fn: str, kind="read"):
    return ToolSpec(
        name=name,
        description=description,
        parameters={"type": "object", "properties": props, "required": required},
        implementation={"type": "python", "entrypoint": f"demo_envs:{fn}"},
        kind=kind,
    )


def build_env(env_id: str) -> EnvSpec:
    """One demo environment: records, four tools, and two task templates over them."""
    collection, noun, names, value_field, update_field = ENVS[env_id]
    prefix = env_id[:2]
    records = []
    for i, name in enumerate(names):
        rec = {"id": f"{prefix}{i:02d}", "name": name, value_field: 3 + (i * 7) % 40}
        rec[update_field] = {"status": "open", "phone": f"555-01{i:02d}", "price": 10 + i}[
            update_field
        ]
        records.append(rec)
    s = {"type": "string"}
    update_schema = {
        "status": {"type": "string", "enum": ["open", "done"]},
        "phone": s,
        "price": {"type": "integer", "minimum": 0},
    }[update_field]
    plural = collection
    tools = [
        _tool(
            f"search_{plural}",
            f"Find {plural} whose name contains the query.",
            {"query": s},
            ["query"],
            "search",
        ),
        _tool(f"get_{noun}", f"Get one {noun} by id.", {"id": s}, ["id"], "get"),
        _tool(
            f"update_{noun}",
            f"Set the {update_field} of a {noun} (by id).",
            {"id": s, update_field: update_schema},
            ["id", update_field],
            "update",
            "write",
        ),
        _tool(f"list_{plural}", f"List every {noun}'s id and name.", {}, [], "list_all"),
    ]
    tasks = []
    for i, rec in enumerate(records):
        split = "train" if i < TRAIN_PER_TEMPLATE else "test"
        find = {"name": f"search_{plural}", "arguments": {"query": rec["name"]}}
        value = rec[value_field]
        question = {
            "points": f"How many points is the item '{rec['name']}' worth?",
            "desk": f"What is the desk number of {rec['name']}?",
            "stock": f"How many units of '{rec['name']}' are in stock?",
        }[value_field]
        tasks.append(
            TaskSpec(
                id=f"{env_id}-ask-{i:02d}",
                instruction=question,
                split=split,
                verifier={
                    "type": "rubric",
                    "criteria": [
                        {
                            "text": f"answer is {value}",
                            "check": {"type": "answer_equals", "value": value},
                        }
                    ],
                },
                gold={"type": "tool_chain", "calls": [find], "answer": f"{value}"},
                reference_answer=str(value),
            )
        )
        new = {"status": "done", "phone": f"555-09{i:02d}", "price": 20 + 3 * i}[update_field]
        instruction = {
            "status": f"Mark the item '{rec['name']}' as done.",
            "phone": f"Change the phone number of {rec['name']} to {new}.",
            "price": f"Set the price of '{rec['name']}' to {new}.",
        }[update_field]
        change = {
            "name": f"update_{noun}",
            "arguments": {"id": "$0.results.0.id", update_field: new},
        }
        tasks.append(
            TaskSpec(
                id=f"{env_id}-set-{i:02d}",
                instruction=instruction,
                split=split,
                verifier={
                    "type": "rubric",
                    "criteria": [
                        {
                            "text": f"{update_field} updated",
                            "check": {
                                "type": "record",
                                "collection": collection,
                                "key": rec["id"],
                                "path": update_field,
                                "equals": new,
                            },
                        }
                    ],
                },
                gold={"type": "tool_chain", "calls": [find, change], "answer": "Done."},
            )
        )
    return EnvSpec(
        id=f"demo-{env_id}",
        name=f"Demo {env_id.title()}",
        description=f"A small {noun} directory for the CPU demo.",
        tools=tools,
        tasks=tasks,
        collections={collection: {"primary_key": "id"}},
        taxonomy={"l1": f"Demo {env_id.title()}", "l2": "demo", "l3": "demo"},
        provenance={"source": "experiments/demo_envs.py"},
        records={collection: records},
        runtime=RuntimeSpec(
            max_turns=4,
            system_prompt=(
                f"You manage {plural}. Use the tools to look things up or make changes, then "
                "reply with a short final answer."
            ),
        ),
    )


def ensure_demo_catalog(root: str | Path | None = None) -> Path:
    """Write the demo catalog (once per version) and return its folder; makes
    ``demo_envs`` importable for the tools' entry points."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    root = Path(root) if root else cache_root() / f"demo_catalog_v{CATALOG_VERSION}"
    if not (root / "index.json").is_file():
        for env_id in ENVS:
            build_env(env_id).save(root / f"demo-{env_id}")
        build_index(root)
    return root


if __name__ == "__main__":
    print(ensure_demo_catalog(sys.argv[1] if len(sys.argv) > 1 else None))

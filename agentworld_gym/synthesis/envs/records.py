"""Seed a compiled environment's collections with mutually consistent records.

Parents are filled before their children so every reference resolves: a pet's ``ownerId``
is the key of an existing owner, and scope fields without a collection of their own
(``subscriptionId``, ``resourceGroupName``) draw from one small shared pool per name, as
they would in a real account. Every collection gets the same share of a 20–200 record
budget.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agentworld_gym.synthesis.envs.infer import fold
from agentworld_gym.synthesis.envs.model import CollectionModel, EnvModel
from agentworld_gym.synthesis.envs.seed import Generator, coerce, fits, schema_type

MIN_RECORDS, MAX_RECORDS = 20, 200
BYTES_BUDGET = 40_000
POOL_SIZE = 2


def records_per_collection(n_collections: int) -> int:
    """An even share of the record budget: 25 for one collection, at least 3 each."""
    per = max(4, min(25, math.ceil(60 / max(1, n_collections))))
    if per * n_collections > MAX_RECORDS:
        per = max(3, MAX_RECORDS // n_collections)
    return per


def _order(collections: dict[str, CollectionModel]) -> list[CollectionModel]:
    """Parents before children (deterministic; reference cycles are cut)."""
    done: list[str] = []
    visiting: set[str] = set()

    def visit(name: str) -> None:
        if name in done or name in visiting:
            return
        visiting.add(name)
        coll = collections[name]
        for target in [*coll.scopes.values(), *coll.references.values()]:
            if target and target in collections and target != name:
                visit(target)
        visiting.discard(name)
        done.append(name)

    for name in collections:
        visit(name)
    return [collections[n] for n in done]


def _key(gen: Generator, coll: CollectionModel, i: int, taken: set[str]) -> Any:
    schema = coll.schema["properties"][coll.pk]
    if schema.get("enum"):
        return schema["enum"][i % len(schema["enum"])]
    if coll.key_gen == "int" or schema_type(schema) in ("integer", "number"):
        return i + 1
    name = fold(coll.pk)
    for attempt in range(20):
        if schema.get("format") in (None, "uuid") and name.endswith(("id", "uuid", "guid")):
            value = (
                gen.uuid()
                if schema.get("format") == "uuid" or name in ("id", "uuid", "guid")
                else f"{name[:3]}_{gen.rng.getrandbits(40):010x}"
            )
        elif name.endswith("name") and not schema.get("format"):
            value = f"{gen.word()}-{gen.word()}-{gen.rng.randrange(10, 99)}"
        else:
            value = gen.value(schema, coll.pk, coll.noun, 1)
        if isinstance(value, str):
            value = gen.fit(value, schema)
        if str(value) not in taken:
            return value
        if attempt > 10 and isinstance(value, str) and not schema.get("format"):
            return f"{value}-{i}"
    return f"{coll.noun.replace(' ', '-')}-{i + 1}"


def _budgeted(model: EnvModel, gen: Generator, per: int) -> int:
    """Fewer records per collection when records are large (the catalog is committed):
    about BYTES_BUDGET of seed data per environment, but never under MIN_RECORDS in all nor
    under 3 per collection."""
    size = sum(len(orjson.dumps(gen.object(c.schema, c.noun))) for c in model.collections.values())
    if size * per <= BYTES_BUDGET:
        return per
    floor = max(3, math.ceil(MIN_RECORDS / max(1, len(model.collections))))
    return max(floor, min(per, BYTES_BUDGET // max(1, size)))


def populate(model: EnvModel, gen: Generator) -> dict[str, list[dict[str, Any]]]:
    """Records for every collection of ``model`` (insertion order is the seed order)."""
    keep: dict[str, set[str]] = {name: set() for name in model.collections}
    for plan in model.tools:
        for arg in plan.args.values():
            if arg.field and arg.role in ("filter", "match", "scope", "key", "search"):
                keep[plan.shape.noun].add(arg.field)
    per = _budgeted(model, gen, records_per_collection(len(model.collections)))
    pools: dict[str, list[Any]] = {}
    out: dict[str, list[dict[str, Any]]] = {}
    for coll in _order(model.collections):
        props = coll.schema["properties"]
        links = {**{f: c for f, c in coll.scopes.items()}, **coll.references}
        rows: list[dict[str, Any]] = []
        taken: set[str] = set()
        fields = tuple(sorted(keep[coll.name] | set(links)))
        enum = props[coll.pk].get("enum")
        for i in range(min(per, len(enum)) if enum else per):
            rec = gen.object(coll.schema, coll.noun, keep=tuple(f for f in fields if f in props))
            key = _key(gen, coll, i, taken)
            rec[coll.pk] = key
            taken.add(str(key))
            for fld, target in links.items():
                if fld == coll.pk:
                    continue
                if target and out.get(target):
                    parent = gen.rng.choice(out[target])
                    value = coerce(parent[model.collections[target].pk], props.get(fld, {}))
                    if fits(value, props.get(fld, {})):
                        rec[fld] = value
                elif fld in coll.scopes:
                    pool = pools.setdefault(
                        fold(fld),
                        [
                            gen.value(props.get(fld, {"type": "string"}), fld, coll.noun, 1)
                            for _ in range(POOL_SIZE)
                        ],
                    )
                    rec[fld] = coerce(gen.rng.choice(pool), props.get(fld, {}))
            rows.append(rec)
        out[coll.name] = rows
    return {name: out[name] for name in model.collections}

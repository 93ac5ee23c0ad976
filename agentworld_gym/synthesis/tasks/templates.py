"""The library of program templates, instantiated against an environment's state model.

=================  =========================================================  ==============
template           program                                                    control flow
=================  =========================================================  ==============
``bulk_update``    for every record (of a parent scope, optionally of         loop, filter,
                   parents matching a condition) matching a condition: set a   join, write
                   field; report how many
``bulk_delete``    the same, deleting                                         loop, filter,
                                                                              join, write
``branch_update``  for every record: if a number exceeds a threshold set a    loop, branch,
                   field one way, else the other; report how many went each   write
                   way
``create_each``    for every parent matching a condition: create a child      loop, filter,
                   under it; report how many                                  join, write
``extreme``        find the record with the highest/lowest number, update     aggregate,
                   it, report its name                                        write
``aggregate``      total/average/highest/lowest of a number over records      loop, filter,
                   matching conditions (optionally through their parents)     join, aggregate
``group_max``      which parent has the most children (listing children per  loop, join,
                   parent where the API is nested)                            aggregate
=================  =========================================================  ==============
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

import jinja2

from agentworld_gym.synthesis.tasks.model import EnvModel, ToolModel, humanize, scalar
from agentworld_gym.synthesis.tasks.programs import (
    Caller,
    Caps,
    Program,
    Writable,
    address,
    hit,
    value_at,
)
from agentworld_gym.synthesis.tasks.render import plural, quote
from agentworld_gym.synthesis.tasks.values import (
    MISSING,
    fresh_text,
    new_value,
    schema_type,
    typed,
)

_J = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
REQUESTS = {
    k: _J.from_string(v)
    for k, v in {
        "bulk_update": "For every {{ noun }}{{ scope }}{{ cond }}, set its {{ field }} to "
        "{{ value }}. Then tell me how many {{ nouns }} you updated.",
        "bulk_delete": "Delete every {{ noun }}{{ scope }}{{ cond }}. Then tell me how many "
        "{{ nouns }} you deleted.",
        "branch_update": "Go through every {{ noun }}{{ scope }}{{ cond }}: if its {{ num }} is "
        "greater than {{ t }}, set its {{ field }} to {{ a }}; otherwise set it to {{ b }}. "
        "Tell me how many ended up with {{ a }}.",
        "create_each": "For each {{ pnoun }}{{ pcond }}, add a {{ noun }} under it with "
        "{{ field }} {{ value }}. Tell me how many {{ nouns }} you added.",
        "extreme": "Find the {{ noun }}{{ scope }}{{ cond }} with the {{ dir }} {{ num }}, set "
        "its {{ field }} to {{ value }}, and tell me its {{ label }}.",
        "aggregate": "What is the {{ op }} {{ num }} of the {{ nouns }}{{ scope }}{{ cond }}?",
        "count": "How many {{ nouns }}{{ scope }}{{ cond }} are there?",
        "group_max": "Which {{ pnoun }}{{ pcond }} has the most {{ nouns }}{{ cond }}? Tell me "
        "its {{ label }} and how many {{ nouns }} it has.",
    }.items()
}
OP_WORDS = {"sum": "total", "avg": "average", "max": "highest", "min": "lowest"}


@dataclass
class Knobs:
    """Difficulty knobs of program instantiation."""

    lo: int = 2
    hi: int = 8
    """Target records per instance (how many writes)."""
    max_calls: int = 19
    long: bool = False
    """Prefer the instance with the most calls (long-horizon tasks)."""
    min_calls: int = 1
    distractors: int = 0
    """Near-miss records required: matching all but one condition."""


@dataclass
class Listing:
    """How a program reads the records it works on: one list tool, maybe under one parent."""

    tool: ToolModel
    args: dict[str, Any]
    where: list[list[Any]]
    rows: list[dict[str, Any]]
    phrase: str


def _listing(model: EnvModel, caps: Caps, rng: random.Random) -> Listing | None:
    coll = caps.coll
    if caps.lister is not None and (not caps.scoped or rng.random() < 0.6):
        if not caps.visibility.complete(caps.lister, {}, coll, coll.records):
            return None
        return Listing(caps.lister, {}, [], coll.records, "")
    if not caps.scoped:
        return None
    tool, req = rng.choice(caps.scoped)
    fields = [f for _, f, _ in req]
    groups = Counter(
        tuple(str(r.get(f)) for f in fields)
        for r in coll.records
        if all(scalar(r.get(f)) or isinstance(r.get(f), bool) for f in fields)
    )
    common = [g for g, n in groups.most_common() if n >= 2] or list(groups)
    if not common:
        return None
    chosen = rng.choice(common[:3])
    sample = next(r for r in coll.records if tuple(str(r.get(f)) for f in fields) == chosen)
    args, where, phrases = {}, [], []
    for arg, fld, pref in req:
        value = sample[fld]
        args[arg] = typed(value, tool.params[arg].schema)
        where.append([fld, value])
        parent = model.collections.get(pref or "")
        noun = parent.noun if parent else _strip_id(fld)
        phrases.append(f"{noun} {quote(value)}")
    rows = [r for r in coll.records if hit(r, where)]
    if not caps.visibility.complete(tool, args, coll, rows):
        return None
    return Listing(tool, args, where, rows, " in " + " and ".join(phrases))


def _strip_id(name: str) -> str:
    w = humanize(name).split()
    return " ".join(w[:-1] if len(w) > 1 and w[-1] in ("id", "gid", "uuid", "key") else w)


def _conditions(
    caps: Caps,
    rows: list[dict],
    avoid: set[str],
    rng: random.Random,
    knobs: Knobs,
    hidden: frozenset[str],
) -> list[tuple[list[list[Any]], list]]:
    """``(where, targets)`` options: one categorical condition (two with distractors)."""
    coll = caps.coll
    fields = [f for f in coll.profile.categorical if f not in avoid and f not in hidden]
    rng.shuffle(fields)
    out = []
    for f in fields:
        for v in coll.profile.categorical[f]:
            where = [[f, v]]
            targets = [r for r in rows if hit(r, where)]
            if knobs.distractors:
                others = [g for g in fields if g != f]
                if not others:
                    continue
                g = rng.choice(others)
                gv = next(
                    (r.get(g) for r in targets if scalar(r.get(g)) or isinstance(r.get(g), bool)),
                    None,
                )
                if gv is None:
                    continue
                where = [[f, v], [g, gv]]
                near = [r for r in rows if hit(r, [[f, v]]) != hit(r, [[g, gv]])]
                targets = [r for r in rows if hit(r, where)]
                if len(near) < knobs.distractors:
                    continue
            if knobs.lo <= len(targets) <= knobs.hi and len(targets) < len(rows):
                out.append((where, targets))
    return out


def _cond_text(where: list[list[Any]]) -> str:
    return (
        " whose " + " and ".join(f"{humanize(f)} is {quote(v)}" for f, v in where) if where else ""
    )


def _join(model: EnvModel, all_caps: dict[str, Caps], caps: Caps, rng: random.Random):
    """A parent collection to filter through: ``(field, parent caps, [[pf, pv]], keys)``."""
    options = []
    for fld, pc in caps.coll.references.items():
        pcaps = all_caps.get(pc)
        if pcaps is None or pcaps.lister is None or pc == caps.coll.name:
            continue
        if not pcaps.visibility.complete(pcaps.lister, {}, pcaps.coll, pcaps.coll.records):
            continue
        for pf, values in pcaps.coll.profile.categorical.items():
            if pf in pcaps.lister.hidden:
                continue
            for pv in values:
                keys = {str(p.get(pcaps.coll.pk)) for p in pcaps.coll.records if hit(p, [[pf, pv]])}
                if 0 < len(keys) < len(pcaps.coll.records):
                    options.append((fld, pcaps, [[pf, pv]], keys))
    return rng.choice(options) if options else None


def _calls(n_lists: int, n_writes: int) -> int:
    return n_lists + n_writes


def _value_for(w: Writable, caps: Caps, targets: list[dict], rng: random.Random) -> Any:
    known = caps.coll.profile.categorical.get(w.path)
    current = {repr(value_at(r, w.path)) for r in targets}
    for _ in range(6):
        v = new_value(w.schema, w.path, None, rng, known)
        if v is not MISSING and repr(v) not in current and (not isinstance(v, str) or len(v) <= 40):
            return v
    return MISSING


# -- templates ------------------------------------------------------------------------------
def bulk(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs, op: str
) -> Program | None:
    pool = [
        c
        for c in all_caps.values()
        if (c.updater if op == "update" else c.deleter) and (c.lister or c.scoped)
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll = caps.coll
    listing = _listing(model, caps, rng)
    if listing is None:
        return None
    join = _join(model, all_caps, caps, rng) if rng.random() < 0.4 else None
    rows = listing.rows
    if join is not None:
        rows = [r for r in rows if str(r.get(join[0])) in join[3]]
    w = rng.choice(caps.writable) if op == "update" else None
    avoid = {w.path} if w else set()
    avoid |= {f for f, _ in listing.where}
    options = _conditions(caps, rows, avoid, rng, knobs, listing.tool.hidden)
    if not options:
        return None
    where, targets = max(options, key=lambda o: len(o[1])) if knobs.long else rng.choice(options)
    value = _value_for(w, caps, targets, rng) if w else None
    if w and value is MISSING:
        return None
    n_lists = 2 if join else 1
    if _calls(n_lists, len(targets)) > knobs.max_calls:
        return None
    tool = caps.updater if op == "update" else caps.deleter
    params = {"c": coll.name, "k": coll.pk, "w": listing.where + where}
    cond = _cond_text(where)
    if join is not None:
        fld, pcaps, pw, _ = join
        params.update(pc=pcaps.coll.name, pk=pcaps.coll.pk, pw=pw, pf=fld)
        cond += (" and" if cond else "") + f" that belongs to a {pcaps.coll.noun}" + _cond_text(pw)
    if w:
        params.update(g=w.path, v=value)

    def run(caller: Caller) -> str:
        ok = None
        if join is not None:
            parents = caller.list_all(join[1].lister, {})
            ok = {str(p.get(join[1].coll.pk)) for p in parents if hit(p, join[2])}
        found = [
            r
            for r in caller.list_all(listing.tool, listing.args)
            if hit(r, where) and (ok is None or str(value_at(r, join[0])) in ok)
        ]
        for r in found:
            if w is None:
                caller(tool, address(tool, coll, r))
            elif value_at(r, w.path) != value:
                caller(tool, {**address(tool, coll, r), **w.args(value)})
        verb = "updated" if w else "deleted"
        return f"I {verb} {len(found)} {plural(coll.noun) if len(found) != 1 else coll.noun}."

    request = REQUESTS[f"bulk_{op}"].render(
        noun=coll.noun,
        nouns=plural(coll.noun),
        scope=listing.phrase,
        cond=cond,
        field=humanize(w.path.split(".")[-1]) if w else "",
        value=quote(value),
    )
    flow = ["loop", "filter", "conditional_write"] + (["join"] if join else [])
    return Program(
        f"bulk_{op}",
        op,
        params,
        request,
        flow,
        "number",
        f"p:bulk:{coll.name}:{where}",
        3 if join else 2,
        run,
    )


def branch(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    pool = [
        c
        for c in all_caps.values()
        if c.updater and c.coll.profile.numeric and (c.lister or c.scoped)
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll = caps.coll
    listing = _listing(model, caps, rng)
    if listing is None:
        return None
    nf = rng.choice([f for f in coll.profile.numeric if f not in listing.tool.hidden] or [""])
    w = rng.choice(caps.writable)
    if not nf or w.path == nf:
        return None
    rows = listing.rows
    where: list[list[Any]] = []
    if len(rows) > knobs.hi + 2 and not knobs.long:
        options = _conditions(caps, rows, {w.path, nf}, rng, Knobs(2, knobs.hi), frozenset())
        if options:
            where, rows = rng.choice(options)
    nums = sorted({r[nf] for r in rows if isinstance(r.get(nf), int | float)})
    if len(nums) < 3:
        return None
    t = nums[rng.randrange(len(nums) // 3, max(len(nums) // 3 + 1, 2 * len(nums) // 3))]
    a = _value_for(w, caps, [], rng)
    b = _value_for(w, caps, [], rng)
    if a is MISSING or b is MISSING or a == b:
        return None

    def want(r: dict) -> Any:
        x = value_at(r, nf)
        return a if isinstance(x, int | float) and x > t else b

    writes = sum(1 for r in rows if value_at(r, w.path) != want(r))
    if _calls(1, writes) > knobs.max_calls or writes == 0:
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "w": listing.where + where,
        "nf": nf,
        "t": t,
        "g": w.path,
        "a": a,
        "b": b,
    }

    def run(caller: Caller) -> str:
        found = [r for r in caller.list_all(listing.tool, listing.args) if hit(r, where)]
        for r in found:
            if value_at(r, w.path) != want(r):
                caller(caps.updater, {**address(caps.updater, coll, r), **w.args(want(r))})
        n = sum(1 for r in found if want(r) == a)
        return f"{n} {plural(coll.noun) if n != 1 else coll.noun} ended up with {a}."

    request = REQUESTS["branch_update"].render(
        noun=coll.noun,
        scope=listing.phrase,
        cond=_cond_text(where),
        num=humanize(nf),
        t=t,
        field=humanize(w.path.split(".")[-1]),
        a=quote(a),
        b=quote(b),
    )
    return Program(
        "branch_update",
        "branch",
        params,
        request,
        ["loop", "branch", "conditional_write"] + (["filter"] if where else []),
        "number",
        f"p:branch:{coll.name}:{nf}",
        2,
        run,
    )


def create_each(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    pool = [
        c
        for c in all_caps.values()
        if c.creator
        and c.create_scope
        and all_caps.get(c.create_scope[2])
        and all_caps[c.create_scope[2]].lister
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll = caps.coll
    arg, fld, pc = caps.create_scope
    pcaps = all_caps[pc]
    if not pcaps.visibility.complete(pcaps.lister, {}, pcaps.coll, pcaps.coll.records):
        return None
    required = [x for x in caps.create_fields if caps.creator.params[x.param].required]
    strings = [
        x
        for x in (required or caps.create_fields)
        if schema_type(x.schema) == "string" and not x.schema.get("enum")
    ]
    if not strings or len(required) > 1:
        return None
    w = rng.choice(strings)
    value = fresh_text(rng, w.path)
    options = _conditions(pcaps, pcaps.coll.records, set(), rng, knobs, pcaps.lister.hidden)
    if not options:
        return None
    pw, parents = max(options, key=lambda o: len(o[1])) if knobs.long else rng.choice(options)
    if _calls(1, len(parents)) > knobs.max_calls:
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "g": w.path,
        "v": value,
        "pc": pc,
        "pk": pcaps.coll.pk,
        "pw": pw,
        "pf": fld,
    }
    schema = caps.creator.params[arg].schema

    def run(caller: Caller) -> str:
        found = [p for p in caller.list_all(pcaps.lister, {}) if hit(p, pw)]
        for p in found:
            caller(caps.creator, {arg: typed(p.get(pcaps.coll.pk), schema), **w.args(value)})
        return f"I added {len(found)} {plural(coll.noun) if len(found) != 1 else coll.noun}."

    request = REQUESTS["create_each"].render(
        pnoun=pcaps.coll.noun,
        pcond=_cond_text(pw),
        noun=coll.noun,
        nouns=plural(coll.noun),
        field=humanize(w.path.split(".")[-1]),
        value=quote(value),
    )
    return Program(
        "create_each",
        "create",
        params,
        request,
        ["loop", "filter", "join", "conditional_write"],
        "number",
        f"p:create:{coll.name}:{pw}",
        2,
        run,
    )

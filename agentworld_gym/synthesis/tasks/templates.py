"""The library of program templates, instantiated against an environment's state model.

Records come from a listing (``list``) or from records the request names, fetched one by one
(``given``): many generated APIs can fetch a record but not list its collection, and some can
only write.

==================  =====================================================  ==================
template            program                                                control flow
==================  =====================================================  ==================
``bulk_update``     for every listed record (of a parent scope, optionally  loop, filter, join,
                    of parents matching a condition) matching a condition:  conditional write
                    set a field; report how many
``bulk_delete``     the same, deleting                                     loop, filter, join,
                                                                           conditional write
``branch_update``   for every listed record: if a number exceeds a         loop, branch, write
                    threshold set a field one way, else the other; report
                    how many went each way
``create_each``     for every parent (listed, or given and fetched)        loop, filter, join,
                    matching a condition: create a child linked to it;     conditional write
                    report how many
``extreme``         the listed record with the highest/lowest number:      aggregate, write
                    update it, report its name
``aggregate``       total/average/highest/lowest/count over listed         loop, filter, join,
                    records matching conditions (maybe through parents)    aggregate
``group_max``       which parent has the most children                     loop, join, aggregate
``children_agg``    for given parents: list each one's children, filter,   loop, join, filter,
                    total/count them                                       aggregate
``batch_read``      fetch each given record: count, total or pick among    loop, filter,
                    them, or name those matching a condition               aggregate
``batch_update``    fetch each given record: update or delete those        loop, branch,
                    matching a condition, or set one value if it matches   conditional write
                    and another if not, or update the one with the
                    highest/lowest number
``batch_write``     update or delete each given record (APIs that only      loop, write
                    write)
``lookup_branch``   fetch one given record (or two, and compare them): if  branch, conditional
                    a field has a value (or a number exceeds a threshold)  write
                    update a record one way, else another way (or delete)
``create_batch``    create several records from values the request gives,  loop, branch,
                    a field computed by a rule over another; report how    write
                    many went each way
``create_chain``    create a parent, then children linked to the key it    join, loop, write
                    was given (read from the create call's result)
==================  =====================================================  ==================

This module holds the templates over listings (``bulk_*``, ``branch_update``,
``create_each``); :mod:`.templates_agg`, :mod:`.templates_batch` and :mod:`.templates_flow`
the others; :mod:`.shapes` what they share.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel, humanize
from agentworld_gym.synthesis.tasks.programs import (
    Answer,
    Caller,
    Caps,
    Program,
    address,
    hit,
    setting,
    value_at,
)
from agentworld_gym.synthesis.tasks.render import plural, quote
from agentworld_gym.synthesis.tasks.shapes import (
    Knobs,
    choose_listed,
    cond_text,
    conditions,
    fetch,
    field_name,
    given,
    join_parent,
    listed,
    making,
    named,
    noun_of,
    render,
    value_for,
    visible,
)
from agentworld_gym.synthesis.tasks.values import MISSING, fresh_text, schema_type, typed

__all__ = ["Knobs", "branch", "bulk", "create_each"]

REQUESTS = {
    "bulk_update": "For every {{ noun }}{{ scope }}{{ cond }}, set its {{ field }} to "
    "{{ value }}. Then tell me how many {{ nouns }} you updated.",
    "bulk_delete": "Delete every {{ noun }}{{ scope }}{{ cond }}. Then tell me how many "
    "{{ nouns }} you deleted.",
    "branch_update": "Go through every {{ noun }}{{ scope }}{{ cond }}: if its {{ num }} is "
    "greater than {{ t }}, set its {{ field }} to {{ a }}; otherwise set it to {{ b }}. "
    "Tell me how many ended up with {{ a }}.",
    "create_each": "For each {{ pnoun }}{{ pcond }}, add {{ noun | a }} {{ link }} it with "
    "{{ field }} {{ value }}. Tell me how many {{ nouns }} you added.",
    "create_given": "Check the {{ pnouns }} {{ keys }}. For each one{{ pcond }}, add "
    "{{ noun | a }} {{ link }} it with {{ field }} {{ value }}. Tell me how many {{ nouns }} you "
    "added.",
}


def bulk(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs, op: str
) -> Program | None:
    found = choose_listed(
        model, all_caps, rng, lambda c: c.updater if op == "update" else c.deleter
    )
    if found is None:
        return None
    caps, source = found
    coll = caps.coll
    join = join_parent(all_caps, caps, rng) if rng.random() < 0.4 else None
    rows = source.rows
    if join is not None:
        rows = [r for r in rows if str(r.get(join.field)) in join.keys]
    w = rng.choice(caps.writable) if op == "update" else None
    avoid = {w.path} if w else set()
    avoid |= {f for f, _ in source.where}
    options = conditions(caps, rows, avoid, rng, knobs, source.tool.hidden)
    if not options:
        return None
    where, targets = max(options, key=lambda o: len(o[1])) if knobs.long else rng.choice(options)
    value = value_for(w, caps, targets, rng) if w else None
    if w and value is MISSING:
        return None
    if (2 if join else 1) + len(targets) > knobs.max_calls:
        return None
    tool = caps.updater if op == "update" else caps.deleter
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": source.where + where}
    cond = cond_text(where)
    if join is not None:
        params.update(join.params(), pf=join.field)
        cond = join.text(cond, "belongs")
    if w:
        params.update(g=w.path, v=value)

    def run(caller: Caller) -> Answer:
        found = listed(caller, source, where, join)
        for r in found:
            if w is None:
                caller(tool, address(tool, coll, r))
            elif value_at(r, w.path) != value:
                caller(tool, setting(tool, coll, r, w, value))
        verb = "updated" if w else "deleted"
        return Answer(f"I {verb} {len(found)} {noun_of(coll, len(found))}.", len(found))

    request = render(
        REQUESTS[f"bulk_{op}"],
        noun=coll.noun,
        nouns=plural(coll.noun),
        scope=source.phrase,
        cond=cond,
        field=field_name(w.path) if w else "",
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
    found = choose_listed(model, all_caps, rng, lambda c: c.updater and c.coll.profile.numeric)
    if found is None:
        return None
    caps, source = found
    coll = caps.coll
    nf = rng.choice([f for f in coll.profile.numeric if f not in source.tool.hidden] or [""])
    w = rng.choice(caps.writable)
    if not nf or w.path == nf:
        return None
    rows = source.rows
    where: list[list[Any]] = []
    if len(rows) > knobs.hi + 2 and not knobs.long:
        options = conditions(caps, rows, {w.path, nf}, rng, Knobs(2, knobs.hi), frozenset())
        if options:
            where, rows = rng.choice(options)
    nums = sorted({r[nf] for r in rows if isinstance(r.get(nf), int | float)})
    if len(nums) < 3:
        return None
    t = nums[rng.randrange(len(nums) // 3, max(len(nums) // 3 + 1, 2 * len(nums) // 3))]
    a = value_for(w, caps, [], rng)
    b = value_for(w, caps, [], rng)
    if a is MISSING or b is MISSING or a == b:
        return None

    def want(r: dict) -> Any:
        x = value_at(r, nf)
        return a if isinstance(x, int | float) and x > t else b

    writes = sum(1 for r in rows if value_at(r, w.path) != want(r))
    if 1 + writes > knobs.max_calls or writes == 0:
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "w": source.where + where,
        "nf": nf,
        "t": t,
        "g": w.path,
        "a": a,
        "b": b,
    }

    def run(caller: Caller) -> Answer:
        found = [r for r in caller.list_all(source.tool, source.args) if hit(r, where)]
        for r in found:
            if value_at(r, w.path) != want(r):
                caller(caps.updater, setting(caps.updater, coll, r, w, want(r)))
        n = sum(1 for r in found if want(r) == a)
        return Answer(f"{n} {noun_of(coll, n)} ended up with {a}.", n)

    request = render(
        REQUESTS["branch_update"],
        noun=coll.noun,
        scope=source.phrase,
        cond=cond_text(where),
        num=humanize(nf),
        t=t,
        field=field_name(w.path),
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
    """For each parent matching a condition (every listed parent, or among named ones the
    program fetches), create a child linked to it."""
    options = [
        (c, link, all_caps[link[2]])
        for c in all_caps.values()
        if c.maker is not None
        for link in c.links
        if link[2] in all_caps and (all_caps[link[2]].lister or all_caps[link[2]].getter)
    ]
    if not options:
        return None
    caps, (arg, fld, pc), pcaps = rng.choice(options)
    coll, pcoll = caps.coll, pcaps.coll
    strings = [
        x
        for x in caps.make_fields
        if schema_type(x.schema) == "string"
        and not x.schema.get("enum")
        and x.param != arg
        and x.path not in caps.unique
    ]
    if not strings:
        return None
    w = rng.choice(strings)
    value = fresh_text(rng, w.path)
    by_list = pcaps.lister is not None and (
        pcaps.getter is None or not knobs.given or rng.random() < 0.5
    )
    if not by_list and not knobs.given:
        return None
    if by_list:
        if not pcaps.visibility.complete(pcaps.lister, {}, pcoll, pcoll.records):
            return None
        pool, hidden = pcoll.records, pcaps.lister.hidden
    else:
        lo = max(3, knobs.min_calls // 2)
        pool = given(pcaps, rng, rng.randint(lo, max(lo, min(8, knobs.max_calls // 2))))
        hidden = pcaps.getter.hidden if pcaps.getter else frozenset()
        if len(pool) < 3:
            return None
    sub = Knobs(1 if not by_list else knobs.lo, knobs.hi)
    opts = conditions(pcaps, pool, set(), rng, sub, hidden)
    if not opts:
        return None
    pw, parents = max(opts, key=lambda o: len(o[1])) if knobs.long else rng.choice(opts)
    if (1 if by_list else len(pool)) + len(parents) > knobs.max_calls:
        return None
    schema = caps.maker.params[arg].schema
    mk = making(model, caps, rng, {arg, w.param})
    if mk is None or mk.own or (not knobs.given and mk.names_keys(caps)):
        return None
    calls = {
        str(p.get(pcoll.pk)): mk.copy(
            {**mk.shared, arg: typed(p.get(pcoll.pk), schema), **w.args(value)}
        )
        for p in parents
    }
    params: dict[str, Any] = {
        "c": coll.name,
        "k": coll.pk,
        "g": w.path,
        "v": value,
        "pc": pcoll.name,
        "pk": pcoll.pk,
        "pw": pw,
        "pf": fld,
    }
    if not by_list:
        params["pks"] = [str(p.get(pcoll.pk)) for p in pool]

    def run(caller: Caller) -> Answer:
        if by_list:
            found = [p for p in caller.list_all(pcaps.lister, {}) if hit(p, pw)]
        else:
            found = [p for p in (fetch(caller, pcaps, r) for r in pool) if hit(p, pw)]
        for p in found:
            caller(caps.maker, calls[str(p.get(pcoll.pk))])
        return Answer(f"I added {len(found)} {noun_of(coll, len(found))}.", len(found))

    request = render(
        REQUESTS["create_each" if by_list else "create_given"],
        pnoun=pcoll.noun,
        pnouns=plural(pcoll.noun),
        keys=named(pcaps, pool) if not by_list else "",
        pcond=cond_text(pw),
        noun=coll.noun,
        nouns=plural(coll.noun),
        link="under" if caps.maker.params[arg].role == "scope" else "for",
        field=field_name(w.path),
        value=quote(value) + (f", {mk.text(caps)}" if mk.shared else ""),
    )
    if not by_list and not visible(pcaps, *(f for f, _ in pw)):
        return None
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

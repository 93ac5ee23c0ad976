"""Program templates that aggregate: ``extreme``, ``aggregate``, ``group_max``.

See :mod:`.templates` for the table of every template and the shared helpers.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel, humanize
from agentworld_gym.synthesis.tasks.programs import Caller, Caps, Program, address, hit, value_at
from agentworld_gym.synthesis.tasks.render import plural, quote
from agentworld_gym.synthesis.tasks.templates import (
    OP_WORDS,
    REQUESTS,
    Knobs,
    _cond_text,
    _conditions,
    _join,
    _listing,
    _value_for,
)
from agentworld_gym.synthesis.tasks.values import MISSING, typed

AGG = {"sum": sum, "avg": lambda v: sum(v) / len(v), "max": max, "min": min}


def _number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


def extreme(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    pool = [
        c
        for c in all_caps.values()
        if c.updater and c.coll.profile.numeric and c.coll.profile.labels and (c.lister or c.scoped)
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll = caps.coll
    listing = _listing(model, caps, rng)
    if listing is None:
        return None
    hidden = listing.tool.hidden
    nf = rng.choice(coll.profile.numeric)
    lf = coll.profile.labels[0]
    w = rng.choice(caps.writable)
    if nf in hidden or lf in hidden or w.path in (nf, lf):
        return None
    rows = [r for r in listing.rows if _number(r.get(nf))]
    top = rng.random() < 0.5
    ranked = sorted(rows, key=lambda r: r[nf], reverse=top)
    if len(ranked) < 3 or ranked[0][nf] == ranked[1][nf]:
        return None
    best = ranked[0]
    value = _value_for(w, caps, [best], rng)
    if value is MISSING or str(best.get(lf)) in str(value):
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "w": listing.where,
        "nf": nf,
        "max": top,
        "g": w.path,
        "v": value,
        "lf": lf,
    }

    def run(caller: Caller) -> str:
        found = [r for r in caller.list_all(listing.tool, listing.args) if _number(r.get(nf))]
        pick = sorted(found, key=lambda r: r[nf], reverse=top)[0]
        caller(caps.updater, {**address(caps.updater, coll, pick), **w.args(value)})
        return f"It is {pick.get(lf)}."

    request = REQUESTS["extreme"].render(
        noun=coll.noun,
        scope=listing.phrase,
        cond="",
        dir="highest" if top else "lowest",
        num=humanize(nf),
        field=humanize(w.path.split(".")[-1]),
        value=quote(value),
        label=humanize(lf),
    )
    return Program(
        "extreme",
        "extreme",
        params,
        request,
        ["aggregate", "conditional_write"],
        "text",
        f"p:extreme:{coll.name}:{nf}",
        2,
        run,
    )


def aggregate(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """A total, average, extreme or count over the records matching conditions."""
    pool = [
        c
        for c in all_caps.values()
        if (c.coll.profile.numeric or c.coll.profile.categorical) and (c.lister or c.scoped)
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll = caps.coll
    listing = _listing(model, caps, rng)
    if listing is None:
        return None
    count = not coll.profile.numeric or rng.random() < 0.35
    nf = "" if count else rng.choice(coll.profile.numeric)
    if nf in listing.tool.hidden:
        return None
    join = _join(model, all_caps, caps, rng) if rng.random() < 0.5 else None
    rows = listing.rows
    if join is not None:
        rows = [r for r in rows if str(r.get(join[0])) in join[3]]
    where: list[list[Any]] = []
    if count or rng.random() < 0.6:
        options = _conditions(caps, rows, {nf}, rng, Knobs(2, len(rows)), listing.tool.hidden)
        if options:
            where, rows = rng.choice(options)
        elif count:
            return None
    values = rows if count else [r[nf] for r in rows if _number(r.get(nf))]
    if len(values) < 2:
        return None
    op = "count" if count else rng.choice(["sum", "avg", "max", "min"] if join else ["sum", "avg"])
    truth = len(values) if count else AGG[op](values)
    if abs(truth) >= 1e12:
        return None
    params = {"c": coll.name, "k": coll.pk, "w": listing.where + where, "nf": nf, "op": op}
    params["tol"] = 0.01
    cond = _cond_text(where)
    if join is not None:
        fld, pcaps, pw, _ = join
        params.update(pc=pcaps.coll.name, pk=pcaps.coll.pk, pw=pw, pf=fld)
        cond += (" and" if cond else "") + f" that belong to a {pcaps.coll.noun}" + _cond_text(pw)

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
        if count:
            return f"There are {len(found)}."
        x = AGG[op]([r[nf] for r in found if _number(r.get(nf))])
        return f"The {OP_WORDS[op]} {humanize(nf)} is {_fmt(x)}."

    template = REQUESTS["count" if count else "aggregate"]
    request = template.render(
        op=OP_WORDS.get(op, ""),
        num=humanize(nf),
        nouns=plural(coll.noun),
        scope=listing.phrase,
        cond=cond,
    )
    flow = ["loop", "aggregate"] + (["filter"] if where else []) + (["join"] if join else [])
    return Program(
        "aggregate",
        "aggregate",
        params,
        request,
        flow,
        "number",
        f"p:agg:{coll.name}:{nf or where}",
        3 if join else 2,
        run,
        writes_expected=False,
    )


def group_max(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    options = []
    for caps in all_caps.values():
        for fld, pc in caps.coll.references.items():
            pcaps = all_caps.get(pc)
            if pcaps is None or pcaps.lister is None or not pcaps.coll.profile.labels:
                continue
            if not pcaps.visibility.complete(pcaps.lister, {}, pcaps.coll, pcaps.coll.records):
                continue
            if caps.lister is not None and not caps.visibility.complete(
                caps.lister, {}, caps.coll, caps.coll.records
            ):
                continue
            scoped = [
                (t, req[0][0]) for t, req in caps.scoped if len(req) == 1 and req[0][1] == fld
            ]
            if caps.lister is not None or scoped:
                options.append((caps, fld, pcaps, scoped))
    if not options:
        return None
    caps, fld, pcaps, scoped = rng.choice(options)
    coll, pcoll = caps.coll, pcaps.coll
    lf = pcoll.profile.labels[0]
    per_parent = bool(scoped) and (caps.lister is None or knobs.long or rng.random() < 0.5)
    pw: list[list[Any]] = []
    parents = pcoll.records
    if rng.random() < 0.4:
        opts = _conditions(pcaps, parents, set(), rng, Knobs(2, len(parents)), frozenset())
        if opts:
            pw, parents = rng.choice(opts)
    counts: dict[str, int] = {}
    for r in coll.records:
        counts[str(r.get(fld))] = counts.get(str(r.get(fld)), 0) + 1
    ranked = sorted((counts.get(str(p.get(pcoll.pk)), 0) for p in parents), reverse=True)
    if not ranked or ranked[0] == 0 or (len(ranked) > 1 and ranked[0] == ranked[1]):
        return None
    n_calls = 1 + (len(parents) if per_parent else 1)
    if n_calls > knobs.max_calls or (per_parent and len(parents) < 2):
        return None
    params = {
        "c": coll.name,
        "w": [],
        "pc": pcoll.name,
        "pk": pcoll.pk,
        "pw": pw,
        "pf": fld,
        "lf": lf,
    }
    tool, arg = scoped[0] if per_parent else (caps.lister, "")

    def run(caller: Caller) -> str:
        found = [p for p in caller.list_all(pcaps.lister, {}) if hit(p, pw)]
        tally: dict[str, int] = {}
        if per_parent:
            for p in found:
                key = str(p.get(pcoll.pk))
                args = {arg: typed(p.get(pcoll.pk), tool.params[arg].schema)}
                tally[key] = len(caller.list_all(tool, args))
        else:
            for r in caller.list_all(tool, {}):
                tally[str(value_at(r, fld))] = tally.get(str(value_at(r, fld)), 0) + 1
        best = max(found, key=lambda p: tally.get(str(p.get(pcoll.pk)), 0))
        n = tally.get(str(best.get(pcoll.pk)), 0)
        return f"{best.get(lf)} has the most, with {n}."

    request = REQUESTS["group_max"].render(
        pnoun=pcoll.noun, pcond=_cond_text(pw), nouns=plural(coll.noun), cond="", label=humanize(lf)
    )
    flow = ["loop", "join", "aggregate"] + (["filter"] if pw else [])
    return Program(
        "group_max",
        "groupmax",
        params,
        request,
        flow,
        "mixed",
        f"p:group:{coll.name}:{fld}",
        3 if per_parent else 2,
        run,
        writes_expected=False,
    )

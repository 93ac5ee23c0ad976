"""Program templates that aggregate: ``extreme``, ``aggregate``, ``group_max``,
``children_agg``.

See :mod:`agentworld_gym.synthesis.tasks.sample.templates` for the table of every template and the
shared helpers.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.request.program import Verbs, pick
from agentworld_gym.synthesis.tasks.request.render import cap, plural, quote, series
from agentworld_gym.synthesis.tasks.sample.programs import (
    Answer,
    Caller,
    Caps,
    Program,
    hit,
    setting,
    value_at,
)
from agentworld_gym.synthesis.tasks.sample.templates.shapes import (
    AGG,
    Knobs,
    choose_listed,
    conditions,
    field_name,
    fmt,
    join_parent,
    listed,
    number,
    value_for,
)
from agentworld_gym.synthesis.tasks.values import MISSING, typed


def extreme(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    found = choose_listed(
        model,
        all_caps,
        rng,
        lambda c: c.updater and c.coll.profile.numeric and c.coll.profile.labels,
    )
    if found is None:
        return None
    caps, source = found
    coll = caps.coll
    hidden = source.tool.hidden
    nf = rng.choice(coll.profile.numeric)
    lf = coll.profile.labels[0]
    w = rng.choice(caps.writable)
    if nf in hidden or lf in hidden or w.path in (nf, lf):
        return None
    rows = [r for r in source.rows if number(r.get(nf))]
    top = rng.random() < 0.5
    ranked = sorted(rows, key=lambda r: r[nf], reverse=top)
    if len(ranked) < 3 or ranked[0][nf] == ranked[1][nf]:
        return None
    best = ranked[0]
    value = value_for(w, caps, [best], rng)
    if value is MISSING or str(best.get(lf)) in str(value):
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "w": source.where,
        "nf": nf,
        "max": top,
        "g": w.path,
        "v": value,
        "lf": lf,
    }

    scope = say.scope_ref(model, all_caps, caps, source.tool, source.where)

    def run(caller: Caller) -> Answer:
        scope.find(caller)
        found = [r for r in caller.list_all(source.tool, source.args) if number(r.get(nf))]
        pick = sorted(found, key=lambda r: r[nf], reverse=top)[0]
        caller(caps.updater, setting(caps.updater, coll, pick, w, value))
        return Answer(f"It is {pick.get(lf)}.", pick.get(lf))

    verbs, fld, num = Verbs(model), field_name(w.path), say.label_of(nf)
    dir_, label = say.extreme(nf, top), say.label_of(lf)
    one = f"{coll.noun}{scope.text}"

    def put(obj: str) -> str:
        return verbs.update(caps.updater, rng, obj, fld, quote(value), coll.noun)

    request = pick(
        rng,
        [
            f"Which {one} has the {dir_} {num}? {cap(put('that one'))}, and tell me its {label}.",
            cap(put(f"the {one} with the {dir_} {num}")) + f", then tell me its {label}.",
            f"I need the {label} of the {one} with the {dir_} {num} — and please {put('it')}.",
        ],
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
    found = choose_listed(
        model, all_caps, rng, lambda c: c.coll.profile.numeric or c.coll.profile.categorical
    )
    if found is None:
        return None
    caps, source = found
    coll = caps.coll
    count = not coll.profile.numeric or rng.random() < 0.35
    nf = "" if count else rng.choice(coll.profile.numeric)
    if nf in source.tool.hidden:
        return None
    join = join_parent(all_caps, caps, rng) if rng.random() < 0.5 else None
    rows = source.rows
    if join is not None:
        rows = [r for r in rows if str(r.get(join.field)) in join.keys]
    where: list[list[Any]] = []
    if count or rng.random() < 0.6:
        options = conditions(caps, rows, {nf}, rng, Knobs(2, len(rows)), source.tool.hidden)
        if options:
            where, rows = rng.choice(options)
        elif count:
            return None
    op = "count" if count else rng.choice(["sum", "avg", "max", "min"] if join else ["sum", "avg"])
    truth = tally(rows, op, nf)
    if truth is None:
        return None
    params = {"c": coll.name, "k": coll.pk, "w": source.where + where, "nf": nf, "op": op}
    params["tol"] = 0.01
    scope = say.scope_ref(model, all_caps, caps, source.tool, source.where)
    tail = scope.text
    if join is not None:
        params.update(join.params(), pf=join.field)
        tail += f" belonging to {say.np(join.caps.coll.noun, join.where, rng)}"

    def run(caller: Caller) -> Answer:
        scope.find(caller)
        return answer(listed(caller, source, where, join), op, nf)

    records = say.np(coll.noun, where, rng, tail=tail)
    if count:
        request = pick(
            rng,
            [
                f"How many {records} are there?",
                f"Count the {records} for me.",
                f"I need the number of {records}.",
                f"Tell me how many {records} there are.",
            ],
        )
    else:
        what = say.measure(op, nf)
        request = pick(
            rng,
            [
                f"What is the {what} of the {records}?",
                f"Across all {records}, what's the {what}?",
                f"I need the {what} of the {records}.",
                f"Work out the {what} of the {records} for me.",
            ],
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


def tally(rows: list[dict[str, Any]], op: str, nf: str) -> float | None:
    """The ground truth of ``op`` over ``rows`` (``None`` when too few values or too big)."""
    values = rows if op == "count" else [r[nf] for r in rows if number(r.get(nf))]
    if len(values) < 2:
        return None
    truth = len(values) if op == "count" else AGG[op](values)
    return None if abs(truth) >= 1e12 else truth


def answer(rows: list[dict[str, Any]], op: str, nf: str) -> str:
    """The program's report of ``op`` over the records it read."""
    if op == "count":
        return Answer(f"There are {len(rows)}.", len(rows))
    x = AGG[op]([r[nf] for r in rows if number(r.get(nf))])
    return Answer(f"The {say.measure(op, nf)} is {fmt(x)}.", x, tolerance=0.01)


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
        opts = conditions(pcaps, parents, set(), rng, Knobs(2, len(parents)), frozenset())
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
    if say.too_long(n_calls, 2, n_calls - 1):
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

    def run(caller: Caller) -> Answer:
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
        return Answer(f"{best.get(lf)} has the most, with {n}.", best.get(lf), n)

    one, many = say.np(pcoll.noun, pw, rng, False), say.np(pcoll.noun, pw, rng)
    nouns, label = plural(coll.noun), say.label_of(lf)
    request = pick(
        rng,
        [
            f"Which {one} has the most {nouns}? Tell me its {label} and how many {nouns} it has.",
            f"Among the {many}, find the one with the most {nouns}; I need its {label} and the "
            "count.",
            f"I'm looking for the {one} with the largest number of {nouns}: what is its {label}, "
            "and how many does it have?",
        ],
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


def children_agg(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """For the parents the request names: list each one's children, filter, count or total."""
    if not knobs.given:
        return None
    options = [
        (c, tool, req[0])
        for c in all_caps.values()
        for tool, req in c.scoped
        if len(req) == 1 and (c.coll.profile.numeric or c.coll.profile.categorical)
    ]
    if not options:
        return None
    caps, tool, (arg, fld, pref) = rng.choice(options)
    coll = caps.coll
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in coll.records:
        if isinstance(r.get(fld), str | int) and not isinstance(r.get(fld), bool):
            groups.setdefault(str(r[fld]), []).append(r)
    hi = min(knobs.max_calls - 1, say.MAX_ITEMS if knobs.long else 5)
    n = min(len(groups), rng.randint(max(2, knobs.min_calls), max(2, knobs.min_calls, hi)))
    if n < max(2, knobs.min_calls) or len(groups) < 2:
        return None
    keys = rng.sample(sorted(groups), n)
    named = [say.parent_name(all_caps, pref, groups[k][0][fld]) for k in keys]
    listers = list({id(t): t for _, t in named if t is not None}.values())
    if len(listers) < len(named) and len(keys) > say.MAX_IDS:  # some go by raw key
        keys, named = keys[: say.MAX_IDS], named[: say.MAX_IDS]
        listers = list({id(t): t for _, t in named if t is not None}.values())
    if say.too_long(len(keys) + len(listers), 1 + len(listers), len(keys)):
        return None
    ref = say.Ref(series([text for text, _ in named]), listers)
    schema = tool.params[arg].schema
    rows = [r for k in keys for r in groups[k]]
    for k in keys:
        args = {arg: typed(groups[k][0][fld], schema)}
        if not caps.visibility.complete(tool, args, coll, groups[k]):
            return None
    numeric = [f for f in coll.profile.numeric if f not in tool.hidden]
    count = not numeric or rng.random() < 0.4
    nf = "" if count else rng.choice(numeric)
    where: list[list[Any]] = []
    options_w = conditions(caps, rows, {fld, nf}, rng, Knobs(1, len(rows)), tool.hidden)
    if options_w and (count or rng.random() < 0.5):
        where, rows = rng.choice(options_w)
    elif count:
        return None
    op = "count" if count else rng.choice(["sum", "avg", "max", "min"])
    if tally(rows, op, nf) is None and op != "count":
        return None
    params = {
        "c": coll.name,
        "k": coll.pk,
        "w": where,
        "nf": nf,
        "op": op,
        "tol": 0.01,
        "pf": fld,
        "pks": keys,
    }

    def run(caller: Caller) -> Answer:
        ref.find(caller)
        found = []
        for k in keys:
            args = {arg: typed(groups[k][0][fld], schema)}
            found += [r for r in caller.list_all(tool, args) if hit(r, where)]
        return answer(found, op, nf)

    pnoun = say.scope_noun(model, tool, arg, fld, pref)
    parents = f"{plural(pnoun)} {ref.text}"
    if count:
        records = say.np(coll.noun, where, rng)
        request = pick(
            rng,
            [
                f"How many {records} do the {parents} have between them?",
                f"Across the {parents}, how many of their {plural(coll.noun)} "
                f"{say.pred(where, rng)}?",
                f"I need to know how many {records} belong to the {parents}.",
                f"Count the {records} of the {parents} for me.",
            ],
        )
    else:
        what = say.measure(op, nf)
        records = say.np(coll.noun, where, rng)
        request = pick(
            rng,
            [
                f"What is the {what} of the {records} of the {parents}?",
                f"Across the {parents}, what's the {what} of their {records}?",
                f"I need the {what} of the {records} belonging to the {parents}.",
            ],
        )
    flow = ["loop", "join", "aggregate"] + (["filter"] if where else [])
    return Program(
        "children_agg",
        "aggregate",
        params,
        request,
        flow,
        "number",
        f"p:children:{coll.name}:{keys[0]}",
        2,
        run,
        writes_expected=False,
    )

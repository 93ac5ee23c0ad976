"""Program templates over listings: ``bulk_update``, ``bulk_delete``, ``sweep``,
``branch_update``, ``create_each`` and ``update_create_each``.

See :mod:`agentworld_gym.synthesis.tasks.sample.templates` for the table of every template;
:mod:`.shapes` holds what they share.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel, looks_like_id
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.request.program import Verbs, pick
from agentworld_gym.synthesis.tasks.request.render import cap, plural, quote
from agentworld_gym.synthesis.tasks.sample.programs import (
    Answer,
    Caller,
    Caps,
    Program,
    address,
    hit,
    setting,
    value_at,
)
from agentworld_gym.synthesis.tasks.sample.templates.shapes import (
    Knobs,
    choose_listed,
    conditions,
    fetch,
    field_name,
    given,
    id_value,
    join_parent,
    listed,
    making,
    noun_of,
    round_cut,
    settings,
    value_for,
    visible,
)
from agentworld_gym.synthesis.tasks.values import MISSING, fresh_text, schema_type, typed

__all__ = ["Knobs", "branch", "bulk", "create_each", "sweep", "update_create_each"]

ASK = [
    " Then tell me how many {nouns} you {did}.",
    " Let me know how many you {did}.",
    " How many {nouns} were {did}?",
]


def bulk(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs, op: str
) -> Program | None:
    found = choose_listed(
        model,
        all_caps,
        rng,
        lambda c: c.updater if op == "update" else c.deleter,
        across=True,
        long=knobs.long,
    )
    if found is None:
        return None
    caps, source = found
    coll = caps.coll
    join = join_parent(all_caps, caps, rng) if rng.random() < 0.4 and not source.over else None
    rows = source.rows
    if join is not None:
        rows = [r for r in rows if str(r.get(join.field)) in join.keys]
    settable = settings(caps, rows) if op == "update" else []
    if op == "update" and not settable:
        return None
    w = rng.choice(settable) if op == "update" else None
    avoid = {w.path} if w else set()
    avoid |= {f for f, _ in source.where}
    options = conditions(caps, rows, avoid, rng, knobs, source.tool.hidden)
    if not options:
        return None
    where, targets = max(options, key=lambda o: len(o[1])) if knobs.long else rng.choice(options)
    if w and any(field_name(f) == field_name(w.path) for f, _ in where):
        return None  # "change the status of the ones with status "enabled" to ..." (a twin field)
    value = value_for(w, caps, targets, rng) if w else None
    if w and (value is MISSING or id_value(value)):
        return None
    scope = say.scope_ref(model, all_caps, caps, source.tool, source.where)
    n_calls = source.reads + bool(join) + len(scope.listers) + len(targets)
    tools = 1 + source.tools + bool(join) + len(scope.listers)
    if n_calls > knobs.max_calls or say.too_long(n_calls, tools, len(targets)):
        return None
    tool = caps.updater if op == "update" else caps.deleter
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": source.where + where}
    params.update(source.params())
    tail = scope.text + (source.phrase if source.over else "")
    if join is not None:
        params.update(join.params(), pf=join.field)
        parents = say.np(join.caps.coll.noun, join.where, rng)
        tail += pick(rng, [f" belonging to {parents}", f" that belong to {parents}"])
    if w:
        params.update(g=w.path, v=value)

    def run(caller: Caller) -> Answer:
        scope.find(caller)
        found = listed(caller, source, where, join)
        for r in found:
            if w is None:
                caller(tool, address(tool, coll, r))
            elif value_at(r, w.path) != value:
                caller(tool, setting(tool, coll, r, w, value))
        verb = "updated" if w else "deleted"
        return Answer(f"I {verb} {len(found)} {noun_of(coll, len(found))}.", len(found))

    request = _bulk_request(
        Verbs(model),
        tool,
        rng,
        coll.noun,
        say.np(coll.noun, where, rng, tail=tail),
        where,
        tail,
        w,
        value,
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


def _bulk_request(
    verbs: Verbs,
    tool: Any,
    rng: random.Random,
    noun: str,
    records: str,
    where: list[list[Any]],
    tail: str,
    w: Any,
    value: Any,
) -> str:
    """ "Set the status of all offline devices in group "G" to "retired" ..." in one of
    several phrasings (or "Delete ..." with the deleter's own verb)."""
    kind = "update" if w else "delete"

    def act(obj: str) -> str:
        if w is None:
            return verbs.delete(tool, rng, obj)
        return verbs.update(tool, rng, obj, field_name(w.path), quote(value), noun)

    nouns, did = plural(noun), verbs.done(tool, kind)
    ask = pick(rng, ASK).format(nouns=nouns, did=did)
    among = f"Among the {nouns}{tail}, {act(say.ones(where, rng))}" if where else ""
    text = pick(
        rng,
        [
            cap(act(f"all {records}")) + "." + ask,
            f"Could you {act('every one of the ' + records)}?" + ask,
            among + "." + ask if among else "",
        ],
    )
    return text


def sweep(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """A clean-up: delete the listed records matching a condition and set a field on every
    other one ("remove the revoked keys and mark the rest as reviewed"). Three tools (four
    when the scope is found by name), and the listing decides which write each record gets;
    report how many were deleted."""
    found = choose_listed(
        model,
        all_caps,
        rng,
        lambda c: c.updater and c.deleter and c.coll.profile.categorical,
        across=True,
        long=knobs.long,
    )
    if found is None:
        return None
    caps, source = found
    coll, rows = caps.coll, source.rows
    states = settings(caps, rows)
    if not states:
        return None
    w = rng.choice(states)
    avoid = {w.path} | {f for f, _ in source.where}
    options = [
        (where, gone)
        for where, gone in conditions(
            caps, rows, avoid, rng, Knobs(1, len(rows) - 1), source.tool.hidden
        )
        if not any(id_value(v) or looks_like_id(f) for f, v in where)
    ]
    if not options:
        return None
    where, gone = rng.choice(options)
    rest = [r for r in rows if not hit(r, where)]
    value = value_for(w, caps, rest, rng)
    if (
        not rest
        or value is MISSING
        or id_value(value)
        or Verbs(model).of(caps.updater).op != "update"
    ):
        return None
    scope = say.scope_ref(model, all_caps, caps, source.tool, source.where)
    n_calls = source.reads + len(scope.listers) + len(rows)
    if n_calls > knobs.max_calls or (knobs.long and n_calls < knobs.min_calls):
        return None
    tools = 2 + source.tools + len(scope.listers)
    if say.too_long(n_calls, tools, max(len(gone), len(rest))):
        return None
    deleter, updater = caps.deleter, caps.updater
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": source.where, "wc": where}
    params.update(g=w.path, v=value, **source.params())

    def run(caller: Caller) -> Answer:
        scope.find(caller)
        found = source.read(caller)
        n = 0
        for r in found:
            if hit(r, where):
                caller(deleter, address(deleter, coll, r))
                n += 1
            elif value_at(r, w.path) != value:
                caller(updater, setting(updater, coll, r, w, value))
        return Answer(f"I deleted {n} {noun_of(coll, n)}.", n)

    verbs, nouns = Verbs(model), plural(coll.noun)
    tail = scope.text + (source.phrase if source.over else "")
    drop = verbs.delete(deleter, rng, say.ones(where, rng))
    keep = verbs.update(
        updater, rng, "every other one", field_name(w.path), quote(value), coll.noun
    )
    rest_ = verbs.update(updater, rng, "the rest", field_name(w.path), quote(value), coll.noun)
    did = verbs.done(deleter, "delete")
    ask = pick(rng, [f" Then tell me how many you {did}.", f" How many {nouns} were {did}?"])
    request = pick(
        rng,
        [
            f"Time to clean up the {nouns}{tail}: {drop}, and {keep}." + ask,
            f"Go through the {nouns}{tail}: {drop}; {rest_}." + ask,
            f"Among the {nouns}{tail}, {drop} and {rest_}." + ask,
        ],
    )
    return Program(
        "sweep",
        "sweep",
        params,
        request,
        ["loop", "filter", "branch", "conditional_write"],
        "number",
        f"p:sweep:{coll.name}:{where}",
        2,
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
    states = settings(caps, source.rows)  # written to many records: a setting, not a name
    if not nf or not states:
        return None
    w = rng.choice(states)
    if w.path == nf:
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
    t = round_cut(t, nums)
    a = value_for(w, caps, [], rng)
    b = value_for(w, caps, [], rng)
    if a is MISSING or b is MISSING or a == b:
        return None

    def want(r: dict) -> Any:
        x = value_at(r, nf)
        return a if isinstance(x, int | float) and x > t else b

    writes = sum(1 for r in rows if value_at(r, w.path) != want(r))
    scope = say.scope_ref(model, all_caps, caps, source.tool, source.where)
    n_calls = 1 + len(scope.listers) + writes
    if n_calls > knobs.max_calls or writes == 0:
        return None
    if say.too_long(n_calls, 2 + len(scope.listers), writes):
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
        scope.find(caller)
        found = [r for r in caller.list_all(source.tool, source.args) if hit(r, where)]
        for r in found:
            if value_at(r, w.path) != want(r):
                caller(caps.updater, setting(caps.updater, coll, r, w, want(r)))
        n = sum(1 for r in found if want(r) == a)
        return Answer(f"{n} {noun_of(coll, n)} ended up with {a}.", n)

    verbs, fld, num = Verbs(model), field_name(w.path), say.label_of(nf)
    tool = caps.updater

    def put(obj: str, value: Any) -> str:
        return verbs.update(tool, rng, obj, fld, quote(value), coll.noun)

    every = say.np(coll.noun, where, rng, tail=scope.text)
    one = say.np(coll.noun, where, rng, False, scope.text)
    hi = f"those {say.above(rng, num, t)}"
    request = pick(
        rng,
        [
            f"Across all {every}, {put(hi, a)} and {put('the rest', b)}. How many ended up "
            f"with {quote(a)}?",
            f"For every {one}: if its {num} is above {t}, {put('it', a)}; otherwise "
            f"{put('it', b)}. Then tell me how many ended up with {quote(a)}.",
            ""
            if scope.text
            else f"How many {every} have {say.a(num)} over {t}? {cap(put(hi, a))} and "
            f"{put('the others', b)}, and tell me that count.",
            ""
            if verbs.of(tool).op != "update"
            else f"I want the {fld} of every {one} to follow its {num}: {quote(a)} when the "
            f"{num} is above {t}, {quote(b)} otherwise; please {verbs.word(tool, rng, 'update')} "
            f"them accordingly, and tell me how many got {quote(a)}.",
        ],
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
    strings = _free_texts(caps, arg)
    if not strings:
        return None
    w = rng.choice(strings)
    value = fresh_text(rng, w.path, coll.noun)
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
        pool = given(pcaps, rng, rng.randint(lo, max(lo, min(say.MAX_ITEMS, knobs.max_calls // 2))))
        pool, ref = say.refer_some(pcaps, pool, all_caps=all_caps)
        hidden = pcaps.getter.hidden if pcaps.getter else frozenset()
        if len(pool) < 3:
            return None
    sub = Knobs(1 if not by_list else knobs.lo, knobs.hi)
    opts = conditions(pcaps, pool, set(), rng, sub, hidden)
    if not opts:
        return None
    pw, parents = max(opts, key=lambda o: len(o[1])) if knobs.long else rng.choice(opts)
    if by_list:
        ref = say.Ref("")
    n_calls = (1 if by_list else len(pool) + len(ref.listers)) + len(parents)
    if n_calls > knobs.max_calls:
        return None
    if say.too_long(n_calls, 2 + len(ref.listers), max(len(parents), len(pool) * (not by_list))):
        return None
    made = _one_each(model, caps, rng, knobs, (arg, fld, pcoll), (w, value), parents, pw)
    if made is None:
        return None
    mk, calls, params = made
    if not by_list:
        params["pks"] = [str(p.get(pcoll.pk)) for p in pool]

    def run(caller: Caller) -> Answer:
        if by_list:
            found = [p for p in caller.list_all(pcaps.lister, {}) if hit(p, pw)]
        else:
            ref.find(caller)
            found = [p for p in (fetch(caller, pcaps, r) for r in pool) if hit(p, pw)]
        for p in found:
            caller(caps.maker, calls[str(p.get(pcoll.pk))])
        return Answer(f"I added {len(found)} {noun_of(coll, len(found))}.", len(found))

    verbs, link = Verbs(model), "under" if caps.maker.params[arg].role == "scope" else "for"
    details = f"with {field_name(w.path)} {quote(value)}" + (
        f", {mk.text(caps)}" if mk.shared else ""
    )
    one = say.a(coll.noun)

    def make(what: str) -> str:
        return verbs.create(caps.maker, rng, what)

    ask = pick(rng, ASK).format(nouns=plural(coll.noun), did=verbs.done(caps.maker, "create"))
    if by_list:
        each = say.np(pcoll.noun, pw, rng, False)
        request = pick(
            rng,
            [
                cap(make(f"{one} {link} each {each} {details}")) + "." + ask,
                f"Every {each} needs {one} {details}: please {make(f'one {link} each of them')}."
                + ask,
            ],
        )
    else:
        those = say.ones(pw, rng)
        request = pick(
            rng,
            [
                f"Of the {plural(pcoll.noun)} {ref.text}, {make(f'{one} {link} each of {those}')} "
                f"{details}." + ask,
                f"For the {plural(pcoll.noun)} {ref.text}: "
                + make(f"{one} {details} {link} every one that {say.pred(pw, rng, False)}")
                + "."
                + ask,
                f"Look through the {plural(pcoll.noun)} {ref.text} and {make(f'{one} {details}')} "
                f"{link} each of {those}." + ask,
            ],
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


def update_create_each(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """For every listed parent matching a condition: set a field of it and create a child
    linked to it ("mark every overdue invoice as disputed and add a note to each") — three
    tools whose every write depends on the listing; report how many."""
    options = [
        (c, link, all_caps[link[2]])
        for c in all_caps.values()
        if c.maker is not None
        for link in c.links
        if link[2] in all_caps
        and link[2] != c.coll.name
        and all_caps[link[2]].lister is not None
        and all_caps[link[2]].updater is not None
        and all_caps[link[2]].writable
    ]
    if not options:
        return None
    caps, (arg, fld, _), pcaps = rng.choice(options)
    coll, pcoll = caps.coll, pcaps.coll
    strings = _free_texts(caps, arg)
    if not strings or not pcaps.visibility.complete(pcaps.lister, {}, pcoll, pcoll.records):
        return None
    # a state many records share ("status", "priority"), not a name or a description
    states = [x for x in pcaps.writable if x.path in pcoll.profile.categorical]
    if not states:
        return None
    w, pwr = rng.choice(strings), rng.choice(states)
    value = fresh_text(rng, w.path, coll.noun)
    opts = conditions(
        pcaps, pcoll.records, {pwr.path}, rng, Knobs(knobs.lo, knobs.hi), pcaps.lister.hidden
    )
    if not opts:
        return None
    pw, parents = max(opts, key=lambda o: len(o[1])) if knobs.long else rng.choice(opts)
    pvalue = value_for(pwr, pcaps, parents, rng)
    if pvalue is MISSING:
        return None
    n_calls = 1 + 2 * len(parents)
    if n_calls > knobs.max_calls or say.too_long(n_calls, 3, len(parents)):
        return None
    made = _one_each(model, caps, rng, knobs, (arg, fld, pcoll), (w, value), parents, pw)
    if made is None:
        return None
    mk, calls, params = made
    params.update(pg=pwr.path, pv=pvalue)
    updater, verbs = pcaps.updater, Verbs(model)
    if verbs.of(updater).op != "update":
        return None  # an action ("cancel", "start") is not a field being set

    def run(caller: Caller) -> Answer:
        found = [p for p in caller.list_all(pcaps.lister, {}) if hit(p, pw)]
        for p in found:
            caller(updater, setting(updater, pcoll, p, pwr, pvalue))
            caller(caps.maker, calls[str(p.get(pcoll.pk))])
        return Answer(f"I updated {len(found)} {noun_of(pcoll, len(found))}.", len(found))

    link = "under" if caps.maker.params[arg].role == "scope" else "for"
    details = f"with {field_name(w.path)} {quote(value)}" + (
        f", {mk.text(caps)}" if mk.shared else ""
    )
    one, many = say.a(coll.noun), plural(pcoll.noun)
    each = say.np(pcoll.noun, pw, rng)
    change = verbs.update(updater, rng, "them", field_name(pwr.path), quote(pvalue), pcoll.noun)
    make = verbs.create(caps.maker, rng, f"{one} {details} {link} each")
    ask = pick(rng, ASK).format(nouns=many, did=verbs.done(updater, "update"))
    request = pick(
        rng,
        [
            f"Find all {each}, {change} and {make}." + ask,
            f"All {each} need attention: {change}, and {make}." + ask,
            f"Could you go through the {many}? For those that {say.pred(pw, rng)}, "
            f"{change} and {make}." + ask,
        ],
    )
    if not visible(pcaps, *(f for f, _ in pw)):
        return None
    return Program(
        "update_create_each",
        "tend",
        params,
        request,
        ["loop", "filter", "join", "conditional_write"],
        "number",
        f"p:tend:{coll.name}:{pw}",
        2,
        run,
    )


def _free_texts(caps: Caps, arg: str) -> list[Any]:
    """The maker's free-text fields a new child can be told apart by (not its link ``arg``,
    an enum or a field no two records share)."""
    return [
        x
        for x in caps.make_fields
        if schema_type(x.schema) == "string"
        and not x.schema.get("enum")
        and x.param != arg
        and x.path not in caps.unique
    ]


def _one_each(
    model: EnvModel,
    caps: Caps,
    rng: random.Random,
    knobs: Knobs,
    link: tuple[str, str, Any],
    written: tuple[Any, Any],
    parents: list[dict[str, Any]],
    pw: list[list[Any]],
) -> tuple[Any, dict[str, dict[str, Any]], dict[str, Any]] | None:
    """How one child per parent is made: the maker's shared values, each parent's call
    (keyed by the parent's key) and the verification parameters (``None`` when the maker
    needs a value the request cannot give)."""
    (arg, fld, pcoll), (w, value) = link, written
    mk = making(model, caps, rng, {arg, w.param})
    if mk is None or mk.own or (not knobs.given and mk.names_keys(caps)):
        return None
    schema = caps.maker.params[arg].schema
    calls = {
        str(p.get(pcoll.pk)): mk.copy(
            {**mk.shared, arg: typed(p.get(pcoll.pk), schema), **w.args(value)}
        )
        for p in parents
    }
    coll = caps.coll
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "g": w.path, "v": value}
    params.update(pc=pcoll.name, pk=pcoll.pk, pw=pw, pf=fld)
    return mk, calls, params

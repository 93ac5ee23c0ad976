"""Program templates over records the request names: ``batch_read``, ``batch_update`` and
``batch_write``.

Many APIs cannot list a collection but can fetch one record by key (and the parents in its
path). These programs loop over the records the user names, fetch each, and filter,
aggregate, pick, branch or write — so an environment without list tools still gets programs,
and a long list of records gives a long-horizon task whose every call is needed.
``batch_write`` serves APIs that can only write: a loop of updates or deletes the request
spells out.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel, scalar
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.request.program import Verbs, pick
from agentworld_gym.synthesis.tasks.request.render import cap, quote
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
    AGG,
    Knobs,
    choose,
    fetch,
    field_name,
    fmt,
    given,
    id_value,
    noun_of,
    number,
    scope_fields,
    settings,
    value_for,
    visible,
)
from agentworld_gym.synthesis.tasks.values import MISSING, typed


def _readable(c: Caps) -> bool:
    prof = c.coll.profile
    return (
        c.getter is not None and len(c.coll.records) >= 3 and bool(prof.categorical or prof.numeric)
    )


def _condition(caps: Caps, chosen: list[dict], rng: random.Random, avoid: str = "") -> list:
    """``[[field, value]]`` met by some of ``chosen`` (a value one of them has): a state,
    never their name, another record's key or an id-shaped value."""
    coll = caps.coll
    fields = [
        f
        for f in coll.profile.categorical
        if f != avoid
        and visible(caps, f)
        and f not in coll.profile.names
        and f not in coll.references
    ]
    if not fields:
        return []
    f = rng.choice(fields)
    values = [r.get(f) for r in chosen if r.get(f) is not None and not id_value(r.get(f))]
    return [[f, rng.choice(values)]] if values else []


def _label(caps: Caps, chosen: list[dict]) -> str | None:
    """A label field that tells the chosen records apart (none is part of another)."""
    for lf in caps.coll.profile.labels:
        texts = [str(r.get(lf)).casefold() for r in chosen]
        if visible(caps, lf) and not any(a in b for a in texts for b in texts if a is not b):
            return lf
    return None


def batch_read(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Fetch each named record; count, total, pick among them or name those that match."""
    if not knobs.given:
        return None
    caps = choose(all_caps, rng, _readable)
    if caps is None:
        return None
    coll = caps.coll
    lo = max(knobs.min_calls, 3)
    n = rng.randint(lo, max(lo, min(say.MAX_ITEMS, knobs.max_calls)))
    chosen, ref = say.refer_some(caps, given(caps, rng, n), all_caps=all_caps)
    if len(chosen) < max(3, knobs.min_calls):
        return None
    modes = ["count", "which"] if coll.profile.categorical else []
    modes += ["sum", "pick"] * bool(coll.profile.numeric)
    mode = rng.choice(modes)
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": [], "ks": _keys(caps, chosen)}
    nf = rng.choice(coll.profile.numeric) if mode in ("sum", "pick") else ""
    where: list[list[Any]] = []
    if mode in ("count", "which") or (mode == "sum" and rng.random() < 0.5):
        where = _condition(caps, chosen, rng, nf)
        if not where and mode != "sum":
            return None
    rows = [r for r in chosen if hit(r, where)]
    lf = _label(caps, chosen) if mode in ("pick", "which") else ""
    if lf is None or (nf and not visible(caps, nf)):
        return None
    if mode == "pick":
        nums = sorted((r for r in chosen if number(r.get(nf))), key=lambda r: r[nf])
        top = rng.random() < 0.5
        ranked = nums[::-1] if top else nums
        if len(nums) < 3 or ranked[0][nf] == ranked[1][nf] or ranked[0] is chosen[0]:
            return None
        params.update(nf=nf, max=top, lf=lf)
    elif mode == "which":
        if not 2 <= len(rows) < len(chosen):
            return None
        params.update(w=where, lf=lf)
    else:
        op = "count" if mode == "count" else rng.choice(["sum", "avg", "max", "min"])
        if op != "count" and len([r for r in rows if number(r.get(nf))]) < 2:
            return None
        params.update(nf=nf, op=op, tol=0.01, w=where)

    def run(caller: Caller) -> Answer:
        ref.find(caller)
        got = [fetch(caller, caps, r) for r in chosen]
        if mode == "pick":
            nums = [r for r in got if number(r.get(nf))]
            best = sorted(nums, key=lambda r: r[nf], reverse=params["max"])[0]
            return Answer(f"It is {best.get(lf)}.", best.get(lf))
        matched = [r for r in got if hit(r, where)]
        if mode == "which":
            labels = [r.get(lf) for r in matched]
            return Answer("These: " + "; ".join(map(str, labels)) + ".", *labels)
        if mode == "count":
            return Answer(f"{len(matched)} of them.", len(matched))
        x = AGG[params["op"]]([r[nf] for r in matched if number(r.get(nf))])
        return Answer(f"The {say.measure(params['op'], nf)} is {fmt(x)}.", x, tolerance=0.01)

    request = _read_request(rng, mode, noun_of(coll, 2), ref.text, where, params, nf, lf or "")
    kind = {"pick": "pick", "which": "which"}.get(mode, "aggregate")
    flow = ["loop", "aggregate"] + (["filter"] if where else [])
    return Program(
        "batch_read",
        kind,
        params,
        request,
        flow,
        "text" if mode in ("pick", "which") else "number",
        f"p:batch:{coll.name}:{params['ks'][0]}",
        1,
        run,
        writes_expected=False,
    )


def _read_request(
    rng: random.Random,
    mode: str,
    nouns: str,
    keys: str,
    where: list[list[Any]],
    params: dict[str, Any],
    nf: str,
    lf: str,
) -> str:
    """A batch read's question in one of several phrasings."""
    these = f"the {nouns} {keys}"
    label, num = say.label_of(lf), say.label_of(nf)
    if mode == "count":
        p = say.pred(where, rng)
        return pick(
            rng,
            [
                f"Of {these}, how many {p}?",
                f"How many of {these} {p}?",
                f"I'm looking at {these}. Tell me how many of them {p}.",
            ],
        )
    if mode == "which":
        p = say.pred(where, rng)
        return pick(
            rng,
            [
                f"Which of {these} {p}? Tell me the {label} of each.",
                f"Of {these}, list the ones that {p}, with the {label} of each.",
                f"For whichever of {these} {p}, I need the {label}.",
            ],
        )
    if mode == "pick":
        d = say.extreme(nf, bool(params.get("max")))
        return pick(
            rng,
            [
                f"Among {these}, which has the {d} {num}? Tell me its {label}.",
                f"Which of {these} has the {d} {num}? I need its {label}.",
                f"Tell me the {label} of whichever of {these} has the {d} {num}.",
            ],
        )
    what = say.measure(params["op"], nf)
    those = f"those that {say.pred(where, rng)}" if where else "them"
    return pick(
        rng,
        [
            f"What is the {what} of {these}" + (f" that {say.pred(where, rng)}?" if where else "?"),
            f"Across {these}, what's the {what} of {those}?",
            f"Could you work out the {what} of {these}"
            + (f", counting only {those}?" if where else "?"),
        ],
    )


def _keys(caps: Caps, chosen: list[dict[str, Any]]) -> list[str]:
    return [str(r[caps.coll.pk]) for r in chosen]


def batch_update(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Fetch each named record; update or delete those matching a condition, set one value on
    those that match and another on the rest, delete those that match and set a value on the
    rest (a clean-up: four tools where the records are found by name), or update the one with
    the highest number."""
    if not knobs.given:
        return None
    caps = choose(all_caps, rng, lambda c: _readable(c) and (c.updater or c.deleter))
    if caps is None:
        return None
    coll = caps.coll
    # one value on several records (update, else, sweep): a setting, never a name or a title
    states = settings(caps, coll.records) if caps.updater else []
    labelled = caps.updater and coll.profile.numeric and coll.profile.labels and caps.writable
    modes = ["update", "else"] * bool(states and coll.profile.categorical)
    modes += ["best"] * bool(labelled)
    modes += ["delete"] * bool(caps.deleter and coll.profile.categorical)
    clean = states and caps.deleter and Verbs(model).of(caps.updater).op == "update"
    modes += ["sweep"] * 2 * bool(clean and coll.profile.categorical)
    if not modes:
        return None
    # a long errand is the clean-up where it can be (four tools, not three)
    mode = "sweep" if knobs.long and "sweep" in modes else rng.choice(modes)
    fields = caps.writable if mode == "best" else states
    w = rng.choice(fields) if mode != "delete" else None
    lo = max(3, (knobs.min_calls + 1) // 2)
    n = rng.randint(lo, max(lo, min(say.MAX_ITEMS, knobs.max_calls // 2 + 1)))
    chosen, ref = say.refer_some(caps, given(caps, rng, n), all_caps=all_caps)
    if len(chosen) < lo:
        return None
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": [], "ks": _keys(caps, chosen)}
    nf = lf = ""
    if mode == "best":
        nf, lf = rng.choice(coll.profile.numeric), _label(caps, chosen)
        nums = sorted((r for r in chosen if number(r.get(nf))), key=lambda r: r[nf])
        top = rng.random() < 0.5
        ranked = nums[::-1] if top else nums
        if lf is None or not visible(caps, nf) or w.path in (nf, lf) or len(nums) < 3:
            return None
        if ranked[0][nf] == ranked[1][nf]:
            return None
        where: list[list[Any]] = []
        targets = [ranked[0]]
        params.update(nf=nf, max=top, lf=lf)
    else:
        where = _condition(caps, chosen, rng, w.path if w else "")
        targets = [r for r in chosen if hit(r, where)]
        if not where or not targets or (mode in ("else", "sweep") and targets == chosen):
            return None
    if mode == "sweep":  # the value goes to the records that stay
        targets = [r for r in chosen if not hit(r, where)]
    value = None if w is None else value_for(w, caps, targets, rng)
    other = value_for(w, caps, [], rng) if mode == "else" else None
    if value is MISSING or other is MISSING or (mode == "else" and other == value):
        return None
    if mode == "sweep" and id_value(value):
        return None
    n_writes = len(chosen) if mode in ("else", "sweep") else len(targets)
    n_calls = len(ref.listers) + len(chosen) + n_writes
    n_tools = 2 + (mode == "sweep") + len(ref.listers)
    if n_calls > knobs.max_calls or say.too_long(n_calls, n_tools, len(chosen)):
        return None
    writer = caps.deleter if w is None else caps.updater
    if mode == "else":
        params.update(wc=where, g=w.path, a=value, b=other)
    elif mode == "sweep":
        params.update(wc=where, g=w.path, v=value)
    elif w is not None:
        params.update(g=w.path, v=value, w=where)
    else:
        params.update(w=where)

    def want(rec: dict[str, Any]) -> Any:
        return value if mode != "else" or hit(rec, where) else other

    def run(caller: Caller) -> Answer:
        ref.find(caller)
        got = [(r, fetch(caller, caps, r)) for r in chosen]
        if mode == "best":
            nums = [(r, x) for r, x in got if number(x.get(nf))]
            r, x = sorted(nums, key=lambda p: p[1][nf], reverse=params["max"])[0]
            caller(writer, setting(writer, coll, {**r, **x}, w, value))
            return Answer(f"It is {x.get(lf)}.", x.get(lf))
        if mode == "sweep":
            for r, x in got:
                if hit(x, where):
                    caller(caps.deleter, address(caps.deleter, coll, r))
                elif value_at(x, w.path) != value:
                    caller(writer, setting(writer, coll, {**r, **x}, w, value))
            n = sum(hit(x, where) for _, x in got)
            return Answer(f"I deleted {n}.", n)
        hits = [(r, x) for r, x in got if mode == "else" or hit(x, where)]
        for r, x in hits:
            if w is None:
                caller(writer, address(writer, coll, r))
            elif value_at(x, w.path) != want(x):
                caller(writer, setting(writer, coll, {**r, **x}, w, want(x)))
        n = sum(1 for _, x in got if hit(x, where))
        return Answer(f"{n} got {value}." if mode == "else" else f"I {mode}d {n}.", n)

    verbs, these = Verbs(model), f"the {noun_of(coll, 2)} {ref.text}"
    fld = field_name(w.path) if w else ""

    def act(obj: str, v: Any = value) -> str:
        if w is None:
            return verbs.delete(writer, rng, obj)
        return verbs.update(writer, rng, obj, fld, quote(typed(v, w.schema)), coll.noun)

    did = verbs.done(writer, "update" if w else "delete")
    if mode == "best":
        d, num, label = say.extreme(nf, bool(params.get("max"))), say.label_of(nf), say.label_of(lf)
        one = f"the one with the {d} {num}"
        request = pick(
            rng,
            [
                f"Among {these}, {act(one)}, and tell me its {label}.",
                f"Of {these}, {act(one)}; I also need its {label}.",
                f"Find which of {these} has the {d} {num}, {act('it')} and tell me its {label}.",
            ],
        )
    elif mode == "else":
        those, p = say.ones(where, rng), say.pred(where, rng)
        request = pick(
            rng,
            [
                f"Of {these}, {act(those)} and {act('the others', other)}. Tell me how many got "
                f"{quote(value)}.",
                f"For {these}: {act('each one that ' + say.pred(where, rng, False))}, and "
                f"{act('the rest', other)}. How "
                f"many got {quote(value)}?",
                f"Go over {these} — {act(those)}, {act('the others', other)} — and tell me how "
                f"many ended up with {quote(value)}.",
            ],
        )
    elif mode == "sweep":
        drop = verbs.delete(caps.deleter, rng, say.ones(where, rng))
        gone = verbs.done(caps.deleter, "delete")
        request = pick(
            rng,
            [
                f"Of {these}, {drop} and {act('the others')}. How many were {gone}?",
                f"Clean up {these}: {drop}, and {act('every other one')}. Then tell me how "
                f"many you {gone}.",
                f"Go through {these} — {drop}, {act('the rest')} — and tell me how many were "
                f"{gone}.",
            ],
        )
    else:
        those, p = say.ones(where, rng), say.pred(where, rng)
        request = pick(
            rng,
            [
                f"Of {these}, {act(those)}, and tell me how many you {did}.",
                f"For {these}: {act('every one that ' + say.pred(where, rng, False))}. How many "
                "was that?",
                f"Go through {these} and {act('those that ' + p)}; then tell me how many that was.",
            ],
        )
    kind = {"else": "branch", "best": "extreme"}.get(mode, mode)
    flow = ["loop", "branch", "conditional_write"] + (["aggregate"] if mode == "best" else [])
    return Program(
        "batch_update",
        kind,
        params,
        request,
        flow,
        "text" if mode == "best" else "number",
        f"p:batchw:{coll.name}:{params['ks'][0]}",
        2,
        run,
    )


def batch_write(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Update (or delete) each named record: for APIs that can write but not read."""
    if not knobs.given:
        return None
    caps = choose(all_caps, rng, lambda c: (c.updater or c.deleter) and len(c.coll.records) >= 3)
    if caps is None:
        return None
    coll = caps.coll
    delete = caps.updater is None or (caps.deleter is not None and rng.random() < 0.35)
    writer = caps.deleter if delete else caps.updater
    states = settings(caps, coll.records)  # one value on several records: a setting
    if not delete and not states:
        return None
    w = None if delete else rng.choice(states)
    scopes = scope_fields(writer)
    rows = [r for r in coll.records if all(scalar(r.get(f)) for f in [coll.pk, *scopes])]
    lo = max(2, knobs.min_calls)
    n = rng.randint(lo, max(lo, min(knobs.max_calls, say.MAX_ITEMS)))
    chosen, ref = say.refer_some(caps, rng.sample(rows, min(len(rows), n)), writer, all_caps)
    value = None if w is None else value_for(w, caps, chosen, rng)
    if not lo <= len(chosen) <= knobs.max_calls or value is MISSING:
        return None
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": [], "ks": _keys(caps, chosen)}
    params["told"] = True  # the request lists every record: no count to ask for
    if w is not None:
        params.update(g=w.path, v=value)

    if say.too_long(len(chosen) + len(ref.listers), 1 + len(ref.listers), len(chosen)):
        return None

    def run(caller: Caller) -> Answer:
        ref.find(caller)
        for r in chosen:
            args = address(writer, coll, r) if w is None else setting(writer, coll, r, w, value)
            caller(writer, args)
        return Answer("Done: " + ("deleted." if w is None else "updated."))

    verbs, nouns = Verbs(model), noun_of(coll, 2)
    these = f"the {nouns} {ref.text}"
    if w is None:
        act = verbs.delete(writer, rng, these)
    else:
        act = verbs.update(writer, rng, these, field_name(w.path), quote(value), coll.noun)
    request = pick(
        rng,
        [f"{cap(act)}.", f"Please {act}.", f"Could you {act}?", f"I need you to {act}."],
    )
    return Program(
        "batch_write",
        "delete" if w is None else "update",
        params,
        request,
        ["loop", "write"],
        "none",
        f"p:batchwrite:{coll.name}:{params['ks'][0]}",
        1,
        run,
    )

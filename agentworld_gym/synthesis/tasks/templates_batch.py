"""Program templates over records the request names: ``batch_read`` and ``batch_update``.

Many APIs cannot list a collection but can fetch one record by key. These programs loop over
keys the user gives, fetch each record, and filter, aggregate, pick or write — so an
environment without list tools still gets programs, and a long list of keys gives a
long-horizon task whose every call is needed.
"""

from __future__ import annotations

import random
from typing import Any

from agentworld_gym.synthesis.tasks.model import KEY, PAGE, EnvModel, ToolModel, humanize
from agentworld_gym.synthesis.tasks.programs import (
    Caller,
    Caps,
    Program,
    ProgramError,
    address,
    hit,
    value_at,
)
from agentworld_gym.synthesis.tasks.render import plural, quote
from agentworld_gym.synthesis.tasks.templates import Knobs, _value_for
from agentworld_gym.synthesis.tasks.templates_agg import AGG, OP_WORDS, _fmt, _number
from agentworld_gym.synthesis.tasks.values import MISSING, get_path, typed

REQUESTS = {
    "count": "Check the {{ nouns }} {{ keys }}: how many of them{{ cond }}?",
    "sum": "Check the {{ nouns }} {{ keys }}: what is the {{ op }} {{ num }} of those{{ cond }}?",
    "pick": "Among the {{ nouns }} {{ keys }}, which has the {{ dir }} {{ num }}? Tell me its "
    "{{ label }}.",
    "update": "Check the {{ nouns }} {{ keys }}. For each one{{ cond }}, set its {{ field }} to "
    "{{ value }}. Tell me how many you changed.",
    "delete": "Check the {{ nouns }} {{ keys }}. Delete each one{{ cond }}, and tell me how many "
    "you deleted.",
}


def _getter(caps: Caps) -> ToolModel | None:
    """A get tool that needs nothing but the key."""
    for t in caps.coll.tools.get("get", []):
        req = [p for p in t.required() if p.role != PAGE]
        if len(req) == 1 and req[0].role == KEY and t.record is not None:
            return t
    return None


def _keys(caps: Caps, rng: random.Random, n: int) -> list[dict[str, Any]]:
    rows = [r for r in caps.coll.records if r.get(caps.coll.pk) is not None]
    return rng.sample(rows, min(n, len(rows)))


def _fetch(caller: Caller, tool: ToolModel, coll: Any, key: Any) -> dict[str, Any]:
    out = caller(tool, address(tool, coll, {coll.pk: key}))
    rec = get_path(out, tool.record or "")
    if not isinstance(rec, dict):
        raise ProgramError(f"{tool.name} returned no record")
    return rec


def _with(where: list[list[Any]]) -> str:
    return " and ".join(f"{humanize(f)} {quote(v)}" for f, v in where)


def _render(kind: str, **fields: Any) -> str:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
    return env.from_string(REQUESTS[kind]).render(**fields)


def batch_read(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Fetch each named record; count, total or pick among them."""
    pool = [c for c in all_caps.values() if _getter(c) and len(c.coll.records) >= 3]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll, tool = caps.coll, _getter(caps)
    hidden = tool.hidden
    hi = knobs.max_calls if knobs.long else 6
    n = rng.randint(max(knobs.min_calls, 3), max(min(hi, knobs.max_calls), knobs.min_calls))
    chosen = _keys(caps, rng, n)
    if len(chosen) < max(3, knobs.min_calls):
        return None
    keys = [r[coll.pk] for r in chosen]
    modes = ["count"] if coll.profile.categorical else []
    modes += ["sum", "pick"] * bool(coll.profile.numeric)
    if not modes:
        return None
    mode = rng.choice(modes)
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": [], "ks": [str(k) for k in keys]}
    where: list[list[Any]] = []
    nf = rng.choice(coll.profile.numeric) if mode != "count" else ""
    if mode in ("count", "sum"):
        fields = [f for f in coll.profile.categorical if f not in hidden and f != nf]
        if mode == "count" and not fields:
            return None
        if fields and (mode == "count" or rng.random() < 0.5):
            f = rng.choice(fields)
            values = [r.get(f) for r in chosen if r.get(f) is not None]
            if not values:
                return None
            where = [[f, rng.choice(values)]]
    rows = [r for r in chosen if hit(r, where)]
    if mode == "pick":
        lf = next((f for f in coll.profile.labels if f not in hidden), None)
        nums = [r for r in chosen if _number(r.get(nf))]
        if lf is None or nf in hidden or len(nums) < 3:
            return None
        top = rng.random() < 0.5
        ranked = sorted(nums, key=lambda r: r[nf], reverse=top)
        if ranked[0][nf] == ranked[1][nf] or ranked[0] is chosen[0]:
            return None
        params.update(nf=nf, max=top, lf=lf)
        kind, answer_type = "pick", "text"
    elif mode == "sum":
        if nf in hidden or len([r for r in rows if _number(r.get(nf))]) < 2:
            return None
        op = rng.choice(["sum", "avg", "max", "min"])
        params.update(nf=nf, op=op, tol=0.01, w=where)
        kind, answer_type = "aggregate", "number"
    else:
        params.update(nf="", op="count", tol=0.01, w=where)
        kind, answer_type = "aggregate", "number"

    def run(caller: Caller) -> str:
        got = [_fetch(caller, tool, coll, k) for k in keys]
        if mode == "pick":
            nums = [r for r in got if _number(r.get(nf))]
            best = sorted(nums, key=lambda r: r[nf], reverse=params["max"])[0]
            return f"It is {best.get(params['lf'])}."
        matched = [r for r in got if hit(r, where)]
        if mode == "count":
            return f"{len(matched)} of them."
        x = AGG[params["op"]]([r[nf] for r in matched if _number(r.get(nf))])
        return f"The {OP_WORDS[params['op']]} {humanize(nf)} is {_fmt(x)}."

    shown = ", ".join(quote(k) for k in keys)
    cond = ""
    if mode == "count":
        cond = " have " + _with(where)
    elif where:
        cond = " with " + _with(where)
    request = _render(
        "pick" if mode == "pick" else ("count" if mode == "count" else "sum"),
        nouns=plural(coll.noun),
        keys=shown,
        cond=cond,
        op=OP_WORDS.get(params.get("op", ""), ""),
        num=humanize(nf),
        dir="highest" if params.get("max") else "lowest",
        label=humanize(params.get("lf", "")),
    )
    flow = ["loop", "aggregate"] + (["filter"] if where else [])
    return Program(
        "batch_read",
        kind,
        params,
        request,
        flow,
        answer_type,
        f"p:batch:{coll.name}:{keys[0]}",
        1,
        run,
        writes_expected=False,
    )


def batch_update(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Fetch each named record; update (or delete) those matching a condition."""
    pool = [
        c
        for c in all_caps.values()
        if _getter(c)
        and (c.updater or c.deleter)
        and c.coll.profile.categorical
        and len(c.coll.records) >= 3
    ]
    if not pool:
        return None
    caps = rng.choice(pool)
    coll, tool = caps.coll, _getter(caps)
    delete = caps.updater is None or (caps.deleter is not None and rng.random() < 0.3)
    w = None if delete else rng.choice(caps.writable)
    fields = [
        f for f in coll.profile.categorical if f not in tool.hidden and (w is None or f != w.path)
    ]
    if not fields:
        return None
    f = rng.choice(fields)
    lo = max(3, (knobs.min_calls + 1) // 2)
    n = rng.randint(lo, max(lo, min(8, knobs.max_calls // 2 + 1)))
    chosen = _keys(caps, rng, n)
    values = [r.get(f) for r in chosen if r.get(f) is not None]
    if len(chosen) < lo or not values:
        return None
    where = [[f, rng.choice(values)]]
    targets = [r for r in chosen if hit(r, where)]
    value = None if w is None else _value_for(w, caps, targets, rng)
    if value is MISSING or not targets or len(chosen) + len(targets) > knobs.max_calls:
        return None
    keys = [r[coll.pk] for r in chosen]
    params = {"c": coll.name, "k": coll.pk, "w": where, "ks": [str(k) for k in keys]}
    if w is not None:
        params.update(g=w.path, v=value)
    writer = caps.deleter if w is None else caps.updater

    def run(caller: Caller) -> str:
        changed = 0
        for k in keys:
            rec = _fetch(caller, tool, coll, k)
            if hit(rec, where):
                changed += 1
                args = address(writer, coll, {**rec, coll.pk: k})
                if w is None:
                    caller(writer, args)
                elif value_at(rec, w.path) != value:
                    caller(writer, {**args, **w.args(value)})
        return f"I {'deleted' if w is None else 'changed'} {changed}."

    request = _render(
        "delete" if w is None else "update",
        nouns=plural(coll.noun),
        keys=", ".join(quote(k) for k in keys),
        cond=" that has " + _with(where),
        field=humanize(w.path.split(".")[-1]) if w else "",
        value=quote(typed(value, w.schema)) if w else "",
    )
    return Program(
        "batch_update",
        "delete" if w is None else "update",
        params,
        request,
        ["loop", "branch", "conditional_write"],
        "number",
        f"p:batchw:{coll.name}:{keys[0]}",
        2,
        run,
    )

"""The ``reconcile`` template: bring a listing in line with a list of names the request gives.

"The repositories should be exactly these: ...; delete any others and add the missing ones"
states an end state, not the steps: which names exist, and so which call each one needs
(delete, create, or set the setting every one should carry), only the listing tells. A long
errand sets up two collections as one configuration ("Add or delete vocabularies so that
exactly these remain: ... Add or delete vocabulary filters so that ...": five to seven tools),
or one collection in two scopes, or, where neither fits, replaces most of one list.

See :mod:`agentworld_gym.synthesis.tasks.sample.templates` for the table of every template.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.request.program import Verbs, pick
from agentworld_gym.synthesis.tasks.request.render import cap, plural, quote, series, told
from agentworld_gym.synthesis.tasks.sample.programs import (
    Answer,
    Caller,
    Caps,
    Program,
    Writable,
    address,
    setting,
    value_at,
)
from agentworld_gym.synthesis.tasks.sample.templates.shapes import (
    NAMING_WORDS,
    Knobs,
    Listing,
    field_name,
    id_value,
    listing,
    made_fields,
    making,
    name_fields,
    naming,
    sayable_name,
    settings,
    value_for,
)
from agentworld_gym.synthesis.tasks.values import MISSING, fresh_text, typed

__all__ = ["reconcile"]


@dataclass
class Part:
    """One collection brought in line: what the program does there and how the request
    states it."""

    caps: Caps
    source: Listing
    scope: say.Ref
    name: Writable
    wanted: list[str]
    """Every name the listing should end with, in the order the request gives them."""
    adds: list[str]
    creates: list[dict[str, Any]]
    gone: int
    stale: int
    w: Writable | None
    value: Any
    shared: str
    """The values new records get beyond their name, as the request states them."""
    params: dict[str, Any]
    after: bool = False
    """The maker cannot set the setting: new records get it by an update, found by listing
    again (their keys exist only once they are made)."""

    @property
    def calls(self) -> int:
        n = len(self.scope.listers) + self.source.reads + self.gone + len(self.adds) + self.stale
        return n + (self.source.reads + len(self.adds) if self.after else 0)

    @property
    def tools(self) -> set[str]:
        used = {self.source.tool.name, self.caps.maker.name, self.caps.deleter.name}
        if self.stale or self.after:
            used.add(self.caps.updater.name)
        return used | {t.name for t in self.scope.listers}

    @property
    def repeats(self) -> int:
        return max(self.gone, len(self.adds), self.stale + len(self.adds) * self.after)

    def run(self, caller: Caller) -> int:
        """Delete the records not wanted, set the setting on the others, create the missing
        names; the number deleted."""
        caps, nw, w = self.caps, self.name, self.w
        want = set(self.wanted)
        self.scope.find(caller)
        found = self.source.read(caller)
        n = 0
        for r in found:
            if str(value_at(r, nw.path)) not in want:
                caller(caps.deleter, address(caps.deleter, caps.coll, r))
                n += 1
            elif w is not None and value_at(r, w.path) != self.value:
                caller(caps.updater, setting(caps.updater, caps.coll, r, w, self.value))
        have = {str(value_at(r, nw.path)) for r in found}
        for name, args in zip(self.adds, self.creates, strict=True):
            if name not in have:
                caller(caps.maker, args)
        if self.after and w is not None:  # the new ones, by the keys they were given
            for r in self.source.read(caller):
                if str(value_at(r, nw.path)) not in have and value_at(r, w.path) != self.value:
                    caller(caps.updater, setting(caps.updater, caps.coll, r, w, self.value))
        return n

    @property
    def nouns(self) -> str:
        return plural(self.caps.coll.noun)

    @property
    def by(self) -> str:
        """`` (by repository name)`` unless the field is the records' plain name."""
        nw, prof = self.name, self.caps.coll.profile
        label = field_name(nw.path)
        plain = nw.path in prof.names or label in ("name", "display name", "title")
        return "" if plain else f" (by {label})"

    @property
    def items(self) -> str:
        return series([quote(n) for n in self.wanted])

    @property
    def setting_text(self) -> str:
        return told(field_name(self.w.path), self.value) if self.w is not None else ""


def reconcile(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """The listed records of one collection (for a long errand: of two collections, or of
    two scopes of one, where those fit) made to match the names the request lists; report
    how many were deleted."""
    verbs = Verbs(model)
    pool = [c for c in all_caps.values() if (c.lister or c.scoped) and _fits(c, verbs)]
    if not pool:
        return None
    first = rng.choice(pool)
    parts = [_part(model, all_caps, rng, first, False, verbs)]
    if knobs.long:  # a configuration of two collections, or of one in two scopes
        others = [c for c in pool if c is not first]
        rng.shuffle(others)
        b = None
        for other in others[:3]:  # the first other collection that fits
            b = _part(model, all_caps, rng, other, False, verbs)
            if b is not None:
                break
        for _ in range(3 if b is None and first.scoped else 0):
            b = _part(model, all_caps, rng, first, False, verbs)
            if b is not None and parts[0] is not None and _apart(parts[0], b):
                break
            b = None
        parts = (
            [parts[0], b] if b is not None else [_part(model, all_caps, rng, first, True, verbs)]
        )
    if any(p is None for p in parts):
        return None
    done: list[Part] = [p for p in parts if p is not None]
    two = len(done) == 2
    n_calls = sum(p.calls for p in done)
    tools = len(set().union(*(p.tools for p in done)))
    if n_calls > knobs.max_calls or (knobs.long and n_calls < knobs.min_calls):
        return None
    if say.too_long(n_calls, tools, max(p.repeats for p in done)):
        return None

    def run(caller: Caller) -> Answer:
        n = sum(p.run(caller) for p in done)
        return Answer(f"I removed {n} in all." if two else f"I removed {n}.", n)

    request = _request(done, verbs, rng)
    colls = ",".join(p.caps.coll.name for p in done)
    return Program(
        "reconcile",
        "reconcile",
        {"parts": [p.params for p in done]},
        request,
        ["loop", "filter", "branch", "conditional_write"],
        "number",
        f"p:reconcile:{colls}:{[p.source.where for p in done]}",
        2,
        run,
    )


def _apart(a: Part, b: Part) -> bool:
    """Two parts of one collection in two different scopes (no record in both)."""
    return bool(a.source.where and b.source.where and a.source.where != b.source.where)


def _fits(c: Caps, verbs: Verbs) -> bool:
    return bool(
        c.maker
        and c.deleter
        and verbs.of(c.deleter).op == "delete"
        and verbs.of(c.maker).op == "create"
        and _name_of(c) is not None
    )


def _part(
    model: EnvModel,
    all_caps: dict[str, Caps],
    rng: random.Random,
    caps: Caps,
    long: bool,
    verbs: Verbs,
) -> Part | None:
    """One collection's part; ``long``: replace most of the list (one part alone must make
    a long errand), else trim it and top it up."""
    sources = [s for s in (listing(model, caps, rng) for _ in range(3 if long else 1)) if s]
    if not sources:
        return None
    # a long errand in a scope found by its name where one is
    source = max(sources, key=lambda s: len(_scope(model, all_caps, caps, s).listers))
    coll, rows, nw = caps.coll, source.rows, _name_of(caps)
    if nw is None:
        return None
    names = [value_at(r, nw.path) for r in rows]
    if (
        not 2 <= len(rows) <= say.MAX_REPEATS
        or nw.path in source.tool.hidden
        or not all(sayable_name(n) for n in names)
        or len({str(n).casefold() for n in names}) < len(rows)
    ):
        return None
    scope_args = _scope_args(caps, source.where)
    scope = _scope(model, all_caps, caps, source)
    if scope_args is None or any(map(id_value, re.findall(r'"([^"]*)"', scope.text))):
        return None  # a scope the request could only give by an id
    w = wm = value = None  # the setting every listed name should carry (new ones too)
    after = False
    if (
        caps.updater is not None
        and verbs.of(caps.updater).op == "update"
        and (long or rng.random() < 0.7)
    ):
        makes = {m.path: m for m in caps.make_fields if not m.prop}
        states = [s for s in settings(caps, rows) if s.path != nw.path]
        states = [s for s in states if s.path not in source.tool.hidden]
        made = [s for s in states if s.path in makes]
        if made:
            w = rng.choice(made)
            wm = makes[w.path]
        elif states and long:  # set on the new records after they are made
            w, after = rng.choice(states), True
    cut = (len(rows) // 2, len(rows) - 1) if long else (1, max(1, len(rows) // 2))
    more = (2, 4) if long else (1, 3)
    taken = {str(n).casefold() for n in names}
    best: tuple[int, list[dict[str, Any]], list[str]] | None = None
    for _ in range(4 if long else 1):
        gone = rng.sample(rows, rng.randint(*cut))
        fresh = (fresh_text(rng, nw.path, coll.noun) for _ in range(rng.randint(*more)))
        adds = [a for a in dict.fromkeys(fresh) if a.casefold() not in taken and sayable_name(a)]
        if adds and (best is None or len(gone) + len(adds) > best[0]):
            best = (len(gone) + len(adds), gone, adds)
    if best is None:
        return None
    _, gone, adds = best
    kept = [r for r in rows if r not in gone]
    if w is not None:
        value = value_for(w, caps, kept, rng)
        if value is MISSING or id_value(value):
            w = wm = value = None
            after = False
    stale = sum(1 for r in kept if w is not None and value_at(r, w.path) != value)
    chosen = {nw.param, *scope_args, *([wm.param] if wm else [])}
    maker = caps.maker
    mk = making(model, caps, rng, chosen)
    if mk is None or mk.own or mk.names_keys(caps) or any(map(id_value, mk.shared.values())):
        return None
    said = [field_name(maker.params[k].field or k).split()[-1:] for k in mk.shared]
    if any(w and w[0] in NAMING_WORDS for w in said):
        return None  # one name for every new record
    set_new = wm.args(value) if wm else {}
    creates = [
        mk.copy({**mk.shared, **scope_args, nw.param: typed(a, nw.schema), **set_new}) for a in adds
    ]
    wanted = [str(value_at(r, nw.path)) for r in kept] + adds
    rng.shuffle(wanted)
    fixed = [[f, v] for f, v in source.where] + made_fields(caps, {**mk.shared, **set_new})
    if after and w is not None:
        fixed.append([w.path, value])
    params: dict[str, Any] = {"c": coll.name, "k": coll.pk, "w": source.where, "nf": nw.path}
    params.update(names=wanted, add=adds, all=fixed, g=w.path if w else "", v=value)
    shared = mk.text(caps) if mk.shared else ""
    return Part(
        caps,
        source,
        scope,
        nw,
        wanted,
        adds,
        creates,
        len(gone),
        stale,
        w,
        value,
        shared,
        params,
        after,
    )


def _request(parts: list[Part], verbs: Verbs, rng: random.Random) -> str:
    """The end state in words: one list ("The keys in project "Apollo" should be exactly
    these: ...; delete any others and add the missing ones"), or a configuration of two. The
    names share a sentence with the verbs that make them so (the tools' own words)."""
    if len(parts) == 1:
        p = parts[0]
        caps = p.caps
        make = verbs.word(caps.maker, rng, "create")
        drop = verbs.word(caps.deleter, rng, "delete")
        did = verbs.done(caps.deleter, "delete")
        nouns, tail, by, items = p.nouns, p.scope.text, p.by, p.items
        extra = f" with {p.shared}" if p.shared else ""
        also = ""
        if p.w is not None:
            made = verbs.done(caps.maker, "create")
            also = pick(
                rng,
                [
                    f" Each of them, the ones you {made} included, should have {p.setting_text}.",
                    f" All of them should end with {p.setting_text}, the ones you {made} too.",
                ],
            )
        ask = pick(
            rng, [f" Then tell me how many you {did}.", f" How many {nouns} did you {drop}?"]
        )
        return pick(
            rng,
            [
                f"The {nouns}{tail} should be exactly these{by}: {items}; {drop} any others and "
                f"{make} the missing ones{extra}.{also}{ask}",
                f"Please {drop} the {nouns}{tail} that are not on this list and {make} the "
                f"missing ones{extra}{by}: {items}.{also}{ask}",
                f"I want only these {nouns}{tail}{by}: {items}; {drop} the rest and {make} any "
                f"that don't exist yet{extra}.{also}{ask}",
            ],
        )
    lines = []
    for p in parts:
        make = verbs.word(p.caps.maker, rng, "create")
        drop = verbs.word(p.caps.deleter, rng, "delete")
        each = f", each with {p.setting_text}" if p.w is not None else ""
        new = f" The {p.nouns} you {make} get {p.shared}." if p.shared else ""
        lines.append(
            f"{cap(make)} or {drop} {p.nouns}{p.scope.text} so that exactly these remain{p.by}: "
            f"{p.items}{each}.{new}"
        )
    a, b = parts
    both = a.nouns if a.nouns == b.nouns else f"{a.nouns} and the {b.nouns}"
    head = pick(
        rng,
        [
            f"Please set up the {both} as follows.",
            f"I need the {both} to match this configuration.",
            f"Here is how the {both} should look.",
        ],
    )
    tail = pick(
        rng,
        [" Then tell me how many you removed in all.", " How many did you remove altogether?"],
    )
    return head + " " + " ".join(lines) + tail


def _scope(model: EnvModel, all_caps: dict[str, Caps], caps: Caps, source: Listing) -> say.Ref:
    return say.scope_ref(model, all_caps, caps, source.tool, source.where)


def _name_of(caps: Caps) -> Writable | None:
    """The field a person names records of ``caps`` by, which the maker sets: a name or
    label (a client-chosen key counts) that the records hold as names, not ids or prose."""
    coll = caps.coll
    for w in name_fields(caps):
        values = [value_at(r, w.path) for r in coll.records]
        key = w.path == coll.pk and sum(map(sayable_name, values)) >= 0.8 * len(values)
        key = key and field_name(w.path).split()[-1:] != ["type"]  # a kind names no record
        if values and (naming(caps, w) or key):
            return w
    return None


def _scope_args(caps: Caps, where: list[list[Any]]) -> dict[str, Any] | None:
    """The maker's arguments that put a new record in the listing's scope (``None`` when the
    maker cannot)."""
    out: dict[str, Any] = {}
    for fld, value in where:
        p = next((p for p in caps.maker.params.values() if p.field == fld), None)
        if p is None:
            return None
        out[p.name] = typed(value, p.schema)
    return out

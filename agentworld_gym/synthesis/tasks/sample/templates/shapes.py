"""What program templates are built from: knobs, listings, conditions, joins, given records.

A template (see :mod:`agentworld_gym.synthesis.tasks.sample.templates` for the table) picks a
collection whose capabilities (:class:`~agentworld_gym.synthesis.tasks.sample.programs.Caps`) fit,
reads its records one of two ways — a :class:`Listing` (a list tool, perhaps under one parent) or
records the request names and a get tool fetches one by one (:func:`given`, :func:`fetch`) — and
filters them with :func:`conditions` drawn from the seed data's categorical fields, sometimes
through a parent (:class:`Join`).
"""

from __future__ import annotations

import dataclasses
import functools
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jinja2

from agentworld_gym.synthesis.audit import id_shaped
from agentworld_gym.synthesis.tasks.model import (
    CollectionModel,
    EnvModel,
    ToolModel,
    humanize,
    looks_like_id,
    scalar,
    words,
)
from agentworld_gym.synthesis.tasks.request.program import (
    MAX_REPEATS,
    field_label,
    scope_noun,
)
from agentworld_gym.synthesis.tasks.request.render import plural, quote, told
from agentworld_gym.synthesis.tasks.sample.programs import (
    Caller,
    Caps,
    ProgramError,
    Writable,
    address,
    hit,
    value_at,
)
from agentworld_gym.synthesis.tasks.values import (
    MISSING,
    fresh_text,
    get_path,
    new_value,
    sayable_field,
    schema_type,
    typed,
)

OP_WORDS = {"sum": "total", "avg": "average", "max": "highest", "min": "lowest"}


def _nonempty(fn: Callable[[list[float]], float]) -> Callable[[list[float]], float]:
    """``fn`` over a list that must hold a value: a program whose records have none (e.g. on
    an evolved database) fails as a program, not with ZeroDivisionError."""

    def agg(values: list[float]) -> float:
        if not values:
            raise ProgramError("nothing to aggregate")
        return fn(values)

    return agg


AGG: dict[str, Callable[[list[float]], float]] = {
    "sum": sum,
    "avg": _nonempty(lambda v: sum(v) / len(v)),
    "max": _nonempty(max),
    "min": _nonempty(min),
}
_J = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False)
_J.filters["a"] = lambda noun: ("an " if str(noun)[:1].lower() in "aeiou" else "a ") + str(noun)


@functools.lru_cache(maxsize=128)
def _compiled(text: str) -> jinja2.Template:
    return _J.from_string(text)


def render(text: str, **fields: Any) -> str:
    """A request from its jinja2 template text."""
    return _compiled(text).render(**fields)


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
    given: bool = True
    """Templates may name records by key (``False``: the agent finds every record)."""
    rich: bool = True
    """Trade a plain loop of writes for a program with more control flow where one fits
    (late rounds turn this off: an environment short of tasks takes what it affords)."""
    strict: bool = True
    """Refuse what reads poorly (new records listed by a field people do not name things
    by); off past the rounds, for an environment under its floor of tasks."""


@dataclass
class Listing:
    """How a program reads the records it works on: one list tool, maybe under one parent."""

    tool: ToolModel
    args: dict[str, Any]
    where: list[list[Any]]
    rows: list[dict[str, Any]]
    phrase: str
    over: tuple[str, str, Caps] | None = None
    """``(arg, field, parent caps)`` when the records are those of every parent: the program
    lists the parents, then each one's records ("the expired tokens of every user")."""

    @property
    def reads(self) -> int:
        """The gold calls the read takes (one listing, or the parents' and one per parent)."""
        return 1 if self.over is None else 1 + len(self.over[2].coll.records)

    @property
    def tools(self) -> int:
        return 1 if self.over is None else 2

    def params(self) -> dict[str, Any]:
        """The verification script's parameters: children of the parents the data has."""
        if self.over is None:
            return {}
        _, fld, pcaps = self.over
        return {"pc": pcaps.coll.name, "pk": pcaps.coll.pk, "pw": [], "pf": fld}

    def read(self, caller: Caller) -> list[dict[str, Any]]:
        """What the program reads: the listing, or every parent's listing in turn."""
        if self.over is None:
            return caller.list_all(self.tool, self.args)
        arg, _, pcaps = self.over
        schema = self.tool.params[arg].schema
        out: list[dict[str, Any]] = []
        for parent in caller.list_all(pcaps.lister, {}):
            key = typed(parent.get(pcaps.coll.pk), schema)
            out += caller.list_all(self.tool, {**self.args, arg: key})
        return out


@dataclass
class Join:
    """Records filtered through their parent: ``field`` holds a key of a parent matching
    ``where``; ``keys`` are those parents' keys in the seed data."""

    field: str
    caps: Caps
    where: list[list[Any]]
    keys: set[str]

    def params(self) -> dict[str, Any]:
        """The verification script's parameters for the join."""
        return {"pc": self.caps.coll.name, "pk": self.caps.coll.pk, "pw": self.where}

    def text(self, cond: str, verb: str) -> str:
        """``cond`` extended by "and that <verb> to a <parent> whose ..."."""
        joined = f" that {verb} to a {self.caps.coll.noun}" + cond_text(self.where)
        return cond + (" and" if cond else "") + joined


def number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def fmt(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.2f}"


_OWN_WORDS = frozenset(
    "name title label email login slug subject summary username handle description notes "
    "note comment message text body value data content payload".split()
)


def _own_words(path: str) -> bool:
    """A field that names or describes one record ("routing control name", "description"):
    the same value on many records reads as a mistake."""
    w = words(path.split(".")[-1])
    return bool(w) and w[-1] in _OWN_WORDS


def settings(caps: Caps, rows: list[dict[str, Any]]) -> list[Any]:
    """The fields one value may be written to on many records: a setting or a state, never
    a name, a description, an id or another record's key."""
    return [
        x
        for x in caps.writable
        if x.path not in caps.coll.profile.labels
        and not _own_words(x.path)
        and not looks_like_id(x.path)
        and not any(id_value(r.get(x.path)) for r in rows)
    ]


def id_value(value: Any) -> bool:
    """An id-shaped string (``pro_99b3a8cdec``): no state a user sets or picks records by."""
    return isinstance(value, str) and id_shaped(value)


def round_cut(t: float, values: list[float]) -> float:
    """The roundest number a person would say in place of the threshold ``t`` ("over 400",
    not "over 438") that splits ``values`` exactly as ``t`` does: the coarsest multiple of
    1, 2 or 5 times a power of ten in ``[t, next value above t)``."""
    above = [v for v in values if v > t]
    if not above or not float(t).is_integer():
        return t
    nxt = min(above)
    step = 10 ** max(0, len(str(int(abs(nxt)))) - 1)
    while step >= 1:
        for k in (5, 2, 1):
            r = -(-t // (k * step)) * (k * step)
            if t <= r < nxt:
                return int(r)
        step //= 10
    return t


def noun_of(coll: CollectionModel, n: int) -> str:
    """``coll``'s noun, plural unless ``n`` is 1."""
    return coll.noun if n == 1 else plural(coll.noun)


def field_name(path: str) -> str:
    """A field a request writes, in words (``created_at`` -> ``creation date``)."""
    return field_label(path)


def choose(
    all_caps: dict[str, Caps], rng: random.Random, fits: Callable[[Caps], Any]
) -> Caps | None:
    """A random collection whose capabilities ``fits``."""
    pool = [c for c in all_caps.values() if fits(c)]
    return rng.choice(pool) if pool else None


def choose_listed(
    model: EnvModel,
    all_caps: dict[str, Caps],
    rng: random.Random,
    fits: Callable[[Caps], Any],
    across: bool = False,
    long: bool = False,
) -> tuple[Caps, Listing] | None:
    """A random listable collection whose capabilities ``fits``, and how to list it
    (``across``: maybe the records of every parent, when a scoped listing allows it; always
    tried first for a ``long`` errand, which then goes through the parents' own tool)."""
    caps = choose(all_caps, rng, lambda c: (c.lister or c.scoped) and fits(c))
    if caps is None:
        return None
    source = None
    if across and caps.scoped and caps.lister is None and (long or rng.random() < 0.5):
        source = every_parent(model, all_caps, caps, rng)
    source = source or listing(model, caps, rng)
    return (caps, source) if source is not None else None


def every_parent(
    model: EnvModel, all_caps: dict[str, Caps], caps: Caps, rng: random.Random
) -> Listing | None:
    """The records of every parent, through a listing scoped by one parent that a list tool
    finds: each parent's listing must show all its records, and every record must belong to
    a listed parent (the gold reads them all)."""
    options = [
        (tool, req[0])
        for tool, req in caps.scoped
        if len(req) == 1
        and req[0][2] in all_caps
        and req[0][2] != caps.coll.name
        and all_caps[req[0][2]].lister is not None
    ]
    if not options:
        return None
    tool, (arg, fld, pref) = rng.choice(options)
    pcaps, coll = all_caps[pref], caps.coll
    parents = pcaps.coll.records
    if not 2 <= len(parents) <= MAX_REPEATS or not pcaps.visibility.complete(
        pcaps.lister, {}, pcaps.coll, parents
    ):
        return None
    keys = {str(p.get(pcaps.coll.pk)) for p in parents}
    rows = [r for r in coll.records if str(r.get(fld)) in keys]
    if not rows:
        return None
    schema = tool.params[arg].schema
    for p in parents:
        key = p.get(pcaps.coll.pk)
        mine = [r for r in rows if str(r.get(fld)) == str(key)]
        if not caps.visibility.complete(tool, {arg: typed(key, schema)}, coll, mine):
            return None
    noun = scope_noun(model, tool, arg, fld, pref)
    return Listing(tool, {}, [], rows, f" across all {plural(noun)}", (arg, fld, pcaps))


def listing(model: EnvModel, caps: Caps, rng: random.Random) -> Listing | None:
    """A list tool that shows every record it should (all, or those of one parent)."""
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
        noun = scope_noun(model, tool, arg, fld, pref)
        phrases.append(f"{noun} {quote(value)}")
    rows = [r for r in coll.records if hit(r, where)]
    if not caps.visibility.complete(tool, args, coll, rows):
        return None
    return Listing(tool, args, where, rows, " in " + " and ".join(phrases))


def strip_id(name: str) -> str:
    """``project_id`` -> ``project``."""
    w = humanize(name).split()
    return " ".join(w[:-1] if len(w) > 1 and w[-1] in ("id", "gid", "uuid", "key") else w)


def conditions(
    caps: Caps,
    rows: list[dict],
    avoid: set[str],
    rng: random.Random,
    knobs: Knobs,
    hidden: frozenset[str],
) -> list[tuple[list[list[Any]], list]]:
    """``(where, targets)`` options: one categorical condition (two with distractors)."""
    coll = caps.coll
    fields = [  # records are picked by a state, not by their name ("have name "X"")
        f
        for f in coll.profile.categorical
        if f not in avoid and f not in hidden and f not in coll.profile.names
    ]
    rng.shuffle(fields)
    out = []
    for f in fields:
        for v in coll.profile.categorical[f]:
            if id_value(v):
                continue  # people pick records by a state, not by "section sec_0b0623347b"
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


def cond_text(where: list[list[Any]]) -> str:
    return (
        " whose " + " and ".join(f"{humanize(f)} is {quote(v)}" for f, v in where) if where else ""
    )


def with_text(where: list[list[Any]]) -> str:
    """``status "open" and owner "ada"``."""
    return " and ".join(f"{humanize(f)} {quote(v)}" for f, v in where)


def join_parent(all_caps: dict[str, Caps], caps: Caps, rng: random.Random) -> Join | None:
    """A listable parent collection to filter ``caps``'s records through."""
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
                    options.append(Join(fld, pcaps, [[pf, pv]], keys))
    return rng.choice(options) if options else None


def listed(
    caller: Caller, source: Listing, where: list[list[Any]], join: Join | None
) -> list[dict[str, Any]]:
    """The program's read: every listed record matching ``where`` (and the join)."""
    ok = None
    if join is not None and join.caps.lister is not None:
        parents = caller.list_all(join.caps.lister, {})
        ok = {str(p.get(join.caps.coll.pk)) for p in parents if hit(p, join.where)}
    return [
        r
        for r in source.read(caller)
        if hit(r, where) and (ok is None or str(value_at(r, join.field)) in ok)
    ]


def value_for(w: Writable, caps: Caps, targets: list[dict], rng: random.Random) -> Any:
    """A value to write at ``w`` that none of ``targets`` has yet."""
    known = caps.coll.profile.categorical.get(w.path)
    current = {repr(value_at(r, w.path)) for r in targets}
    for _ in range(6):
        v = new_value(w.schema, w.path, None, rng, known, caps.coll.hint, caps.coll.noun)
        if v is not MISSING and repr(v) not in current and (not isinstance(v, str) or len(v) <= 40):
            return v
    return MISSING


# -- records the request names --------------------------------------------------------------
def given(caps: Caps, rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Up to ``n`` seed records the getter can address (their key and scopes are set)."""
    if caps.getter is None:
        return []
    scopes = scope_fields(caps.getter)
    rows = [
        r
        for r in caps.coll.records
        if scalar(r.get(caps.coll.pk)) and all(scalar(r.get(f)) for f in scopes)
    ]
    chosen = rng.sample(rows, min(n, len(rows)))
    if all(str(r[caps.coll.pk]).isdigit() for r in chosen):
        chosen.sort(key=lambda r: int(r[caps.coll.pk]))  # people list numbers in order
    return chosen


def scope_fields(tool: ToolModel | None) -> list[str]:
    """The record fields naming the parents ``tool``'s path needs."""
    params = tool.params.values() if tool is not None else []
    return [p.field for p in params if p.role == "scope" and p.required and p.field]


def fetch(caller: Caller, caps: Caps, record: dict[str, Any]) -> dict[str, Any]:
    """The program's read of one named record through the getter."""
    tool = caps.getter
    if tool is None:
        raise ProgramError("no getter")
    out = caller(tool, address(tool, caps.coll, record))
    rec = get_path(out, tool.record or "")
    if not isinstance(rec, dict):
        raise ProgramError(f"{tool.name} returned no record")
    return rec


def visible(caps: Caps, *fields: str) -> bool:
    """The getter shows ``fields`` and the request does not name them (keys, parents)."""
    tool = caps.getter
    known = {caps.coll.pk, *scope_fields(tool)}
    return tool is not None and all(
        f and f.split(".")[0] not in tool.hidden and f not in known for f in fields
    )


# -- creating records -----------------------------------------------------------------------
@dataclass
class Making:
    """What a create call needs beyond the fields a template chooses: ``shared`` values every
    new record gets (the request states them) and ``own``, the arguments each record needs a
    fresh value for (a client-chosen key, a unique field)."""

    shared: dict[str, Any]
    own: list[str]
    same: dict[str, str] = dataclasses.field(default_factory=dict)
    """Arguments that set the same field as a chosen one (a path copy of a body field) ->
    that chosen argument: they take its value."""

    def copy(self, args: dict[str, Any]) -> dict[str, Any]:
        """``args`` with the ``same`` arguments filled from the ones they copy."""
        return {**args, **{d: args[s] for d, s in self.same.items() if s in args}}

    def names_keys(self, caps: Caps) -> bool:
        """Some shared value is another record's key (the request would state it)."""
        tool = caps.maker
        return tool is not None and any(tool.params[k].ref for k in self.shared)

    def text(self, caps: Caps) -> str:
        """The shared values as the request states them (``status "open", team "t1"``)."""
        tool = caps.maker
        parts = []
        for name, value in self.shared.items():
            p = tool.params[name] if tool else None
            fld = p.field if p and p.field else name
            label = (p.noun if p else None) or (strip_id(fld) if p and p.ref else field_name(fld))
            parts.append(told(label, value))
        return ", ".join(parts)


def making(model: EnvModel, caps: Caps, rng: random.Random, chosen: set[str]) -> Making | None:
    """A :class:`Making` for ``caps.maker`` when the template sets the arguments ``chosen``
    (``None`` when some required argument cannot be given a value)."""
    tool, coll = caps.maker, caps.coll
    if tool is None:
        return None
    unique = caps.unique
    sample = rng.choice(coll.records) if coll.records else {}
    out = Making({}, [])
    by_field: dict[str, Any] = {}
    fields = {tool.params[c].field: c for c in chosen if c in tool.params}
    for p in tool.required():
        if p.name in chosen or p.field is None:
            continue
        if p.field in fields:
            out.same[p.name] = fields[p.field]
            continue
        if p.field in by_field:  # two arguments setting one field (a path and a body copy)
            out.shared[p.name] = typed(by_field[p.field], p.schema)
            continue
        parent = model.collections.get(p.ref or "")
        kind = schema_type(p.schema)
        value: Any = MISSING
        if p.field in unique:
            if kind not in ("string", "integer") or p.schema.get("enum") or p.schema.get("format"):
                return None
            out.own.append(p.name)
            continue
        if parent is not None and parent.records and parent.name != coll.name:
            value = rng.choice(parent.records).get(parent.pk)
        elif kind == "string" and not sayable_field(p.field, p.schema):
            value = get_path(sample, p.field) if sample else MISSING  # as the world has it
        elif p.schema.get("enum") or kind in ("boolean", "integer", "number", "string"):
            known = coll.profile.categorical.get(p.field)
            value = new_value(p.schema, p.field, None, rng, known, coll.hint, coll.noun)
        if value is MISSING and sample:
            value = get_path(sample, p.field)
        if value is MISSING or value is None or not stated(value):
            return None
        out.shared[p.name] = by_field[p.field] = typed(value, p.schema)
    return out


def made_fields(caps: Caps, args: dict[str, Any]) -> list[list[Any]]:
    """``[[field, value], ...]`` the arguments set (what the script checks)."""
    tool = caps.maker
    plain = str | int | float | bool
    return [
        [tool.params[k].field, v]
        for k, v in args.items()
        if isinstance(v, plain) and "." not in (tool.params[k].field or ".")
    ]


def stated(value: Any) -> bool:
    """A value a request can state: a scalar, or a short list of them."""
    if isinstance(value, list):
        return 0 < len(value) <= 3 and all(scalar(v) for v in value)
    return scalar(value) or isinstance(value, bool)


def own_values(caps: Caps, making_: Making, rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` argument sets of fresh, distinct values for ``making_.own``."""
    tool = caps.maker
    rows: list[dict[str, Any]] = [{} for _ in range(n)]
    if tool is None:
        return rows
    for name in making_.own:
        p = tool.params[name]
        if schema_type(p.schema) == "integer":
            taken = {r.get(p.field or "") for r in caps.coll.records}
            free = [i for i in range(1000, 10000) if i not in taken]
            values: list[Any] = rng.sample(free, n)
        else:
            values = list(
                dict.fromkeys(
                    fresh_text(rng, p.field or name, caps.coll.noun) for _ in range(3 * n)
                )
            )
            if len(values) < n:
                return []
        for row, v in zip(rows, values, strict=False):
            row[name] = v
    return rows


def name_field(caps: Caps) -> Writable | None:
    """The field new records are told apart by: a free-text field of the maker that people
    name things by (:func:`naming`), else the best name-like one."""
    fields = name_fields(caps)
    return next((w for w in fields if naming(caps, w)), fields[0] if fields else None)


NAMING_WORDS = frozenset({"name", "title", "email", "label", "handle", "slug", "username", "login"})
"""Last words of a field people name records by."""


def naming(caps: Caps, w: Writable) -> bool:
    """``w`` is a field people name records by ("name", "display name", "email": not a
    creation time or a file URL), and the records' values of it read as names."""
    said = field_name(w.path).split()
    if not (w.path in caps.coll.profile.names or said[-1:] and said[-1] in NAMING_WORDS):
        return False
    values = [get_path(r, w.path) for r in caps.coll.records]
    return sum(map(sayable_name, values)) >= 0.8 * len(values)


def sayable_name(value: Any) -> bool:
    """A name a request can list: a few words, not a sentence, not shaped like an id."""
    if not isinstance(value, str) or len(value.split()) > 5 or value.endswith("."):
        return False
    return 2 <= len(value) <= 40 and '"' not in value and not id_value(value)


def name_fields(caps: Caps) -> list[Writable]:
    """The maker's free-text name-like fields, best first (a client-chosen key, a name, a
    label)."""
    tool, coll = caps.maker, caps.coll
    if tool is None:
        return []
    keys = [  # a key the client chooses names the record best
        Writable(p.name, coll.pk, p.schema)
        for p in tool.required()
        if p.field == coll.pk and p.role in ("body", "key") and schema_type(p.schema) == "string"
    ]
    texts = [
        w
        for w in keys + caps.make_fields
        if schema_type(w.schema) == "string"
        and not w.schema.get("enum")
        and not w.schema.get("pattern")
        and not w.schema.get("format")
        and not w.prop
        and sayable_field(w.path, w.schema)
    ]
    prof = coll.profile
    texts.sort(
        key=lambda w: (w.path != coll.pk, w.path not in prof.names, w.path not in prof.labels)
    )
    return texts

"""Program templates that branch on one lookup or build records: ``lookup_branch``,
``create_batch``, ``create_chain``.

``lookup_branch`` reads one named record (or two, and compares them) and writes one way or the
other depending on what it read. The ``create_*`` templates serve APIs that can only create:
several records from values the request gives, with a field computed by a rule the agent
applies (``create_batch``), or a parent and then children linked to the key the API gave the
parent — a value the agent must read from the first call's result (``create_chain``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.synthesis.fields import number_range
from agentworld_gym.synthesis.tasks.model import EnvModel, humanize, looks_like_id
from agentworld_gym.synthesis.tasks.request import program as say
from agentworld_gym.synthesis.tasks.request.program import Verbs, pick
from agentworld_gym.synthesis.tasks.request.render import cap, plural, quote, series, told
from agentworld_gym.synthesis.tasks.sample.programs import (
    Answer,
    Caller,
    Caps,
    Program,
    ProgramError,
    Writable,
    address,
    setting,
)
from agentworld_gym.synthesis.tasks.sample.templates.shapes import (
    Knobs,
    choose,
    fetch,
    field_name,
    fmt,
    given,
    id_value,
    made_fields,
    making,
    name_field,
    naming,
    noun_of,
    number,
    own_values,
    round_cut,
    value_for,
    visible,
)
from agentworld_gym.synthesis.tasks.values import (
    MISSING,
    fresh_text,
    get_path,
    sayable_field,
    schema_type,
)


def _targetable(c: Caps) -> bool:
    return c.updater is not None and bool(c.writable) and bool(c.coll.records)


def lookup_branch(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Look one record up; update a record one way or another (or delete it) by what it says."""
    if not knobs.given:
        return None
    caps = choose(
        all_caps,
        rng,
        lambda c: (
            c.getter is not None
            and len(c.coll.records) >= 2
            and bool(c.coll.profile.categorical or c.coll.profile.numeric)
        ),
    )
    writers = [c for c in all_caps.values() if _targetable(c)]
    if caps is None or not writers:
        return None
    coll = caps.coll
    fields = [f for f in [*coll.profile.categorical, *coll.profile.numeric] if visible(caps, f)]
    if not fields:
        return None
    f = rng.choice(fields)
    numeric = f in coll.profile.numeric
    if numeric and _targetable(caps) and rng.random() < 0.4:
        return _compare(model, all_caps, caps, f, rng)
    tcaps = caps if _targetable(caps) and rng.random() < 0.6 else rng.choice(writers)
    pair = given(caps, rng, 1)
    if not pair or (numeric and not number(pair[0].get(f))):
        return None
    a = pair[0]
    # the record the condition is about, or one of its own (a record that points at it):
    # an unrelated target reads as a made-up rule ("if the operation is done, rename the
    # oauth client")
    key = a.get(coll.pk)
    related = [
        r
        for r in tcaps.coll.records
        if r is not a and any(v == key for k, v in r.items() if k != tcaps.coll.pk)
    ]
    own = tcaps is caps
    if own:
        target = a
    elif related:
        target = rng.choice(related)
    else:
        return None
    fields_ = [x for x in tcaps.writable if not looks_like_id(x.path)]  # never "change its id"
    if not fields_:
        return None
    w = rng.choice(fields_)
    if w.path == f and target is a:
        return None
    x, y = value_for(w, tcaps, [target], rng), value_for(w, tcaps, [target], rng)
    if x is MISSING or y is MISSING or x == y or id_value(x) or id_value(y):
        return None
    if numeric:
        nums = sorted({r[f] for r in coll.records if number(r.get(f))})
        if len(nums) < 3:
            return None
        v = nums[rng.randrange(len(nums) - 1)]
        v = round_cut(v, nums)
        test = pick(
            rng,
            [
                f"has {say.a(say.label_of(f))} above {fmt(v)}",
                f"has {say.label_of(f)} over {fmt(v)}",
            ],
        )
    else:
        values = [u for u in coll.profile.categorical[f] if str(u) != str(a.get(f))]
        v = a.get(f) if rng.random() < 0.5 or not values else rng.choice(values)
        test = say.pred([[f, v]], rng, False)
    delete = tcaps.deleter is not None and rng.random() < 0.3
    tk = str(target.get(tcaps.coll.pk))
    params = {
        "c": coll.name,
        "k": coll.pk,
        "ka": str(a.get(coll.pk)),
        "f": f,
        "if": "gt" if numeric else "eq",
        "v": v,
        "tc": tcaps.coll.name,
        "tk": tcaps.coll.pk,
        "then": [tk, [w.path, x]],
        "else": [tk, None if delete else [w.path, y]],
    }
    source = say.refer(caps, [a], all_caps=all_caps)
    aim = say.Ref("it") if own else say.refer(tcaps, [target], tcaps.updater, all_caps)
    listers = [*source.listers, *(t for t in aim.listers if t not in source.listers)]

    def run(caller: Caller) -> Answer:
        say.Ref("", listers).find(caller)
        got = fetch(caller, caps, a)
        x_now = got.get(f)
        hit_ = x_now > v if numeric else str(x_now) == str(v)
        if hit_ or not delete:
            caller(tcaps.updater, setting(tcaps.updater, tcaps.coll, target, w, x if hit_ else y))
        else:
            caller(tcaps.deleter, address(tcaps.deleter, tcaps.coll, target))
        return Answer(f"Its {humanize(f)} is {x_now}.", x_now)

    verbs, fname, tnoun = Verbs(model), field_name(w.path), tcaps.coll.noun
    first = "it" if own else f"the {tnoun} {aim.text}"
    again = "it" if own else f"that {tnoun}"

    def put(obj: str, value: Any) -> str:
        return verbs.update(tcaps.updater, rng, obj, fname, quote(value), tnoun)

    then = put(first, x)
    # a delete names its record again: the sentence that says "delete" holds its key
    other = verbs.delete(tcaps.deleter, rng, first) if delete else put(again, y)
    name, fl = f"the {coll.noun} {source.text}", say.label_of(f)
    request = pick(
        rng,
        [
            f"If {name} {test}, {then}; otherwise {other}. Also tell me its {fl}.",
            f"Check {name}: when it {test}, {then}, and if not, {other}. What is its {fl}?",
            f"For {name}: if it {test}, {then}; if not, {other}. Tell me its {fl} too.",
        ],
    )
    return Program(
        "lookup_branch",
        "cond",
        params,
        request,
        ["branch", "conditional_write"],
        "mixed",
        f"p:cond:{coll.name}:{params['ka']}",
        2,
        run,
    )


def _compare(
    model: EnvModel, all_caps: dict[str, Caps], caps: Caps, f: str, rng: random.Random
) -> Program | None:
    """Two named records: write to the first if its number is greater, else to the second."""
    coll = caps.coll
    pair = given(caps, rng, 2)
    if len(pair) < 2 or not all(number(r.get(f)) for r in pair) or pair[0][f] == pair[1][f]:
        return None
    w = rng.choice(caps.writable)
    x, y = value_for(w, caps, pair, rng), value_for(w, caps, pair, rng)
    if w.path == f or x is MISSING or y is MISSING or x == y:
        return None
    ka, kb = (str(r.get(coll.pk)) for r in pair)
    params = {
        "c": coll.name,
        "k": coll.pk,
        "ka": ka,
        "kb": kb,
        "f": f,
        "if": "cmp",
        "tc": coll.name,
        "tk": coll.pk,
        "then": [ka, [w.path, x]],
        "else": [kb, [w.path, y]],
    }

    refs = [say.refer(caps, [r], all_caps=all_caps) for r in pair]
    listers = list({id(t): t for ref in refs for t in ref.listers}.values())

    def run(caller: Caller) -> Answer:
        say.Ref("", listers).find(caller)
        first, second = (fetch(caller, caps, r) for r in pair)
        yes = first[f] > second[f]
        rec, value = (pair[0], x) if yes else (pair[1], y)
        caller(caps.updater, setting(caps.updater, coll, rec, w, value))
        return Answer(
            f"The greater {humanize(f)} is {max(first[f], second[f])}.", max(first[f], second[f])
        )

    verbs, fld, num, noun = Verbs(model), field_name(w.path), say.label_of(f), coll.noun
    one, two = (f"the {noun} {r.text}" for r in refs)

    def put(obj: str, value: Any) -> str:
        return verbs.update(caps.updater, rng, obj, fld, quote(value), noun)

    request = pick(
        rng,
        [
            f"If {one} has a higher {num} than {two}, {put(one, x)}; otherwise {put(two, y)}. "
            f"Tell me the greater {num}.",
            f"Which has the greater {num}, {one} or {two}? If it's the first, {put('it', x)}; "
            f"if it's the second, {put('it', y)}. Also tell me that {num}.",
            f"Compare the {num} of {one} and {two}: {put(one, x)} when its {num} is the greater "
            f"one, else {put(two, y)}. What is the greater {num}?",
        ],
    )
    return Program(
        "lookup_branch",
        "cond",
        params,
        request,
        ["branch", "aggregate", "conditional_write"],
        "number",
        f"p:cond:{coll.name}:{ka}",
        2,
        run,
    )


# -- building records -----------------------------------------------------------------------
def _free(caps: Caps, taken: set[str]) -> list[Writable]:
    """Top-level fields ``caps.maker`` can set, not yet used."""
    return [
        w
        for w in caps.make_fields
        if not w.prop
        and w.param not in taken
        and w.path not in caps.unique
        and sayable_field(w.path, w.schema)
    ]


def _numbers(w: Writable, rng: random.Random, n: int) -> list[int]:
    """``n`` different whole numbers plausible for ``w`` (ratings 1-5, years, amounts)."""
    a, b = number_range(w.path.rsplit(".", 1)[-1], w.schema)
    lo, hi = int(-(-a // 1)), int(b // 1)
    return rng.sample(range(lo, hi + 1), n) if hi - lo + 1 >= n + 1 else []


@dataclass
class Batch:
    """New records to create: each one's arguments and the fields the script checks."""

    caps: Caps
    args: list[dict[str, Any]]
    common: list[list[Any]]
    """``[[field, value], ...]`` every record gets."""
    want: list[list[list[Any]]]
    """Each record's own ``[[field, value], ...]``."""
    items: list[str]
    """How the request lists each record."""
    shared: str
    """The values every record gets, as the request states them."""
    label: str
    """The field the listing names each record by."""
    same: dict[str, str] = field(default_factory=dict)
    """Arguments that copy another (see :class:`~.shapes.Making`)."""


def _batch(
    model: EnvModel,
    caps: Caps,
    rng: random.Random,
    per_item: list[dict[str, Any]],
    common: dict[str, Any],
    computed: frozenset[str] = frozenset(),
    later: frozenset[str] = frozenset(),
    given: bool = True,
) -> Batch | None:
    """Records with the ``per_item`` and ``common`` arguments plus whatever else the create
    tool requires (stated in the request, checked by the script). The ``computed`` arguments
    are left out of the listing: a rule in the request says how to set them; the ``later``
    ones are left to the program (a key an earlier call returns)."""
    tool = caps.maker
    if tool is None or not per_item:
        return None
    mk = making(model, caps, rng, {*per_item[0], *common, *later})
    own = own_values(caps, mk, rng, len(per_item)) if mk is not None else []
    if mk is None or len(own) != len(per_item) or (not given and mk.names_keys(caps)):
        return None
    if any(id_value(v) for k, v in mk.shared.items() if not tool.params[k].ref):
        return None  # one made-up id for every new record ("request id "req_5ece...")
    fixed = {**mk.shared, **common}
    first = next(iter(per_item[0]))
    label = field_name(tool.params[first].field or first)
    out = Batch(caps, [], made_fields(caps, fixed), [], [], mk.text(caps), label)
    out.same = mk.same
    for item, extra in zip(per_item, own, strict=True):
        out.args.append(mk.copy({**fixed, **item, **extra}))
        out.want.append(made_fields(caps, {**item, **extra}))
        head, *rest = [(k, v) for k, v in [*item.items(), *extra.items()] if k not in computed]
        told = ", ".join(f"{field_name(tool.params[k].field or k)} {quote(v)}" for k, v in rest)
        out.items.append(quote(head[1]) + (f" ({told})" if told else ""))
    return out


def create_batch(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Create several records the request lists by what people name them by (a name, a
    title, an email: not "these froms" or "these ids", unless an environment under its floor
    has nothing else); a field set by a rule over a number."""

    def named(c: Caps) -> bool:
        w = name_field(c)
        return w is not None and (naming(c, w) or not knobs.strict)

    caps = choose(all_caps, rng, lambda c: c.maker is not None and named(c))
    if caps is None:
        return None
    coll, nw = caps.coll, name_field(caps)
    lo = max(3, knobs.min_calls)
    n = rng.randint(lo, max(lo, min(knobs.max_calls, say.MAX_ITEMS if knobs.long else 5)))
    names = list(dict.fromkeys(fresh_text(rng, nw.path, coll.noun) for _ in range(n)))
    if len(names) > knobs.max_calls:
        return None
    nums = [w for w in _free(caps, {nw.param}) if schema_type(w.schema) == "integer"]
    nf = rng.choice(nums) if nums else None
    outs = [
        w
        for w in _free(caps, {nw.param, nf.param if nf else ""})
        if schema_type(w.schema) in ("string", "boolean")
    ]
    out = rng.choice(outs) if outs else None
    items: list[dict[str, Any]] = [{nw.param: name} for name in names]
    common: dict[str, Any] = {}
    verbs = Verbs(model)
    did = verbs.done(caps.maker, "create")
    rule, ask, count = "", f"how many {noun_of(coll, 2)} you {did}", len(names)
    values = _numbers(nf, rng, len(names)) if nf and out else []
    if nf and out and len(values) > 1:  # a threshold needs values on both sides
        a, b = value_for(out, caps, [], rng), value_for(out, caps, [], rng)
        t = sorted(values)[rng.randrange(1, len(values))] - 1
        if a is MISSING or b is MISSING or a == b:
            return None
        for item, x in zip(items, values, strict=True):
            item.update({nf.param: x, out.param: a if x > t else b})
        nfn, outn = field_name(nf.path), field_name(out.path)
        rule = pick(
            rng,
            [
                f" Give each one whose {nfn} is above {t} the {outn} {quote(a)}, and the others "
                f"{quote(b)}.",
                f" Those with a {nfn} above {t} get {outn} {quote(a)}; the rest get {quote(b)}.",
                f" The {outn} depends on the {nfn}: {quote(a)} above {t}, otherwise {quote(b)}.",
            ],
        )
        ask, count = f"how many got {quote(a)}", sum(1 for x in values if x > t)
    elif out is not None:
        v = value_for(out, caps, [], rng)
        if v is MISSING:
            return None
        common[out.param] = v
    computed = frozenset({out.param} if rule else ())
    batch = _batch(model, caps, rng, items, common, computed, given=knobs.given)
    if batch is None:
        return None
    shared = ", ".join(x for x in (batch.shared, *_told(caps, common)) if x)
    params = {"c": coll.name, "k": coll.pk, "all": batch.common, "want": batch.want, "n": count}
    params["told"] = not rule  # every record listed: the user knows how many

    def run(caller: Caller) -> Answer:
        for args in batch.args:
            caller(caps.maker, args)
        return Answer(f"{count}.", count) if rule else Answer(f"Done: {count} created.")

    nouns, items = noun_of(coll, 2), series(batch.items)
    each = f", each with {shared}" if shared else ""
    make = verbs.word(caps.maker, rng, "create")
    then, tell, know = (f" Then tell me {ask}.", f" Tell me {ask}.", f" Let me know {ask}.")
    if not rule:
        then = tell = know = ""
    if batch.label.split()[-1] in ("name", "title"):  # people name the records they make
        called = pick(rng, ["named", "called"])
        phrasings = [
            f"Please {make} {nouns} {called} {items}{each}.{rule}{then}",
            f"Could you {make} {len(names)} {nouns}: {items}{each}?{rule}{know}",
            f"I need new {nouns} {called} {items}{each} — please {make} them.{rule}{tell}",
        ]
    else:
        phrasings = [
            f"Please {make} {nouns} for these {plural(batch.label)}: {items}{each}.{rule}{then}",
            f"{cap(make)} {len(names)} {nouns}{each}; their {plural(batch.label)} are {items}."
            f"{rule}{tell}",
            f"Could you {make} {say.a(noun_of(coll, 1))} for each of {items}{each}?{rule}{know}",
        ]
    request = pick(rng, phrasings)
    flow = ["loop", "write"] + (["branch"] if rule else [])
    return Program(
        "create_batch",
        "made",
        params,
        request,
        flow,
        "number" if rule else "none",
        f"p:made:{coll.name}:{nw.path}",
        1,
        run,
    )


def _told(caps: Caps, values: dict[str, Any]) -> list[str]:
    tool = caps.maker
    return [told(field_name(tool.params[k].field or k), v) for k, v in values.items()]


def create_chain(
    model: EnvModel, all_caps: dict[str, Caps], rng: random.Random, knobs: Knobs
) -> Program | None:
    """Create a parent, then children linked to the key the API gave it."""
    options = [
        (c, link, all_caps[link[2]])
        for c in all_caps.values()
        if c.maker is not None and name_field(c) is not None
        for link in c.links
        if all_caps[link[2]].maker is not None and name_field(all_caps[link[2]]) is not None
    ]
    if not options:
        return None
    caps, (arg, fld, pc), pcaps = rng.choice(options)
    coll, pcoll = caps.coll, pcaps.coll
    nw, pw = name_field(caps), name_field(pcaps)
    if nw.param == arg or pcaps.maker.record is None:
        return None
    n = rng.randint(2, max(2, min(knobs.max_calls - 1, say.MAX_ITEMS if knobs.long else 4)))
    names = list(dict.fromkeys(fresh_text(rng, nw.path, coll.noun) for _ in range(n)))
    first = [{pw.param: fresh_text(rng, pw.path, pcoll.noun)}]
    parent = _batch(model, pcaps, rng, first, {}, given=knobs.given)
    if parent is None:
        return None
    same = {pcaps.maker.params[k].field: v for k, v in parent.args[0].items()}
    common = {  # the parents in the children's path are the new parent's own
        p.name: same[p.field]
        for p in caps.maker.required()
        if p.field in same and p.name not in (arg, nw.param)
    }
    items = [{nw.param: x} for x in names]
    kids = _batch(model, caps, rng, items, common, later=frozenset({arg}), given=knobs.given)
    if kids is None:
        return None
    path = ".".join(p for p in (pcaps.maker.record, pcoll.pk) if p)
    want_type = schema_type(caps.maker.params[arg].schema)
    params = {
        "c": coll.name,
        "k": coll.pk,
        "pc": pcoll.name,
        "pk": pcoll.pk,
        "pw": parent.want[0] + parent.common,
        "pf": fld,
        "all": kids.common,
        "want": kids.want,
        "n": len(names),
        "told": True,  # the request lists every child: the user knows how many
    }

    def run(caller: Caller) -> Answer:
        key = get_path(caller(pcaps.maker, parent.args[0]), path)
        if not (want_type == "string" and isinstance(key, str)) and not (
            want_type == "integer" and isinstance(key, int) and not isinstance(key, bool)
        ):
            raise ProgramError("the new key does not fit the link argument")
        copies = [d for d, s in kids.same.items() if s == arg]
        for args in kids.args:
            ref = {a: f"$0.{path}" for a in [arg, *copies]}
            caller(caps.maker, {**args, **dict.fromkeys(ref, key)}, refs=ref)
        return Answer(f"Done: {len(names)} {noun_of(coll, len(names))} added.")

    verbs = Verbs(model)
    pmake, kmake = verbs.word(pcaps.maker, rng, "create"), verbs.word(caps.maker, rng, "create")
    nouns = noun_of(coll, 2)
    kshared = ", ".join(x for x in (kids.shared, *_told(caps, common)) if x)
    pnew = f"{say.a(pcoll.noun)} with {parent.label} {parent.items[0]}" + (
        f" ({parent.shared})" if parent.shared else ""
    )
    kids_text = f"{nouns} with {kids.label} {series(kids.items)}" + (
        f" ({kshared})" if kshared else ""
    )
    request = pick(
        rng,
        [
            f"{cap(pmake)} {pnew}, then {kmake} {kids_text} under it.",
            f"I'm setting up a new {pcoll.noun}: please {pmake} {pnew}, and {kmake} {kids_text}"
            " for it.",
            f"Could you {pmake} {pnew} and {kmake} {kids_text} for it?",
        ],
    )
    return Program(
        "create_chain",
        "made",
        params,
        request,
        ["join", "loop", "write"],
        "none",
        f"p:chain:{coll.name}:{pcoll.name}",
        2,
        run,
    )

"""Reseed existing worlds in place: placeholder and ill-fitting strings in ``db/*.json``
become field-appropriate values from :class:`~agentworld_gym.synthesis.fields.FieldValues`.

The environment must keep working, so only *free* string leaves change. Left alone:

* every collection's primary key, reference and parent-scope fields, ``match`` fields, and
  any value equal to a key or reference value anywhere in the world;
* values a task names (any string in ``tasks.json``, or a substring of its text) and enum
  values of any tool parameter; on ``search`` fields, values holding a task's query text;
* categorical fields (at most :data:`CATEGORICAL_MAX` distinct values over at least
  :data:`CATEGORICAL_MIN` records) and filter fields whose values repeat;
* enum, ``format`` (unless the new value has that format) and ``pattern`` (unless it
  matches) constrained values, ids, and anything not a string.

Only the tasks the task synthesizer did not make (:func:`protected_tasks`) protect values: the
synthesizer's tasks are regenerated after a reseed.

Then the filler values a leaf-by-leaf rewrite must leave (keys, references, categories, scopes:
``cold-cultural-43``, ``resourceGroupName: "enough father"``, ``Name run-732``) are renamed
once each to a field-appropriate value, and every occurrence in the db is rewritten, so
relations still resolve (:func:`plan_renames`, :func:`apply_renames`). The renamed world is
checked in memory (:func:`check_world`: gets of known keys, dangling references, protected
gold chains); an environment that fails keeps the leaf-only reseed.

Dates within one object are then ordered (created <= start <= updated <= end/due/expires).
Each new value is drawn from a generator fixed by (seed, env, collection, record, path), so a
run is reproducible and independent of the order or number of worker processes.
"""

from __future__ import annotations

import datetime as dt
import functools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.synthesis.fields import (
    ALWAYS,
    STRUCTURED,
    FieldValues,
    fold,
    infra,
    is_junk,
    is_placeholder,
    is_purpose,
    is_stock_label,
    is_stock_slug,
    kind_of,
    looks_like,
    matches,
    words_of,
)
from agentworld_gym.synthesis.parallel import ordered_map
from agentworld_gym.synthesis.tasks.values import rng_for

SYNTH_TASKS = "synth-tasks"
"""``provenance.synthesizer`` of the task synthesizer's tasks (regenerated after a reseed)."""
CATEGORICAL_MIN = 5
CATEGORICAL_MAX = 5
_PERSON_KINDS = frozenset(("full_name", "first_name", "last_name"))
_NEVER = frozenset(("id", "uuid", "discriminator", "integer", "number", "boolean", "seconds"))
_FORMATS_WE_MAKE = {
    "date-time": ("datetime",),
    "date": ("date", "birthdate"),
    "email": ("email",),
    "uri": ("url", "image"),
    "url": ("url", "image"),
    "hostname": ("hostname",),
    "ipv4": ("ip",),
    "password": ("secret",),
    "duration": ("duration",),
}
_HOST = re.compile(r"(?:@|https?://)(?:www\.|api\.|cdn\.)?([a-z0-9-]+(?:\.[a-z0-9-]+)+)", re.I)
_RANKS = (
    (0, ("created", "creation", "added", "submitted", "issued", "opened", "registered")),
    (1, ("start", "started", "begin", "begins", "from", "since", "effective")),
    (2, ("updated", "modified", "edited", "changed", "lastupdated", "lastmodified")),
    (3, ("end", "ended", "finished", "completed", "closed", "due", "deadline", "expires")),
    (3, ("expiry", "expiration", "until", "to", "expired", "ends", "expire", "resolved")),
)


@dataclass
class EnvReseed:
    """What a reseed did (or would do) to one environment."""

    env: str
    leaves: int = 0
    changed: int = 0
    dates_ordered: int = 0
    skipped: str = ""
    renamed: int = 0
    """Distinct values renamed consistently (keys, references, categories, scopes)."""
    rename_leaves: int = 0
    """Leaves those renames rewrote."""
    fallback: str = ""
    """Why the renames were dropped (the leaf-only reseed kept), "" when they were not."""
    renames: list[tuple[str, str, str]] = field(default_factory=list)
    """(collection.field, before, after) for the first few renames."""
    examples: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(collection, path, before, after) for the first few changes."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "leaves": self.leaves,
            "changed": self.changed,
            "dates_ordered": self.dates_ordered,
            "skipped": self.skipped,
            "renamed": self.renamed,
            "rename_leaves": self.rename_leaves,
            "fallback": self.fallback,
            "renames": [list(r) for r in self.renames],
            "examples": [list(e) for e in self.examples],
        }


@dataclass
class _World:
    """Everything about one environment that decides which leaves may change."""

    env_id: str
    pks: dict[str, str]
    fixed: dict[str, set[str]]
    """Collection -> top-level fields never changed (keys, references, scopes, matches)."""
    filters: dict[str, set[str]]
    search: dict[str, set[str]]
    schemas: dict[str, dict[str, dict[str, Any]]]
    """Collection -> top-level field -> schema (from the tools' parameters)."""
    values: set[str]
    """Values never changed: keys, references, enum members, strings tasks name."""
    text: str
    """All of the protected tasks' strings, joined (a value inside it is named by a task)."""
    queries: list[str]
    enums: set[str] = field(default_factory=set)
    """Enum members of the tools' parameters (never renamed)."""
    named: set[str] = field(default_factory=set)
    """Strings the protected tasks hold (never renamed)."""
    limits: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)
    """Collection -> top-level field -> every tool argument schema that carries its value."""


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(node, list):
        for v in node:
            yield from _strings(v)


def _enums(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "enum" and isinstance(v, list):
                yield from (x for x in v if isinstance(x, str))
            else:
                yield from _enums(v)
    elif isinstance(node, list):
        for v in node:
            yield from _enums(v)


def skip_reason(env: dict[str, Any]) -> str:
    """Why an environment is left alone ("" when it may be reseeded)."""
    types = {(t.get("implementation") or {}).get("type") for t in env.get("tools", [])}
    if types - {"op"}:
        return "tools are code (implementation.type " + ", ".join(sorted(map(str, types))) + ")"
    prov = env.get("provenance") or {}
    source = str(prov.get("source", "")).lower() if isinstance(prov, dict) else ""
    written = "hand-written" in source or "handwritten" in source or "re-implemented" in source
    if written or env.get("id") == "notion":
        return "hand-written environment"
    return ""


def _world(env: dict[str, Any], tasks: list[Any], db: dict[str, list[Any]]) -> _World:
    colls = env.get("collections") or {}
    pks = {name: meta.get("primary_key", "id") for name, meta in colls.items()}
    fixed: dict[str, set[str]] = {name: {pk} for name, pk in pks.items()}
    filters: dict[str, set[str]] = {name: set() for name in colls}
    search: dict[str, set[str]] = {name: set() for name in colls}
    schemas: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in colls}
    ref_fields: dict[str, set[str]] = {name: set() for name in colls}
    search_args: dict[str, set[str]] = {}
    limits: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for name, meta in colls.items():
        ref_fields[name] |= set((meta.get("references") or {}).keys())
    for tool in env.get("tools", []):
        impl = tool.get("implementation") or {}
        coll = impl.get("collection")
        if coll not in colls:
            continue
        props = (tool.get("parameters") or {}).get("properties") or {}
        carried = {impl.get("key"): pks[coll]} if impl.get("key") else {}
        for p in impl.get("parents", []):
            ref_fields[coll].add(p.get("field", p.get("arg")))
            carried[p.get("arg")] = p.get("field", p.get("arg"))
        for arg, fld in (impl.get("match") or {}).items():
            fixed[coll].add(fld)
            carried[arg] = fld
        for arg, fld in [*carried.items(), *(impl.get("filters") or {}).items()]:
            if isinstance(props.get(arg), dict) and isinstance(fld, str):
                limits.setdefault(coll, {}).setdefault(fld, []).append(props[arg])
        for arg, fld in (impl.get("filters") or {}).items():
            filters[coll].add(fld)
            if isinstance(props.get(arg), dict):
                schemas[coll].setdefault(fld, props[arg])
        for arg, fld in (impl.get("body") or {}).items():
            if isinstance(props.get(arg), dict):
                schemas[coll][fld] = props[arg]
        srch = impl.get("search") or {}
        search[coll] |= set(srch.get("fields", []))
        if srch.get("arg"):
            search_args.setdefault(tool.get("name", ""), set()).add(srch["arg"])
    enums: set[str] = set(_enums(env.get("tools", [])))
    values: set[str] = set(enums)
    for name, rows in db.items():
        fixed[name] |= ref_fields.get(name, set())
        for rec in rows:
            if not isinstance(rec, dict):
                continue
            for fld in fixed[name]:
                v = rec.get(fld)
                values.update(x for x in (v if isinstance(v, list) else [v]) if isinstance(x, str))
    for name, flds in ref_fields.items():
        for fld in flds:
            for rec in db.get(name, []):
                if isinstance(rec, dict) and isinstance(rec.get(fld), str):
                    values.add(rec[fld])
    strings = list(_strings(tasks))
    values.update(strings)
    queries: list[str] = []
    for task in tasks if isinstance(tasks, list) else []:
        gold = (task.get("gold") or {}) if isinstance(task, dict) else {}
        for call in gold.get("calls", []) if isinstance(gold, dict) else []:
            args = call.get("arguments") or {}
            for arg in search_args.get(call.get("name", ""), ()):
                if isinstance(args.get(arg), str) and args[arg].strip():
                    queries.append(args[arg].lower())
    return _World(
        env_id=str(env.get("id", "")),
        pks=pks,
        fixed=fixed,
        filters=filters,
        search=search,
        schemas=schemas,
        values=values,
        text="\n".join(strings),
        queries=queries,
        enums=enums,
        named=set(strings),
        limits=limits,
    )


def _leaves(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, (*path, str(k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, (*path, str(i)))
    else:
        yield path, node


def _shape(path: tuple[str, ...]) -> str:
    """The path with list indices dropped: ``tags.0`` and ``tags.1`` are one field."""
    return ".".join(p for p in path if not p.isdigit())


def _categorical(rows: list[Any], filters: set[str]) -> set[str]:
    """Field shapes whose values are categories (few distinct values, or repeated filters)."""
    seen: dict[str, Counter[str]] = {}
    for rec in rows:
        for path, v in _leaves(rec):
            if isinstance(v, str):
                seen.setdefault(_shape(path), Counter())[v] += 1
    out: set[str] = set()
    for shape, counts in seen.items():
        total = sum(counts.values())
        if total >= CATEGORICAL_MIN and len(counts) <= CATEGORICAL_MAX:
            out.add(shape)
        elif shape.split(".")[0] in filters and max(counts.values()) > 1:
            out.add(shape)
    return out


def _schema_at(top: dict[str, dict[str, Any]], path: tuple[str, ...]) -> dict[str, Any]:
    """The schema of a leaf, following properties/items from the top-level field's schema."""
    schema: Any = top.get(path[0], {})
    for part in path[1:]:
        if not isinstance(schema, dict):
            return {}
        if part.isdigit():
            schema = schema.get("items", {})
        else:
            schema = (schema.get("properties") or {}).get(part, {})
    return schema if isinstance(schema, dict) else {}


def _owner(coll: str, path: tuple[str, ...]) -> tuple[str, str]:
    """(field name, owning noun) of a leaf: ``tags.0`` -> (``tags``, coll)."""
    named = [p for p in path if not p.isdigit()]
    name = named[-1] if named else ""
    noun = named[-2] if len(named) > 1 else coll
    return name, noun


def _domains(db: dict[str, list[Any]]) -> list[str]:
    """The hosts the world's emails and URLs already use (new ones stay on them)."""
    counts: Counter[str] = Counter()
    for rows in db.values():
        for rec in rows:
            for _, v in _leaves(rec):
                if isinstance(v, str) and ("@" in v or "://" in v):
                    for host in _HOST.findall(v):
                        counts[host.lower()] += 1
    return [h for h, _ in counts.most_common(6)] or ["example.com"]


def _tasks_name(world: _World, value: str) -> bool:
    """Whether a protected task holds this value (it is never renamed)."""
    return value in world.named or (len(value) >= 3 and value in world.text)


def _named(world: _World, value: str) -> bool:
    """Whether a task or key uses this value (it must stay byte-identical)."""
    return value in world.values or (len(value) >= 3 and value in world.text)


def _settle(
    world: _World, coll: str, path: tuple[str, ...], value: str, schema: dict[str, Any]
) -> str | None:
    """Why not: ``None`` when the leaf may be rewritten, else the kind to use."""
    if path[0] in world.fixed.get(coll, ()) or _named(world, value):
        return None
    if schema.get("enum") or schema.get("const") is not None:
        return None
    name, noun = _owner(coll, path)
    kind = kind_of(name, schema, noun)
    if kind in _NEVER:
        return None
    fmt = schema.get("format")
    if isinstance(fmt, str) and kind not in _FORMATS_WE_MAKE.get(fmt, ()):
        return None
    if path[0] in world.search.get(coll, ()) and any(q in value.lower() for q in world.queries):
        return None
    if is_junk(value) or kind in ALWAYS or is_stock_label(value):
        return kind
    if kind in _PERSON_KINDS and (is_purpose(value) or is_stock_slug(value)):
        return kind  # a person named "Audit Trail" or "billing-prod"
    if is_stock_slug(value) and not infra(name, noun):
        return kind
    if kind in STRUCTURED and not looks_like(kind, value):
        return kind
    return None


def _draw(
    world: _World,
    fv: FieldValues,
    coll: str,
    path: tuple[str, ...],
    old: str,
    schema: dict[str, Any],
    used: frozenset[str] | set[str] = frozenset(),
) -> str | None:
    name, noun = _owner(coll, path)
    pattern = schema.get("pattern")
    searched = path[0] in world.search.get(coll, ())
    for _ in range(8):
        new = fv.string(name, schema, noun)
        if new == old or new in used or _named(world, new) or is_placeholder(new):
            continue
        if isinstance(pattern, str) and not matches(pattern, new):
            return None
        if searched and any(q in new.lower() for q in world.queries):
            continue
        return new
    return None


# -- dates ------------------------------------------------------------------------------------
def _rank(name: str) -> int | None:
    words = words_of(name)
    key = fold(name)
    for rank, names in _RANKS:
        if key in names or any(w in names for w in words[:1] + words[-1:]):
            return rank
    return None


def _parse(value: str) -> tuple[dt.datetime, str] | None:
    """A date/time string and a strftime format that writes it back in the same shape."""
    m = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2}:\d{2})(\.\d+)?(Z)?)?", value)
    if not m:
        return None
    try:
        if m.group(2) is None:
            return dt.datetime.strptime(m.group(1), "%Y-%m-%d"), "%Y-%m-%d"
        moment = dt.datetime.strptime(f"{m.group(1)}T{m.group(2)}", "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    frac = m.group(3) or ""
    return moment, "%Y-%m-%dT%H:%M:%S" + frac + (m.group(4) or "")


def _order_dates(
    world: _World, coll: str, node: Any, path: tuple[str, ...], key: tuple[Any, ...]
) -> list[tuple[tuple[str, ...], str, str]]:
    """created <= start <= updated <= end in every object of a record; the changes made."""
    changes: list[tuple[tuple[str, ...], str, str]] = []
    if isinstance(node, list):
        for i, v in enumerate(node):
            changes += _order_dates(world, coll, v, (*path, str(i)), key)
        return changes
    if not isinstance(node, dict):
        return changes
    dated: list[tuple[int, str, dt.datetime, str]] = []
    for k, v in node.items():
        if isinstance(v, dict | list):
            changes += _order_dates(world, coll, v, (*path, str(k)), key)
            continue
        rank = _rank(str(k)) if isinstance(v, str) else None
        parsed = _parse(v) if rank is not None else None
        if parsed is not None:
            dated.append((rank, str(k), parsed[0], parsed[1]))
    if len({r for r, *_ in dated}) < 2:
        return changes
    dated.sort(key=lambda d: d[0])
    latest: dt.datetime | None = None
    latest_rank = -1
    for rank, k, moment, fmt in dated:
        here = (*path, k)
        old = node[k]
        if latest is not None and rank > latest_rank and moment < latest:
            locked = here[0] in world.fixed.get(coll, ()) or _named(world, old)
            if not locked:
                rng = rng_for(*key, ".".join(here), "date")
                gap = dt.timedelta(hours=rng.randrange(1, 24 * 30))
                if fmt == "%Y-%m-%d":
                    gap = dt.timedelta(days=rng.randrange(1, 30))
                new = (latest + gap).strftime(fmt)
                node[k] = new
                moment = latest + gap
                changes.append((here, old, new))
        if latest is None or moment > latest:
            latest = moment
        latest_rank = rank
    return changes


# -- one environment --------------------------------------------------------------------------
def protected_tasks(tasks: Any) -> list[dict[str, Any]]:
    """The tasks a reseed must keep working: every task the task synthesizer did not make
    (``provenance.synthesizer != "synth-tasks"``); the synthesizer's are regenerated after."""
    out: list[dict[str, Any]] = []
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        prov = task.get("provenance")
        if not isinstance(prov, dict) or prov.get("synthesizer") != SYNTH_TASKS:
            out.append(task)
    return out


def _copy(data: Any) -> Any:
    return orjson.loads(orjson.dumps(data))


def _leaf_pass(
    world: _World,
    db: dict[str, list[Any]],
    seed: int,
    domains: list[str],
    out: EnvReseed,
    examples: int,
) -> tuple[set[str], set[str]]:
    """Rewrite the free leaves and order dates in place: (collections touched, new values)."""
    touched: set[str] = set()
    produced: set[str] = set()
    for coll, rows in db.items():
        cats = _categorical(rows, world.filters.get(coll, set()))
        values_at: dict[str, set[str]] = {}  # drawn per field: no two records share a name
        top = world.schemas.get(coll, {})
        for i, rec in enumerate(rows):
            if not isinstance(rec, dict):
                continue
            for path, value in list(_leaves(rec)):
                if not isinstance(value, str):
                    continue
                out.leaves += 1
                if not path or _shape(path) in cats:
                    continue
                schema = _schema_at(top, path)
                kind = _settle(world, coll, path, value, schema)
                if kind is None:
                    continue
                rng = rng_for(seed, out.env, coll, i, ".".join(path))
                used = values_at.setdefault(_shape(path), set())
                new = _draw(
                    world, FieldValues(rng, domains, out.env), coll, path, value, schema, used
                )
                if new is None:
                    continue
                used.add(new)
                _put(rec, path, new)
                produced.add(new)
                out.changed += 1
                touched.add(coll)
                if len(out.examples) < examples:
                    out.examples.append((coll, ".".join(path), value, new))
            for here, old, new in _order_dates(world, coll, rec, (), (seed, out.env, coll, i)):
                out.dates_ordered += 1
                produced.add(new)
                touched.add(coll)
                if len(out.examples) < examples:
                    out.examples.append((coll, ".".join(here), old, new))
    return touched, produced


def reseed_env(
    folder: Path, seed: int = 0, write: bool = False, examples: int = 5, rename: bool = True
) -> EnvReseed:
    """Reseed one environment folder (in place when ``write``); counts and a few examples.

    The free leaves are rewritten one by one; then (``rename``) the placeholder values that
    are keys, references, categories or scopes are renamed consistently everywhere
    (:func:`plan_renames`), and the result is checked (:func:`check_world`): when a get of a
    known key or a protected task's gold chain stops working, the environment keeps the
    leaf-only reseed and ``fallback`` says why.
    """
    folder = Path(folder)
    env = orjson.loads((folder / "env.json").read_bytes())
    out = EnvReseed(env=str(env.get("id", folder.name)))
    out.skipped = skip_reason(env)
    if out.skipped:
        return out
    tasks_file = folder / "tasks.json"
    tasks = orjson.loads(tasks_file.read_bytes()) if tasks_file.is_file() else []
    keep = protected_tasks(tasks)
    docs = {n for n, m in (env.get("collections") or {}).items() if m.get("kind") == "document"}
    db: dict[str, list[Any]] = {}
    documents: dict[str, Any] = {}
    raw: dict[str, bytes] = {}
    for path in sorted((folder / "db").glob("*.json")):
        raw[path.stem] = path.read_bytes()
        data = orjson.loads(raw[path.stem])
        if isinstance(data, list) and path.stem not in docs:
            db[path.stem] = data
        else:
            documents[path.stem] = data
    world = _world(env, keep, db)
    domains = _domains(db)
    original = _copy(db) if rename else {}
    touched, produced = _leaf_pass(world, db, seed, domains, out, examples)
    if rename:
        plan = plan_renames(world, db, documents, seed, domains, produced)
        if plan:
            leaf_db, leaf_docs = _copy(db), _copy(documents)
            renamed_docs = _copy(documents)
            count, where = apply_renames(plan, db, renamed_docs)
            try:
                problem = check_world(env, keep, (original, documents), (db, renamed_docs), plan)
            except Exception as exc:  # noqa: BLE001 - any failure keeps the leaf-only reseed
                problem = f"check failed: {type(exc).__name__}: {str(exc)[:120]}"
            if problem:
                db, documents = leaf_db, leaf_docs
                out.fallback = problem
            else:
                documents = renamed_docs
                touched |= where
                out.renamed = len(plan)
                out.rename_leaves = count
                for old in sorted(plan, key=lambda v: plan[v].order)[:examples]:
                    r = plan[old]
                    out.renames.append((r.field, old, r.new))
    if write:
        data_of = {**db, **documents}
        for coll in sorted(touched):
            indent = raw[coll][:2] in (b"[\n", b"[\r", b"{\n", b"{\r")
            opt = orjson.OPT_INDENT_2 if indent else 0
            (folder / "db" / f"{coll}.json").write_bytes(orjson.dumps(data_of[coll], option=opt))
    return out


# -- consistent renames -----------------------------------------------------------------------
@dataclass
class Rename:
    """One value renamed everywhere in an environment's db."""

    new: str
    field: str
    """``collection.field`` of the occurrence that chose the new value's kind."""
    order: int = 0


_WORD_NUM = re.compile(r"^[A-Z][a-z]+ [A-Za-z]+[- ]\d{2,3}$")  # "Effort push-617"
_SLUG_NUM = re.compile(r"^([a-z]+)-([a-z]+)-\d{1,3}$")  # "cold-cultural-43"
_TWO = re.compile(r"^([a-zA-Z]+) ([a-zA-Z]+)$")  # "enough father"
_PADDED = re.compile(r"^([a-z]+) ([a-z]+)[0-9a-f]+$")  # "product prevent9485e"
_SALAD = re.compile(r"^[A-Z][a-z]+(?: [a-zA-Z]+){2,5}\.?$")  # "Federal her enough blue."
_SLUGGY = re.compile(r"^[a-z0-9]+(?:([-_.])[a-z0-9]+)+$")
_REGION_PREFIXES = frozenset("us eu ap sa ca me af cn uk".split())
"""First words of real region slugs (``us-east-1``), never a filler's."""
_CATEGORY_KINDS = frozenset(
    "status discriminator tag method protocol format mime channel scope region locale "
    "language currency countrycode timezone color version provider".split()
)
"""Kinds whose two ordinary words may be a real category (``high risk``): those stay."""
_BAD_KINDS = _NEVER | {"etag"}
"""Kinds a renamed key or name is never drawn as (a slug or label is drawn instead)."""
_FORMAT_SHAPES = {
    "date-time": "datetime",
    "date": "date",
    "email": "email",
    "uri": "url",
    "url": "url",
    "hostname": "hostname",
    "ipv4": "ip",
    "uuid": "uuid",
}


@functools.lru_cache(maxsize=1)
def _lorem() -> frozenset[str]:
    """The words the old generators strung together (Faker's lorem list)."""
    try:
        from faker.providers.lorem.en_US import Provider
    except ImportError:  # pragma: no cover - faker is a dependency
        return frozenset()
    return frozenset(Provider.word_list)


def filler_strength(value: str) -> int:
    """2 for an unmistakable filler (``Golden lagoon 951``, ``Effort push-617``), 1 for one
    made of random lorem words (``enough father``, ``cold-cultural-43``), 0 otherwise."""
    if is_placeholder(value) or _WORD_NUM.match(value):
        return 2
    lorem = _lorem()
    m = _SLUG_NUM.match(value)
    if m and (m.group(1) in _REGION_PREFIXES or m.group(2) in _REGION_PREFIXES):
        return 0
    for pattern in (_SLUG_NUM, _TWO, _PADDED):
        m = pattern.match(value)
        if m:
            return int(m.group(1).lower() in lorem and m.group(2).lower() in lorem)
    if _SALAD.match(value):
        return int(all(w in lorem for w in value.rstrip(".").lower().split()))
    return 0


def _occurrences(
    db: dict[str, list[Any]],
) -> tuple[dict[str, list[tuple[str, int, tuple[str, ...]]]], set[str], set[str]]:
    """Where every string value sits; all strings; all dict keys."""
    where: dict[str, list[tuple[str, int, tuple[str, ...]]]] = {}
    strings: set[str] = set()
    keys: set[str] = set()
    for coll, rows in db.items():
        for i, rec in enumerate(rows):
            for path, v in _leaves(rec):
                if isinstance(v, str):
                    strings.add(v)
                    where.setdefault(v, []).append((coll, i, path))
                keys.update(p for p in path if not p.isdigit())
    return where, strings, keys


def _fits(value: str, schema: dict[str, Any]) -> bool:
    enum = schema.get("enum")
    if isinstance(enum, list) and enum and value not in enum:
        return False
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt:
        kind = _FORMAT_SHAPES.get(fmt)
        if kind is None or not looks_like(kind, value):
            return False
    pattern = schema.get("pattern")
    if isinstance(pattern, str) and not matches(pattern, value):
        return False
    lo, hi = schema.get("minLength"), schema.get("maxLength")
    return not (isinstance(lo, int) and len(value) < lo or isinstance(hi, int) and len(value) > hi)


def _slugify(text: str, sep: str) -> str:
    return re.sub(r"[^a-z0-9]+", sep or "-", text.lower()).strip(sep or "-")


def plan_renames(
    world: _World,
    db: dict[str, list[Any]],
    documents: dict[str, Any],
    seed: int = 0,
    domains: list[str] | None = None,
    produced: set[str] | frozenset[str] = frozenset(),
) -> dict[str, Rename]:
    """Old value -> :class:`Rename` for the filler values a leaf-by-leaf reseed must leave
    (keys, references, categories, scopes, names tasks or several records share).

    A value is left when a protected task names it, a tool enum holds it, it sits under an
    ``enum``/``const``, a dict uses it as a key, a ``format``/``pattern``/length bound the new
    value would break (the field's or any tool argument's carrying it), or (for the weaker
    lorem-word shapes) when it only sits in category-like or unknown fields, never a key. The new
    value takes the kind of the value's primary-key occurrence (else its first field with a
    usable kind), the old value's slug style, and is unique among all of the db's strings.
    Each draw is fixed by (seed, env, value); values are planned in sorted order.
    """
    where, strings, keys = _occurrences(db)
    doc_text = orjson.dumps(documents).decode() if documents else ""
    taken = set(strings) | set(world.named) | set(world.enums)
    plan: dict[str, Rename] = {}
    for old in sorted(where):
        stock = is_stock_slug(old)  # "orders-us" for a user: renamed unless infrastructure
        strength = filler_strength(old) or 2 * (stock or is_stock_label(old))
        if not strength or old in produced or old in world.enums or _tasks_name(world, old):
            continue
        if old in keys or (doc_text and old in doc_text):
            continue
        occ = where[old]
        schemas: list[dict[str, Any]] = []
        choices: list[tuple[int, str, dict[str, Any], str, str]] = []
        ok, keyed, category = True, False, False
        for coll, _, path in occ:
            schema = _schema_at(world.schemas.get(coll, {}), path)
            if schema.get("enum") or schema.get("const") is not None:
                ok = False
                break
            name, noun = _owner(coll, path)
            kind = kind_of(name, schema, noun)
            category = category or kind in _CATEGORY_KINDS
            searched = path[0] in world.search.get(coll, ())
            if searched and any(q in old.lower() for q in world.queries):
                ok = False
                break
            schemas.append(schema)
            if len(path) == 1:
                schemas += world.limits.get(coll, {}).get(path[0], [])
            primary = path == (world.pks.get(coll, "id"),)
            fixed = path[0] in world.fixed.get(coll, ())
            keyed = keyed or primary or fixed
            rank = 0 if primary else 2 if fixed else 1
            if kind in _BAD_KINDS or kind in _CATEGORY_KINDS:
                rank += 3
            choices.append((rank, name, schema, noun, f"{coll}.{'.'.join(path)}"))
        if not ok or not choices or (strength < 2 and category and not keyed):
            continue
        rank, name, schema, noun, where_ = min(choices, key=lambda c: c[0])
        if stock and infra(name, noun):
            continue
        kind = kind_of(name, schema, noun)
        style = _SLUGGY.match(old)
        if strength < 2 and kind == "text" and not keyed:
            continue
        if kind in _BAD_KINDS or kind in _CATEGORY_KINDS or (kind == "text" and keyed):
            kind = "slug" if style or keyed else "label"
        if style and kind not in ("slug", "username"):
            kind = "slug"
        rng = rng_for(seed, world.env_id, "rename", old)
        fv = FieldValues(rng, domains, world.env_id)
        key = fold(name) + fold(noun)
        new = None
        for attempt in range(16):
            draw = fv.by_kind(kind if attempt < 6 else "label", key, noun)
            if attempt >= 12:
                draw = fv.by_kind(kind, key, noun)
                glue = "-" if style or " " not in draw else " "
                draw = f"{draw}{glue}{attempt - 10}"
            if style:
                draw = _slugify(draw, style.group(1))
            if not draw or draw in taken or filler_strength(draw) or is_placeholder(draw):
                continue
            if _tasks_name(world, draw) or not all(_fits(draw, s) for s in schemas):
                continue
            new = draw
            break
        if new is None:
            continue
        taken.add(new)
        plan[old] = Rename(new=new, field=where_, order=len(plan))
    return plan


def apply_renames(
    plan: dict[str, Rename], db: dict[str, list[Any]], documents: dict[str, Any] | None = None
) -> tuple[int, set[str]]:
    """Every string leaf equal to a planned value replaced, in place: (leaves, collections)."""
    count = 0
    touched: set[str] = set()

    def walk(node: Any) -> Any:
        nonlocal count
        if isinstance(node, str):
            r = plan.get(node)
            if r is None:
                return node
            count += 1
            return r.new
        if isinstance(node, dict):
            for k, v in node.items():
                new = walk(v)
                if new is not v:
                    node[k] = new
        elif isinstance(node, list):
            for i, v in enumerate(node):
                new = walk(v)
                if new is not v:
                    node[i] = new
        return node

    for name, data in [*db.items(), *(documents or {}).items()]:
        before = count
        walk(data)
        if count > before:
            touched.add(name)
    return count, touched


# -- checks -----------------------------------------------------------------------------------
def load_spec(
    env: dict[str, Any], tasks: list[dict[str, Any]], db: dict[str, Any], documents: Any = None
) -> Any:
    """An :class:`~agentworld_gym.spec.EnvSpec` over in-memory records."""
    from agentworld_gym.spec import EnvSpec

    spec = EnvSpec.from_dict(env, tasks)
    spec.records = {**db, **(documents or {})}
    return spec


def probe_calls(spec: Any, per_tool: int = 3) -> list[tuple[str, dict[str, Any]]]:
    """Get calls with known keys: the first ``per_tool`` records of every declarative get."""
    calls = []
    for tool in spec.tools:
        impl = tool.implementation
        if impl.get("op") != "get" or not impl.get("key"):
            continue
        coll = impl.get("collection")
        pk = (spec.collections.get(coll) or {}).get("primary_key", "id")
        for n, rec in enumerate(spec.database.scan(coll)):
            if n >= per_tool:
                break
            if pk not in rec:
                continue
            args = {impl["key"]: rec[pk]}
            for p in impl.get("parents", []):
                fld = p.get("field", p["arg"])
                if fld in rec:
                    args[p["arg"]] = rec[fld]
            calls.append((tool.name, args))
    return calls


def dangling(spec: Any) -> int:
    """References (``collections.<c>.references``) whose value is no key of the target."""
    db = spec.database
    keys: dict[str, set[Any]] = {}
    bad = 0
    for coll, meta in spec.collections.items():
        for fld, target in (meta.get("references") or {}).items():
            if target not in keys:
                pk = (spec.collections.get(target) or {}).get("primary_key", "id")
                keys[target] = {_hashable(r.get(pk)) for r in db.scan(target)}
            for rec in db.scan(coll):
                v = rec.get(fld)
                for x in v if isinstance(v, list) else [v]:
                    if x is not None and _hashable(x) not in keys[target]:
                        bad += 1
    return bad


def _hashable(v: Any) -> Any:
    return v if isinstance(v, str | int | float | bool) or v is None else orjson.dumps(v)


def _outcome(runner: Any, task: dict[str, Any]) -> tuple[bool, int, list[list[str]]]:
    """A gold chain's outcome: ok, failed step, and the task's strings each output holds."""
    calls = (task.get("gold") or {}).get("calls") or []
    run = runner.run(calls, str(task.get("id", "t")))
    facts = sorted({s for s in _strings(task) if len(s) >= 2})
    seen = []
    for output in run.outputs:
        text = orjson.dumps(output).decode()
        seen.append([s for s in facts if s in text])
    return run.ok, run.failed_step, seen


def check_world(
    env: dict[str, Any],
    tasks: list[dict[str, Any]],
    before: tuple[dict[str, Any], Any],
    after: tuple[dict[str, Any], Any],
    plan: dict[str, Rename],
) -> str:
    """Why the renamed world (``after``) does not work like ``before`` ("" when it does):
    every get of a known key that answered still answers (under the renamed key), no new
    dangling reference, and each task's gold chain replays with the same outcome."""
    from agentworld_gym.synthesis.tasks.runner import Runner

    old, new = load_spec(env, tasks, *before), load_spec(env, tasks, *after)
    r_old, r_new = Runner(old), Runner(new)
    c_old, c_new = r_old.context("reseed-probe"), r_new.context("reseed-probe")
    mapping = {k: r.new for k, r in plan.items()}
    for name, args in probe_calls(old):
        if not r_old.call(c_old, name, args).ok:
            continue
        moved = {k: mapping.get(v, v) if isinstance(v, str) else v for k, v in args.items()}
        got = r_new.call(c_new, name, moved)
        if not got.ok:
            return f"get {name}({moved}) fails after renaming: {got.error[:120]}"
    if dangling(new) > dangling(old):
        return "renaming left a reference dangling"
    for task in tasks:
        if not (task.get("gold") or {}).get("calls"):
            continue
        if _outcome(r_old, task) != _outcome(r_new, task):
            return f"task {task.get('id')}: gold chain replays differently after renaming"
    return ""


def _put(node: Any, path: tuple[str, ...], value: str) -> None:
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        node[path[-1]] = value


def _job(job: tuple[str, int, bool, int, bool]) -> EnvReseed:
    folder, seed, write, examples, rename = job
    try:
        return reseed_env(Path(folder), seed, write, examples, rename)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return EnvReseed(env=Path(folder).name, skipped=f"error: {exc}")


def env_folders(root: Path, names: list[str] | None = None) -> list[Path]:
    """The environment folders under ``root`` (all, or the named ones), sorted."""
    root = Path(root)
    if names:
        return [root / n if not Path(n).is_dir() else Path(n) for n in names]
    return sorted(p for p in root.iterdir() if (p / "env.json").is_file())


def reseed_catalog(
    folders: list[Path],
    seed: int = 0,
    write: bool = False,
    workers: int = 1,
    examples: int = 5,
    rename: bool = True,
) -> Iterator[EnvReseed]:
    """:func:`reseed_env` over many folders in worker processes, results in folder order."""
    jobs = [(str(f), seed, write, examples, rename) for f in folders]
    yield from ordered_map(_job, jobs, workers)

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

Dates within one object are then ordered (created <= start <= updated <= end/due/expires).
Each new value is drawn from a generator fixed by (seed, env, collection, record, path), so a
run is reproducible and independent of the order or number of worker processes.
"""

from __future__ import annotations

import datetime as dt
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
    is_junk,
    is_placeholder,
    kind_of,
    looks_like,
    matches,
    words_of,
)
from agentworld_gym.synthesis.parallel import ordered_map
from agentworld_gym.synthesis.tasks.values import rng_for

CATEGORICAL_MIN = 5
CATEGORICAL_MAX = 5
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
    examples: list[tuple[str, str, str, str]] = field(default_factory=list)
    """(collection, path, before, after) for the first few changes."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env,
            "leaves": self.leaves,
            "changed": self.changed,
            "dates_ordered": self.dates_ordered,
            "skipped": self.skipped,
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
    """All of ``tasks.json``'s strings, joined (a value inside it is named by a task)."""
    queries: list[str]


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
    for name, meta in colls.items():
        ref_fields[name] |= set((meta.get("references") or {}).keys())
    for tool in env.get("tools", []):
        impl = tool.get("implementation") or {}
        coll = impl.get("collection")
        if coll not in colls:
            continue
        props = (tool.get("parameters") or {}).get("properties") or {}
        for p in impl.get("parents", []):
            ref_fields[coll].add(p.get("field", p.get("arg")))
        for _, fld in (impl.get("match") or {}).items():
            fixed[coll].add(fld)
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
    values: set[str] = set(_enums(env.get("tools", [])))
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
    if is_junk(value) or kind in ALWAYS:
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
) -> str | None:
    name, noun = _owner(coll, path)
    pattern = schema.get("pattern")
    searched = path[0] in world.search.get(coll, ())
    for _ in range(4):
        new = fv.string(name, schema, noun)
        if new == old or _named(world, new) or is_placeholder(new):
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
def reseed_env(folder: Path, seed: int = 0, write: bool = False, examples: int = 5) -> EnvReseed:
    """Reseed one environment folder (in place when ``write``); counts and a few examples."""
    folder = Path(folder)
    env = orjson.loads((folder / "env.json").read_bytes())
    out = EnvReseed(env=str(env.get("id", folder.name)))
    out.skipped = skip_reason(env)
    if out.skipped:
        return out
    tasks_file = folder / "tasks.json"
    tasks = orjson.loads(tasks_file.read_bytes()) if tasks_file.is_file() else []
    docs = {n for n, m in (env.get("collections") or {}).items() if m.get("kind") == "document"}
    db: dict[str, list[Any]] = {}
    raw: dict[str, bytes] = {}
    for path in sorted((folder / "db").glob("*.json")):
        data = orjson.loads(path.read_bytes())
        if isinstance(data, list) and path.stem not in docs:
            db[path.stem], raw[path.stem] = data, path.read_bytes()
    world = _world(env, tasks, db)
    domains = _domains(db)
    touched: set[str] = set()
    for coll, rows in db.items():
        cats = _categorical(rows, world.filters.get(coll, set()))
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
                new = _draw(world, FieldValues(rng, domains, out.env), coll, path, value, schema)
                if new is None:
                    continue
                _put(rec, path, new)
                out.changed += 1
                touched.add(coll)
                if len(out.examples) < examples:
                    out.examples.append((coll, ".".join(path), value, new))
            for here, old, new in _order_dates(world, coll, rec, (), (seed, out.env, coll, i)):
                out.dates_ordered += 1
                touched.add(coll)
                if len(out.examples) < examples:
                    out.examples.append((coll, ".".join(here), old, new))
    if write:
        for coll in sorted(touched):
            indent = raw[coll][:2] in (b"[\n", b"[\r")
            opt = orjson.OPT_INDENT_2 if indent else 0
            (folder / "db" / f"{coll}.json").write_bytes(orjson.dumps(db[coll], option=opt))
    return out


def _put(node: Any, path: tuple[str, ...], value: str) -> None:
    for part in path[:-1]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    if isinstance(node, list):
        node[int(path[-1])] = value
    else:
        node[path[-1]] = value


def _job(job: tuple[str, int, bool, int]) -> EnvReseed:
    folder, seed, write, examples = job
    try:
        return reseed_env(Path(folder), seed, write, examples)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return EnvReseed(env=Path(folder).name, skipped=f"error: {exc}")


def env_folders(root: Path, names: list[str] | None = None) -> list[Path]:
    """The environment folders under ``root`` (all, or the named ones), sorted."""
    root = Path(root)
    if names:
        return [root / n if not Path(n).is_dir() else Path(n) for n in names]
    return sorted(p for p in root.iterdir() if (p / "env.json").is_file())


def reseed_catalog(
    folders: list[Path], seed: int = 0, write: bool = False, workers: int = 1, examples: int = 5
) -> Iterator[EnvReseed]:
    """:func:`reseed_env` over many folders in worker processes, results in folder order."""
    jobs = [(str(f), seed, write, examples) for f in folders]
    yield from ordered_map(_job, jobs, workers)

"""Richer databases for weak environments, within the environment's constraints.

New records are *added*; existing records are never changed or removed, so keys that tasks,
references and tools hold stay valid. Four kinds:

- ``plain``: a copy of one record whose scalar fields are redrawn from their columns (nested
  objects, lists and discriminators such as ``"type": "to_do"`` next to a ``"to_do"``
  object stay the copied record's own, so the record remains internally consistent), with
  a fresh primary key and fresh values in unique columns;
- ``near_duplicate``: a copy of one record with a fresh key, unique text perturbed
  ("Rex" -> "Rex II") and one categorical or numeric field changed: a distractor;
- ``edge``: a plain record with edge values (the column's min/max numbers, an empty list
  where the column has one, long non-ASCII text in unique text columns, optional fields
  left out);
- ``relation``: a child record attached to the parent with the fewest children.

The constraints (:func:`infer_constraints`) come from ``env.json`` (primary keys, declared
references), the tools (``enum`` arguments mapped to fields, ``unique`` fields of ``op``
tools) and the data (shape of every column, categorical columns, all-distinct text columns,
``*id`` fields whose values are all keys of one collection). :func:`check_constraints`
verifies the result; the loop refuses a version that violates any of them.
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import re
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.evolution.config import ComplexifyConfig
from agentworld_gym.evolution.values import PREFIXED, compatible_shapes, shape_of
from agentworld_gym.spec import EnvSpec

_ID_HINT = re.compile(r"(_id|Id|ID|_key|Key|_ref|Ref)$")
_SUFFIXES = ("II", "Jr", "(2)", "Plus", "Alt", "B")
_UNICODE = "Zoë Ünïcode – naïve café ✓"


@dataclass
class Constraints:
    """What every version of an environment's database must satisfy."""

    primary_keys: dict[str, str]
    references: dict[str, dict[str, str]] = field(default_factory=dict)
    """collection -> field -> collection whose primary key the field holds."""
    enums: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """collection -> field -> allowed values (tool enums, else the observed categories)."""
    unique: dict[str, set[str]] = field(default_factory=dict)
    shapes: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    """collection -> field -> formats seen (see :func:`~.values.shape_of`)."""
    fields: dict[str, set[str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "primary_keys": self.primary_keys,
            "references": self.references,
            "enums": self.enums,
            "unique": {c: sorted(v) for c, v in self.unique.items()},
            "shapes": {c: {f: sorted(s) for f, s in v.items()} for c, v in self.shapes.items()},
        }


def _lists(spec: EnvSpec) -> dict[str, list[dict[str, Any]]]:
    snap = spec.database.snapshot()
    return {name: list(snap[name]) for name in spec.database.collections}


def _tool_enums(spec: EnvSpec, rows: dict[str, list[dict]]) -> dict[str, dict[str, list]]:
    """``enum`` arguments that write or filter a field (op mappings, else same-name fields)."""
    out: dict[str, dict[str, list]] = defaultdict(dict)
    for tool in spec.tools:
        props = tool.parameters.get("properties", {})
        impl = tool.implementation
        mapped: dict[str, tuple[str, str]] = {}
        if impl.get("type") == "op":
            for key in ("body", "filters", "match"):
                for arg, fld in (impl.get(key) or {}).items():
                    mapped[arg] = (impl.get("collection", ""), fld)
        else:
            for arg in props:
                for coll, recs in rows.items():
                    if any(arg in r for r in recs[:20]):
                        mapped[arg] = (coll, arg)
        for arg, (coll, fld) in mapped.items():
            enum = props.get(arg, {}).get("enum")
            if enum and coll in rows:
                out[coll][fld] = list(enum)
    return out


def infer_constraints(spec: EnvSpec) -> Constraints:
    """The constraints of ``spec``'s current database (see the module docstring)."""
    rows = _lists(spec)
    db = spec.database
    cons = Constraints({c: db.primary_key(c) for c in rows})
    tool_enums = _tool_enums(spec, rows)
    keys = {c: {str(r[cons.primary_keys[c]]) for r in recs} for c, recs in rows.items()}
    for coll, recs in rows.items():
        pk = cons.primary_keys[coll]
        declared = dict((spec.collections.get(coll) or {}).get("references", {}))
        cons.references[coll] = {
            f: t for f, t in declared.items() if t in rows and _holds_keys(recs, f, keys[t])
        }
        cons.enums[coll] = dict(tool_enums.get(coll, {}))
        cons.unique[coll] = set()
        cons.shapes[coll] = defaultdict(set)
        cons.fields[coll] = set()
        columns: dict[str, list[Any]] = defaultdict(list)
        for rec in recs:
            cons.fields[coll].update(rec)
            for fld, value in rec.items():
                columns[fld].append(value)
                cons.shapes[coll][fld].add(shape_of(value))
        for tool in spec.tools:
            impl = tool.implementation
            if impl.get("type") == "op" and impl.get("collection") == coll:
                cons.unique[coll].update(impl.get("unique", []))
        for fld, values in columns.items():
            if fld == pk:
                continue
            scalars = [v for v in values if isinstance(v, str | int) and not isinstance(v, bool)]
            if fld not in cons.references[coll] and _ID_HINT.search(fld) and scalars:
                targets = [t for t, ks in keys.items() if all(str(v) in ks for v in scalars)]
                if len(targets) == 1 and len(scalars) == len(values):
                    cons.references[coll][fld] = targets[0]
            if fld in cons.references[coll] or fld in cons.enums[coll]:
                continue
            strings = [v for v in values if isinstance(v, str | bool)]
            distinct = {str(v) for v in strings}
            if strings and len(strings) == len(values):
                if len(distinct) < len(values) and len(distinct) <= max(2, len(values) // 2):
                    cons.enums[coll][fld] = sorted({v for v in strings}, key=str)
                elif len(distinct) == len(values) >= 3 and shape_of(values[0]) != "bool":
                    cons.unique[coll].add(fld)
        cons.shapes[coll] = dict(cons.shapes[coll])
    return cons


def _holds_keys(recs: list[dict[str, Any]], fld: str, keys: set[str]) -> bool:
    """Whether most values of ``fld`` are primary keys of the target: a declared reference
    may join on another field (``year: 2014`` naming the ``years`` record whose ``year`` is
    2014, not its id), and such a field is left to the plain-field rules."""
    values = [str(r[fld]) for r in recs if r.get(fld) is not None]
    return 2 * sum(v in keys for v in values) >= len(values)


def check_constraints(
    cons: Constraints,
    records: dict[str, list[dict[str, Any]]],
    baseline: dict[str, list[dict[str, Any]]] | None = None,
) -> list[str]:
    """Violations in ``records``; with ``baseline``, ones already there are not reported."""
    keys = {c: {str(r.get(pk)) for r in records.get(c, [])} for c, pk in cons.primary_keys.items()}
    old = {c: {str(r.get(cons.primary_keys[c])) for r in rs} for c, rs in (baseline or {}).items()}
    problems: list[str] = []
    for coll, recs in records.items():
        pk = cons.primary_keys.get(coll, "id")
        seen: set[str] = set()
        uniques: dict[str, set[str]] = defaultdict(set)
        for rec in recs:
            key = str(rec.get(pk))
            where = f"{coll}/{key}"
            if pk not in rec:
                problems.append(f"{coll}: a record has no primary key {pk!r}")
            elif key in seen:
                problems.append(f"{where}: duplicate primary key")
            seen.add(key)
            for fld in cons.unique.get(coll, ()):
                value = rec.get(fld)
                if value is not None:
                    if str(value) in uniques[fld]:
                        problems.append(f"{where}: {fld}={value!r} is not unique")
                    uniques[fld].add(str(value))
            if key in old.get(coll, set()):
                continue
            for fld, target in cons.references.get(coll, {}).items():
                value = rec.get(fld)
                if value is not None and str(value) not in keys.get(target, set()):
                    problems.append(f"{where}: {fld}={value!r} matches no {target} record")
            for fld, allowed in cons.enums.get(coll, {}).items():
                if fld in rec and rec[fld] not in allowed:
                    problems.append(f"{where}: {fld}={rec[fld]!r} not one of {allowed}")
            for fld, value in rec.items():
                shapes = cons.shapes.get(coll, {}).get(fld)
                if shapes is None:
                    problems.append(f"{where}: field {fld!r} is new to {coll}")
                elif not compatible_shapes(shapes, shape_of(value)):
                    problems.append(f"{where}: {fld} has format {shape_of(value)}, not {shapes}")
    return problems


@dataclass
class ComplexifyResult:
    """The new records and what was added."""

    records: dict[str, list[dict[str, Any]]]
    """Every list collection, old records first (unchanged), then the new ones."""
    added: dict[str, list[str]]
    """collection -> primary keys of the new records."""
    kinds: dict[str, int]
    constraints: Constraints
    violations: list[str]


class ComplexifyError(ValueError):
    """The database cannot be complexified (e.g. no fresh key can be made in a key's format);
    the co-evolution refuses the new version."""


class _Fresh:
    """Fresh values that keep a column's format and stay unique."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def key(self, values: list[Any], taken: set[str]) -> Any:
        template = values[0]
        for attempt in range(50):
            value = self._next(template, values, attempt)
            if str(value) not in taken and shape_of(value) == shape_of(template):
                return value
        raise ComplexifyError(f"cannot make a fresh value like {template!r}")

    def _next(self, template: Any, values: list[Any], attempt: int) -> Any:
        shape = shape_of(template)
        if shape in ("int", "number"):
            top = max(v for v in values if isinstance(v, int | float)) + 1 + attempt
            return int(top) if shape == "int" else float(top)
        text = str(template)
        if shape == "uuid":
            return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        if shape == "hex":
            return f"{self.rng.getrandbits(4 * len(text)):0{len(text)}x}"
        if shape in ("int-string", "prefixed-int"):
            prefix, digits = PREFIXED.match(text).groups()  # type: ignore[union-attr]
            nums = [int(m.group(2)) for v in values if (m := PREFIXED.match(str(v)))]
            return f"{prefix}{max(nums) + 1 + attempt:0{len(digits)}d}"
        if shape == "email":
            local, _, domain = text.partition("@")
            return f"{local}{self.rng.randrange(2, 999)}@{domain}"
        if shape in ("date", "datetime"):
            day = dt.date.fromisoformat(text[:10]) + dt.timedelta(days=self.rng.randrange(1, 400))
            return day.isoformat() + text[10:]
        if shape == "url":
            return f"{text.rstrip('/')}-{self.rng.randrange(2, 999)}"
        letters = "".join(self.rng.choice("abcdefghjkmnpqrstuvwxyz") for _ in range(3))
        suffix = _SUFFIXES[attempt % len(_SUFFIXES)] if attempt < len(_SUFFIXES) else letters
        return f"{text} {suffix}"


def _order(cons: Constraints) -> list[str]:
    done: list[str] = []

    def visit(name: str, stack: tuple[str, ...]) -> None:
        if name in done or name in stack:
            return
        for target in cons.references.get(name, {}).values():
            if target != name:
                visit(target, (*stack, name))
        done.append(name)

    for name in sorted(cons.primary_keys):
        visit(name, ())
    return done


def complexify(
    spec: EnvSpec, config: ComplexifyConfig, seed: int, distractors: int = 0
) -> ComplexifyResult:
    """A richer copy of ``spec``'s list collections (documents are left as they are).

    ``distractors`` (from the guidelines) raises the near-duplicates per collection.
    """
    rng = random.Random(seed)
    fresh = _Fresh(rng)
    cons = infer_constraints(spec)
    base = _lists(spec)
    records = {c: list(rs) for c, rs in base.items()}
    added: dict[str, list[str]] = defaultdict(list)
    kinds: Counter[str] = Counter()
    for coll in _order(cons):
        rows = base[coll]
        if not rows:
            continue
        pk = cons.primary_keys[coll]
        refs = cons.references.get(coll, {})
        plan = (
            ["plain"] * max(1, round(config.extra_record_fraction * len(rows)))
            + ["near_duplicate"] * (config.near_duplicates + distractors)
            + ["edge"] * config.edge_cases
            + ["relation"] * (config.relations if refs else 0)
        )[: config.max_new_records]
        columns: dict[str, list[Any]] = defaultdict(list)
        for rec in rows:
            for fld, value in rec.items():
                columns[fld].append(value)
        for kind in plan:
            current = records[coll]
            rec = _make(kind, rows, current, columns, cons, coll, records, rng, fresh)
            taken = {str(r[pk]) for r in current}
            rec[pk] = fresh.key(columns[pk], taken)
            for fld in cons.unique.get(coll, ()):
                if fld in rec and fld != pk and rec[fld] is not None:
                    used = {str(r.get(fld)) for r in current}
                    if str(rec[fld]) in used:
                        rec[fld] = fresh.key([rec[fld]], used)
            current.append(rec)
            added[coll].append(str(rec[pk]))
            kinds[kind] += 1
    violations = check_constraints(cons, records, base)
    return ComplexifyResult(records, dict(added), dict(kinds), cons, violations)


def _make(
    kind: str,
    rows: list[dict],
    current: list[dict],
    columns: dict[str, list[Any]],
    cons: Constraints,
    coll: str,
    records: dict[str, list[dict]],
    rng: random.Random,
    fresh: _Fresh,
) -> dict[str, Any]:
    refs = cons.references.get(coll, {})
    enums = cons.enums.get(coll, {})
    template = rng.choice(rows)
    if kind == "near_duplicate":
        rec = copy.deepcopy(template)
        movable = [f for f in rec if f in enums and len(enums[f]) > 1 and not _tag(rec, f)]
        movable += [f for f in rec if shape_of(rec[f]) in ("int", "number") and f not in refs]
        if movable:
            fld = rng.choice(sorted(movable))
            options = [v for v in (enums.get(fld) or columns[fld]) if v != rec[fld]]
            if options:
                rec[fld] = rng.choice(options)
        return rec
    rec = copy.deepcopy(template)
    for fld, own in template.items():
        values = columns[fld]
        if fld in refs:
            parents = records.get(refs[fld], [])
            tpk = cons.primary_keys[refs[fld]]
            if kind == "relation" and parents:
                load = Counter(str(r.get(fld)) for r in current)
                parent = min(parents, key=lambda p: (load[str(p[tpk])], str(p[tpk])))
            else:
                parent = rng.choice(parents) if parents else None
            value = parent[tpk] if parent is not None else own
            rec[fld] = str(value) if isinstance(own, str) else value
        elif _tag(template, fld):
            continue
        elif fld in enums:
            allowed = [v for v in enums[fld] if v in values] or enums[fld]
            rec[fld] = rng.choice(allowed)
        elif kind == "edge":
            if len(values) < len(rows) and rng.random() < 0.5:
                del rec[fld]  # an optional field, left out
            else:
                rec[fld] = _edge(own, values, fld in cons.unique.get(coll, ()), rng)
        elif _scalar(own):
            rec[fld] = rng.choice([v for v in values if _scalar(v)])
    return rec


def _tag(record: dict[str, Any], fld: str) -> bool:
    """A discriminator: its value names another field of the record (``"type": "to_do"``
    next to a ``"to_do"`` object), so it must stay as it is."""
    value = record.get(fld)
    return isinstance(value, str) and value != fld and value in record


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) or value is None


def _edge(own: Any, values: list[Any], unique: bool, rng: random.Random) -> Any:
    """An edge value for one field; nested values stay the template's own (or empty)."""
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if numbers and len(numbers) == len(values):
        return rng.choice([min(numbers), max(numbers)])
    if isinstance(own, list):
        return [] if any(v == [] for v in values) else own
    if unique and isinstance(own, str) and shape_of(own) == "text":
        return f"{own} — {_UNICODE}"
    return own

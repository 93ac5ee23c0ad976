"""A small built-in task synthesizer over declarative ``op`` tools (offline, seeded).

It exists so the loop runs end to end without the full task-synthesis package (and in
tests). It reads each ``op`` tool's implementation (which collection, key argument, filters,
body fields) and writes tasks grounded in the records, with a gold tool chain executed
through the same runtime the agent uses:

- ``lookup``: get a record by key, answer one of its fields;
- ``find``: filter a list by a field whose value is unique, answer the record's key;
- ``count``: filter a list by a shared value, answer how many match (``gold.derive`` says
  how to recompute it, so the count survives database changes);
- ``aggregate`` (a program task): the sum of a numeric field over a filtered list;
- ``walk``: get a record, then follow references to its parent (and grandparent...) by
  ``$<step>.<path>`` arguments, answer a field of the last one;
- ``update``: set a field to another valid value (directly, or after a ``find`` when the
  guidelines ask for longer chains), checked on the final state;
- ``create``: create a record with a fresh value, checked by a count.

Guidelines steer the mix (``patterns``, ``program_share``, ``writes``, ``walk_length``) and
``distractors`` > 0 prefers targets that have look-alike records. Environments with only
Python tools get no tasks from it (the loop then uses held-out test tasks).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from typing import Any

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.evolution.opkit import (
    SYNTHESIZER_NAME,
    OpTaskBuilder,
    OpTool,
    answer_contains,
    items_path,
    noun,
    pick_field,
)
from agentworld_gym.evolution.protocols import Guidelines
from agentworld_gym.evolution.values import answerable, coerce_to_schema, find_record_path
from agentworld_gym.replay import replay_gold
from agentworld_gym.spec import EnvSpec, TaskSpec

logger = logging.getLogger(__name__)

READ_PATTERNS = ("lookup", "find", "count", "walk")


class FallbackSynthesizer:
    """Seeded task synthesis over ``op`` tools (see the module docstring)."""

    name = SYNTHESIZER_NAME

    def synthesize(
        self, spec: EnvSpec, n: int, seed: int, guidelines: Guidelines | None = None
    ) -> list[TaskSpec]:
        return _Patterns(spec, seed, guidelines).build(n)


class _Patterns(OpTaskBuilder):
    """The task patterns, and the schedule that mixes them."""

    def lookup(self) -> TaskSpec | None:
        for op in self.shuffled(self.tools_for("get")):
            if not op.impl.get("key"):
                continue
            rows = self.rows(op.collection)
            for record in self.targets(op.collection)[:5]:
                args = self.base_args(op, record)
                field = pick_field(record, rows, self.pks[op.collection])
                if args is None or field is None:
                    continue
                outputs = self.run([(op, args)])
                if (
                    outputs is None
                    or find_record_path(
                        outputs[0], self.pks[op.collection], record[self.pks[op.collection]]
                    )
                    is None
                ):
                    continue
                pk = self.pks[op.collection]
                value = record[field]
                text = (
                    f"Look up the {noun(op.collection)} with {pk} {record[pk]} and tell me "
                    f"its {field}."
                )
                return self.task(
                    text,
                    f"The {field} is {value}.",
                    [(op, args)],
                    [answer_contains(field, value)],
                    "lookup",
                    target=(op.collection, record[pk]),
                )
        return None

    def find(self, then_update: bool = False) -> TaskSpec | None:
        for op in self.shuffled(self.tools_for("list")):
            filters = op.impl.get("filters", {})
            rows = self.rows(op.collection)
            pk = self.pks[op.collection]
            for record in self.targets(op.collection)[:6]:
                unique = [
                    (a, f)
                    for a, f in filters.items()
                    if answerable(record.get(f))
                    and f != pk
                    and sum(1 for r in rows if r.get(f) == record.get(f)) == 1
                    and coerce_to_schema(record[f], op.props.get(a, {})) is not None
                ]
                args = self.base_args(op, record)
                if not unique or args is None:
                    continue
                arg, field = unique[0]
                args[arg] = coerce_to_schema(record[field], op.props.get(arg, {}))
                outputs = self.run([(op, args)])
                path = find_record_path(outputs[0], pk, record[pk]) if outputs else None
                if path is None:
                    continue
                name = noun(op.collection)
                if then_update:
                    task = self.update(
                        record,
                        op.collection,
                        [(op, args)],
                        f"{path}.{pk}".lstrip("."),
                        f"the {name} whose {field} is {record[field]}",
                    )
                    if task is not None:
                        return task
                    continue
                text = f"Which {name} has {field} {record[field]}? Tell me its {pk}."
                head, _, last = path.rpartition(".")
                derive = {"agg": "only", "step": 0, "path": head, "field": pk}
                return self.task(
                    text,
                    f"It is {record[pk]}.",
                    [(op, args)],
                    [answer_contains(pk, record[pk])],
                    "find",
                    derive=derive if last.isdigit() else None,
                    target=(op.collection, record[pk]),
                )
        return None

    def count(self, aggregate: bool = False) -> TaskSpec | None:
        for op in self.shuffled(self.tools_for("list")):
            rows = self.rows(op.collection)
            for arg, field in self.shuffled(list(op.impl.get("filters", {}).items())):
                values = Counter(str(r.get(field)) for r in rows if answerable(r.get(field)))
                shared = [v for v, c in values.items() if c >= 2]
                if not shared:
                    continue
                pick = self.rng.choice(sorted(shared))
                raw = next(r[field] for r in rows if str(r.get(field)) == pick)
                args = self.base_args(op, None)
                value = coerce_to_schema(raw, op.props.get(arg, {}))
                if args is None or value is None:
                    continue
                args[arg] = value
                matching = [r for r in rows if str(r.get(field)) == str(raw)]
                outputs = self.run([(op, args)])
                if outputs is None:
                    continue
                items = items_path(outputs[0], len(matching))
                if items is None:
                    continue
                name = noun(op.collection)
                if not aggregate:
                    derive = {"agg": "count", "step": 0, "path": items}
                    text = f"How many {name} records have {field} {raw}?"
                    check = {"type": "answer_equals", "value": len(matching)}
                    return self.task(
                        text,
                        str(len(matching)),
                        [(op, args)],
                        [{"text": f"The answer is {len(matching)}", "check": check}],
                        "count",
                        derive=derive,
                    )
                numeric = [
                    f
                    for f in matching[0]
                    if all(
                        isinstance(r.get(f), int | float) and not isinstance(r.get(f), bool)
                        for r in matching
                    )
                    and f != self.pks[op.collection]
                ]
                if not numeric:
                    continue
                num = self.rng.choice(sorted(numeric))
                total = sum(r[num] for r in matching)
                total = round(total, 6) if isinstance(total, float) else total
                derive = {"agg": "sum", "step": 0, "path": items, "field": num}
                text = f"What is the total {num} of the {name} records with {field} {raw}?"
                check = {"type": "answer_equals", "value": total, "tolerance": 1e-6}
                return self.task(
                    text,
                    str(total),
                    [(op, args)],
                    [{"text": f"The total is {total}", "check": check}],
                    "aggregate",
                    derive=derive,
                    kind="program",
                )
        return None

    def walk(self) -> TaskSpec | None:
        """get(record) -> get(parent via reference) -> ... up to ``walk_length`` calls."""
        gets = {o.collection: o for o in self.tools_for("get") if o.impl.get("key")}
        starts = [c for c in self.refs if self.refs[c] and c in gets]
        for coll in self.shuffled(starts):
            for record in self.targets(coll)[:5]:
                calls: list[tuple[OpTool, dict[str, Any]]] = []
                args = self.base_args(gets[coll], record)
                if args is None:
                    continue
                calls.append((gets[coll], args))
                current, current_coll, hops = record, coll, []
                while len(calls) < max(2, self.g.walk_length):
                    links = [
                        (f, t)
                        for f, t in sorted(self.refs.get(current_coll, {}).items())
                        if t in gets and t != current_coll and current.get(f) is not None
                    ]
                    if not links:
                        break
                    field, target = links[0]
                    parent = self.db.get(target, current[field])
                    outputs = self.run(calls)
                    if parent is None or outputs is None:
                        break
                    pk = self.pks[current_coll]
                    base = find_record_path(outputs[-1], pk, current[pk])
                    key_arg = gets[target].impl["key"]
                    nxt = self.base_args(gets[target], parent)
                    if base is None or nxt is None:
                        break
                    nxt[key_arg] = f"${len(calls) - 1}." + f"{base}.{field}".lstrip(".")
                    calls.append((gets[target], nxt))
                    hops.append((field, target))
                    current, current_coll = parent, target
                if not hops:
                    continue
                rows = self.rows(current_coll)
                answer_field = pick_field(current, rows, self.pks[current_coll])
                if answer_field is None or self.run(calls) is None:
                    continue
                path = " -> ".join(f"its {f} ({noun(t)})" for f, t in hops)
                pk = self.pks[coll]
                text = (
                    f"Start from the {noun(coll)} with {pk} {record[pk]}, follow {path}, "
                    f"and tell me the {answer_field} of the {noun(current_coll)} you reach."
                )
                value = current[answer_field]
                return self.task(
                    text,
                    f"The {answer_field} is {value}.",
                    calls,
                    [answer_contains(answer_field, value)],
                    "walk",
                    target=(coll, record[pk]),
                )
        return None

    def update(
        self,
        record: dict | None = None,
        collection: str | None = None,
        prefix: list | None = None,
        key_path: str = "",
        described: str = "",
    ) -> TaskSpec | None:
        for op in self.shuffled(self.tools_for("update", collection)):
            if not op.impl.get("key") or op.impl.get("upsert"):
                continue
            rows = self.rows(op.collection)
            pk = self.pks[op.collection]
            for target in [record] if record is not None else self.targets(op.collection)[:5]:
                options = []
                for arg, field in op.impl.get("body", {}).items():
                    if "." in field or field == pk:
                        continue
                    pool = sorted({str(r.get(field)) for r in rows if answerable(r.get(field))})
                    enum = op.props.get(arg, {}).get("enum")
                    choices = [v for v in (enum or pool) if str(v) != str(target.get(field))]
                    if choices and (enum or len(pool) < len(rows)):
                        options.append((arg, field, self.rng.choice(choices)))
                args = self.base_args(op, target)
                if not options or args is None:
                    continue
                arg, field, raw = options[0]
                value = coerce_to_schema(raw, op.props.get(arg, {}))
                if value is None:
                    continue
                args[arg] = value
                calls = list(prefix or [])
                if prefix:
                    args[op.impl["key"]] = f"$0.{key_path}"
                calls.append((op, args))
                if self.run(calls) is None:
                    continue
                who = described or f"the {noun(op.collection)} {target[pk]}"
                check = {
                    "type": "record",
                    "collection": op.collection,
                    "key": str(target[pk]),
                    "path": field,
                    "equals": value,
                }
                criteria = [
                    {"text": f"{op.collection}/{target[pk]} has {field} {value}", "check": check}
                ]
                return self.task(
                    f"Set the {field} of {who} to {value}.",
                    "Done.",
                    calls,
                    criteria,
                    "update",
                    target=(op.collection, target[pk]),
                )
        return None

    def create(self) -> TaskSpec | None:
        for op in self.shuffled(self.tools_for("create")):
            strings = [
                (a, f)
                for a, f in op.impl.get("body", {}).items()
                if "." not in f
                and op.props.get(a, {}).get("type") == "string"
                and not op.props[a].get("enum")
            ]
            if not strings:
                continue
            parent_rows = self.rows(op.collection)
            args = self.base_args(op, self.rng.choice(parent_rows) if parent_rows else None)
            if args is None:
                continue
            arg, field = strings[0]
            value = f"{noun(op.collection).title()} {self.rng.randrange(1000, 9999)}"
            args[arg] = value
            for other, schema in op.props.items():
                if other in op.required and other not in args:
                    pool = [r.get(op.impl.get("body", {}).get(other, other)) for r in parent_rows]
                    pool = [coerce_to_schema(v, schema) for v in pool if v is not None]
                    pool = [v for v in pool if v is not None] or schema.get("enum", [])
                    if not pool:
                        break
                    args[other] = self.rng.choice(pool)
            if op.required - set(args) or self.run([(op, args)]) is None:
                continue
            check = {
                "type": "count",
                "collection": op.collection,
                "where": {field: value},
                "equals": 1,
            }
            shown = ", ".join(f"{k} {v}" for k, v in args.items())
            return self.task(
                f"Create a {noun(op.collection)} with {shown}.",
                "Created.",
                [(op, args)],
                [{"text": f"one {noun(op.collection)} has {field} {value}", "check": check}],
                "create",
            )
        return None

    def schedule(self, n: int) -> list[str]:
        """Pattern per task: the program share first, then the guideline patterns in turn."""
        n_prog = round(n * self.g.program_share)
        patterns = [p for p in self.g.patterns if p != "aggregate"] or list(READ_PATTERNS)
        if self.g.writes and "update" not in patterns:
            patterns.append("update")
        order = ["aggregate"] * n_prog + [patterns[i % len(patterns)] for i in range(n - n_prog)]
        self.rng.shuffle(order)
        return order

    def build(self, n: int) -> list[TaskSpec]:
        if not self.ops or n <= 0:
            return []
        makers = {
            "lookup": self.lookup,
            "find": self.find,
            "walk": self.walk,
            "create": self.create,
            "count": lambda: self.count(False),
            "aggregate": lambda: self.count(True),
            "update": lambda: (
                self.find(then_update=True)
                if self.g.walk_length > 1 and self.g.writes
                else self.update()
            ),
        }
        fallbacks = ["lookup", "find", "count", "walk", "update", "create"]
        tasks: list[TaskSpec] = []
        for pattern in self.schedule(n) + self.shuffled(fallbacks) * 2:
            if len(tasks) >= n:
                break
            task = makers.get(pattern, self.lookup)()
            if task is None or task.instruction in self.seen:
                continue
            task.id = f"{self.spec.id}-syn{self.seed % 100000}-{len(tasks):03d}"
            if not _verifies(self.spec, task):
                continue
            self.seen.add(task.instruction)
            tasks.append(task)
        return tasks


def _verifies(spec: EnvSpec, task: TaskSpec) -> bool:
    probe = dataclasses.replace(spec, tasks=[task])
    probe.__dict__["database"] = spec.database
    return replay_gold(AgentWorldEnv(probe, split="all", max_turns=10_000), task).ok

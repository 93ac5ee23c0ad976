"""A few simple, verifiable seed tasks per synthesized environment.

Task synthesis proper comes later; these exist so every catalog environment can be reset and
its tools exercised end to end. Each task is grounded in the seed records, carries a gold
tool chain, and is judged by machine checks only:

- *lookup*: "look up the pet ``p-12`` and tell me its name" — ``answer_contains`` the value;
- *find*: "which pet has the name ``Rex``? give me its id" — a filtered list, then the key;
- *browse*: a lookup through a list tool, for APIs without a get-by-key;
- *write*: change a field (``record`` check), create a record (``count`` check) or delete one
  (``record`` exists false).

The gold chains are replayed during validation; a task whose gold does not earn 1.0 is not
kept.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.spec import TaskSpec
from agentworld_gym.synthesis.envs.infer import fold
from agentworld_gym.synthesis.envs.model import CollectionModel, EnvModel, ToolPlan
from agentworld_gym.synthesis.envs.seed import Generator, coerce, schema_type

_PREFERRED = (
    "name",
    "title",
    "email",
    "displayname",
    "username",
    "status",
    "description",
    "label",
    "city",
    "type",
    "code",
    "summary",
    "phone",
    "url",
)


def args_for(
    plan: ToolPlan, record: dict[str, Any] | None, gen: Generator, coll: CollectionModel
) -> dict[str, Any]:
    """Schema-valid arguments that address ``record``; other required ones are generated."""
    args: dict[str, Any] = {}
    for name, arg in plan.args.items():
        value: Any = None
        if arg.role in ("key", "scope") and record is not None:
            value = record.get(coll.pk if arg.role == "key" else arg.field)
        elif arg.role in ("filter", "match") and arg.required and record is not None:
            value = record.get(arg.field)
        elif arg.required:
            if arg.role == "page":
                page = plan.spec.implementation.get("page", {})
                value = {
                    "size": page.get("max", 100),
                    "offset": 0,
                    "page": page.get("base", 1),
                }.get(arg.paging or "")
            else:
                value = gen.value(arg.schema, name, coll.noun, 1)
        if value is None:
            continue
        value = coerce(value, arg.schema)
        enum = arg.schema.get("enum")
        if enum and value not in enum:
            value = enum[0]
        args[name] = value
    return args


def _answerable(value: Any) -> bool:
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return 3 <= len(value) <= 60 and "\n" not in value
    return isinstance(value, int | float)


def _pick_field(coll: CollectionModel, rows: list[dict], record: dict, skip: set[str]):
    fields = [f for f in record if f != coll.pk and f not in skip and _answerable(record[f])]
    unique = [f for f in fields if sum(1 for r in rows if r.get(f) == record[f]) == 1]
    ranked = sorted(
        unique,
        key=lambda f: (
            fold(f) not in _PREFERRED,
            _PREFERRED.index(fold(f)) if fold(f) in _PREFERRED else 0,
        ),
    )
    return ranked[0] if ranked else None


def _label(name: str) -> str:
    return name.replace("_", " ")


def _scope_text(plan: ToolPlan, record: dict[str, Any]) -> str:
    parts = [
        f"{_label(a.field)} {record.get(a.field)!s}"
        for a in plan.args.values()
        if a.role == "scope" and a.field
    ]
    return f" (under {', '.join(parts)})" if parts else ""


def _rubric(text: str, check: dict[str, Any]) -> dict[str, Any]:
    return {"type": "rubric", "criteria": [{"text": text, "check": check}]}


class TaskBuilder:
    """Builds the seed tasks of one environment from its model and records."""

    def __init__(
        self, env_id: str, model: EnvModel, records: dict[str, list[dict]], gen: Generator
    ) -> None:
        self.env_id = env_id
        self.model = model
        self.records = records
        self.gen = gen
        self.by_kind: dict[str, list[ToolPlan]] = {}
        for plan in model.tools:
            self.by_kind.setdefault(plan.shape.kind, []).append(plan)

    def _tools(self, *kinds: str) -> list[ToolPlan]:
        return [p for k in kinds for p in self.by_kind.get(k, [])]

    def lookup(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        for plan in self._tools("get"):
            if "key" not in plan.spec.implementation or plan.shape.response != "record":
                continue
            coll = self.model.collections[plan.shape.noun]
            rows = self.records.get(coll.name, [])
            for record in self.gen.rng.sample(rows, len(rows)):
                skip = {a.field for a in plan.args.values() if a.field}
                field = _pick_field(coll, rows, record, skip)
                if field is None or (coll.name, str(record[coll.pk])) in used:
                    continue
                used.add((coll.name, str(record[coll.pk])))
                value = record[field]
                args = args_for(plan, record, self.gen, coll)
                text = (
                    f"Look up the {coll.noun} with {_label(coll.pk)} {record[coll.pk]!s}"
                    f"{_scope_text(plan, record)} and tell me its {_label(field)}."
                )
                answer = f"The {_label(field)} is {value}."
                check = {"type": "answer_contains", "value": str(value)}
                return self._task(
                    text,
                    answer,
                    [(plan, args)],
                    _rubric(f"The answer states the {_label(field)}: {value}", check),
                    "lookup",
                )
        return None

    def find(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        for plan in self._tools("list", "search"):
            filters = [(n, a) for n, a in plan.args.items() if a.role == "filter"]
            if not filters or plan.shape.response != "list":
                continue
            coll = self.model.collections[plan.shape.noun]
            rows = self.records.get(coll.name, [])
            for record in rows:
                name, arg = next(
                    (
                        (n, a)
                        for n, a in filters
                        if _answerable(record.get(a.field))
                        and sum(1 for r in rows if r.get(a.field) == record.get(a.field)) == 1
                        and schema_type(a.schema) in ("string", "integer")
                    ),
                    (None, None),
                )
                if arg is None or (coll.name, str(record[coll.pk])) in used:
                    continue
                used.add((coll.name, str(record[coll.pk])))
                args = args_for(plan, record, self.gen, coll)
                args[name] = coerce(record[arg.field], arg.schema)
                key = str(record[coll.pk])
                text = (
                    f"Which {coll.noun}{_scope_text(plan, record)} has {_label(arg.field)} "
                    f"{record[arg.field]!s}? Tell me its {_label(coll.pk)}."
                )
                check = {"type": "answer_contains", "value": key}
                return self._task(
                    text,
                    f"It is {key}.",
                    [(plan, args)],
                    _rubric(f"The answer gives the {_label(coll.pk)} {key}", check),
                    "find",
                )
        return None

    def browse(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        """Read a record's field through a list tool (for APIs without a get-by-key)."""
        for plan in self._tools("list", "search"):
            if plan.shape.response != "list":
                continue
            coll = self.model.collections[plan.shape.noun]
            rows = self.records.get(coll.name, [])
            if not rows:
                continue
            anchor = self.gen.rng.choice(rows)
            args = args_for(plan, anchor, self.gen, coll)
            page = plan.spec.implementation.get("page", {})
            if "size" in page:
                args[page["size"]] = page.get("max", 100) if page.get("max", 100) < 100 else 100
            scope = [
                (a.field, args[n])
                for n, a in plan.args.items()
                if a.role in ("scope", "filter") and n in args
            ]
            visible = [r for r in rows if all(str(r.get(f)) == str(v) for f, v in scope)]
            if "size" not in page and page:
                visible = visible[: page.get("default", 20)]
            else:
                visible = visible[: args.get(page.get("size", ""), len(visible))]
            for record in self.gen.rng.sample(visible, len(visible)):
                if (coll.name, str(record[coll.pk])) in used:
                    continue
                field = _pick_field(coll, rows, record, {a.field for a in plan.args.values()})
                if field is None:
                    continue
                used.add((coll.name, str(record[coll.pk])))
                value = record[field]
                text = (
                    f"Among the {coll.noun} records{_scope_text(plan, record)}, find the one "
                    f"with {_label(coll.pk)} {record[coll.pk]!s} and tell me its "
                    f"{_label(field)}."
                )
                check = {"type": "answer_contains", "value": str(value)}
                return self._task(
                    text,
                    f"The {_label(field)} is {value}.",
                    [(plan, args)],
                    _rubric(f"The answer states the {_label(field)}: {value}", check),
                    "browse",
                )
        return None

    def _update(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        for plan in self._tools("update"):
            if plan.shape.upsert or "key" not in plan.spec.implementation:
                continue
            coll = self.model.collections[plan.shape.noun]
            body = [
                (n, a)
                for n, a in plan.args.items()
                if a.role == "body"
                and "." not in (a.field or ".")
                and a.field != coll.pk
                and schema_type(a.schema) == "string"
            ]
            rows = [
                r
                for r in self.records.get(coll.name, [])
                if (coll.name, str(r[coll.pk])) not in used
            ]
            if not body or not rows:
                continue
            record = self.gen.rng.choice(rows)
            used.add((coll.name, str(record[coll.pk])))
            name, arg = body[0]
            value = self._fresh(arg.schema, arg.field, coll, record.get(arg.field))
            if value is None:
                continue
            args = args_for(plan, record, self.gen, coll)
            args[name] = value
            key = record[coll.pk]
            text = (
                f"Set the {_label(arg.field)} of the {coll.noun} {key!s}"
                f"{_scope_text(plan, record)} to {value!s}."
            )
            check = {
                "type": "record",
                "collection": coll.name,
                "key": str(key),
                "path": arg.field,
                "equals": value,
            }
            return self._task(
                text,
                "Done.",
                [(plan, args)],
                _rubric(f"{coll.noun} {key} has {_label(arg.field)} {value}", check),
                "update",
            )
        return None

    def _create(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        for plan in self._tools("create"):
            coll = self.model.collections[plan.shape.noun]
            strings = [
                (n, a)
                for n, a in plan.args.items()
                if a.role == "body"
                and "." not in (a.field or ".")
                and schema_type(a.schema) == "string"
                and not a.schema.get("enum")
                and a.field != coll.pk
            ]
            if not strings:
                continue
            rows = self.records.get(coll.name, [])
            parent = self.gen.rng.choice(rows) if rows else None
            args = args_for(plan, parent, self.gen, coll)
            name, arg = strings[0]
            value = self._fresh(arg.schema, arg.field, coll, None)
            if value is None:
                continue
            args[name] = value
            shown = ", ".join(f"{k} {v}" for k, v in args.items())
            text = f"Create a new {coll.noun} with {shown}."
            where = {arg.field: value}
            check = {"type": "count", "collection": coll.name, "where": where, "equals": 1}
            return self._task(
                text,
                "Created.",
                [(plan, args)],
                _rubric(f"exactly one {coll.noun} has {_label(arg.field)} {value}", check),
                "create",
            )
        return None

    def _delete(self, used: set[tuple[str, str]]) -> TaskSpec | None:
        for plan in self._tools("delete"):
            if "key" not in plan.spec.implementation:
                continue
            coll = self.model.collections[plan.shape.noun]
            rows = [
                r
                for r in self.records.get(coll.name, [])
                if (coll.name, str(r[coll.pk])) not in used
            ]
            if not rows:
                continue
            record = self.gen.rng.choice(rows)
            used.add((coll.name, str(record[coll.pk])))
            key = record[coll.pk]
            args = args_for(plan, record, self.gen, coll)
            text = f"Delete the {coll.noun} {key!s}{_scope_text(plan, record)}."
            check = {"type": "record", "collection": coll.name, "key": str(key), "exists": False}
            return self._task(
                text,
                "Deleted.",
                [(plan, args)],
                _rubric(f"{coll.noun} {key} no longer exists", check),
                "delete",
            )
        return None

    def _fresh(self, schema: dict, field: str, coll: CollectionModel, current: Any) -> Any:
        """A new string value for ``field`` that no seed record has (so checks are exact)."""
        for _ in range(5):
            value = self.gen.value(schema, field, coll.noun, 1)
            if (
                isinstance(value, str)
                and value != current
                and 3 <= len(value) <= 80
                and all(value != r.get(field) for r in self.records.get(coll.name, []))
            ):
                return value
        return None

    def _task(
        self,
        text: str,
        answer: str,
        calls: list[tuple[ToolPlan, dict]],
        verifier: dict,
        pattern: str,
    ) -> TaskSpec:
        return TaskSpec(
            id="",
            instruction=text,
            verifier=verifier,
            kind="graph",
            reference_answer=answer,
            gold={
                "type": "tool_chain",
                "calls": [{"name": p.spec.name, "arguments": a} for p, a in calls],
                "answer": answer,
            },
            difficulty={
                "pattern": pattern,
                "chain_length": len(calls),
                "expected_turns": len(calls) + 1,
            },
            provenance={"synthesizer": "synth-envs/seed-tasks", "round": 0},
        )

    def build(self, limit: int = 5) -> list[TaskSpec]:
        """Up to ``limit`` tasks of varied patterns; the last one is the test task."""
        used: set[tuple[str, str]] = set()
        makers = (
            self.lookup,
            self.find,
            self._update,
            self._create,
            self._delete,
            self.browse,
            self.lookup,
            self.find,
            self.browse,
            self._update,
        )
        tasks: list[TaskSpec] = []
        for make in makers:
            if len(tasks) == limit:
                break
            task = make(used)
            if task is not None:
                tasks.append(task)
        for i, task in enumerate(tasks):
            task.split = "test" if i == len(tasks) - 1 else "train"
            task.id = f"{self.env_id}-{i + 1:04d}"
        return tasks

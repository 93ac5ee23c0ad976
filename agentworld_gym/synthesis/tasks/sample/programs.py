"""Programmatic tasks: programs with real control flow over tool results.

A program template (see :mod:`agentworld_gym.synthesis.tasks.sample.templates`) is instantiated
against an environment's state model — a collection with a list tool and an update tool, a
categorical field to filter on, a parent collection to join — and yields a :class:`Program`: the
request, the verification script's parameters, and ``run``, the program itself. ``run`` talks to the
environment only through a :class:`Caller` (every call goes through the agent's runtime and is
recorded), loops over pages and parents, filters and aggregates what the tools return, branches, and
writes. What it returns (an :class:`Answer`: the text and the values it reports) is the ground
truth; the calls it made are the gold chain. The task's verifier checks exactly those values and the
exact end state the gold chain makes (:mod:`agentworld_gym.synthesis.tasks.verifier.seal`). The
verification script (:mod:`agentworld_gym.synthesis.tasks.verifier.scripts`) recomputes the same
ground truth from the initial state independently, at acceptance: a template whose program and
script disagree on some environment produces nothing there.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.synthesis.tasks.model import (
    BODY,
    FILTER,
    KEY,
    MATCH,
    PAGE,
    SCOPE,
    CollectionModel,
    EnvModel,
    ToolModel,
    scalar,
)
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.values import (
    MISSING,
    get_path,
    items_path,
    schema_type,
    simple,
    typed,
    writable_field,
)


class ProgramError(Exception):
    """A program's call failed: the instance does not fit this environment."""


class Answer(str):
    """A program's reference answer, carrying the values it reports: what the task's answer
    check asks for (typed, exactly these), while the text is what a person would say.

    >>> a = Answer("I updated 3 specs.", 3)
    >>> a, a.facts
    ('I updated 3 specs.', (3,))
    """

    facts: tuple[Any, ...]
    tolerance: float

    def __new__(cls, text: str, *facts: Any, tolerance: float = 0.0) -> Answer:
        made = super().__new__(cls, text)
        made.facts = facts
        made.tolerance = tolerance
        return made


@dataclass
class Program:
    template: str
    kind: str
    """The verification script template
    (:data:`agentworld_gym.synthesis.tasks.verifier.scripts.BODIES`)."""
    params: dict[str, Any]
    request: str
    control_flow: list[str]
    answer_type: str
    family: str
    depth: int
    run: Callable[[Caller], Answer]
    """Executes the program through a caller; returns the reference answer."""
    writes_expected: bool = True


class Caller:
    """The program's only door to the environment: runs and records calls."""

    def __init__(self, runner: Runner, task_id: str, max_calls: int) -> None:
        self.runner = runner
        self.ctx = runner.context(task_id)
        self.calls: list[dict[str, Any]] = []
        self.max_calls = max_calls

    def __call__(
        self, tool: ToolModel, args: dict[str, Any], refs: dict[str, str] | None = None
    ) -> Any:
        """Run one call. ``refs`` maps arguments to ``$<step>.<path>`` references recorded in
        the gold chain in place of the values (a key an earlier call generated)."""
        if len(self.calls) >= self.max_calls:
            raise ProgramError("too many calls")
        out = self.runner.call(self.ctx, tool.name, args)
        if not out.ok:
            raise ProgramError(out.error)
        self.calls.append({"name": tool.name, "arguments": {**args, **(refs or {})}})
        return out.output

    def list_all(self, tool: ToolModel, args: dict[str, Any]) -> list[dict[str, Any]]:
        """Every record a list tool returns, following its pages (a loop)."""
        page = tool.page
        args = dict(args)
        if page.get("size") in tool.params and page["size"] not in args:
            # ask for big pages, as a careful agent would: fewer calls, nothing left unseen
            args[page["size"]] = typed(
                min(int(page.get("max", 100)), 100), tool.params[page["size"]].schema
            )
        size = int(args.get(page.get("size", ""), page.get("default", 20)) or 20)
        size = min(size, int(page.get("max", size)))
        items: list[dict[str, Any]] = []
        for n in range(1, 50):
            out = self(tool, dict(args))
            path = tool.items if tool.items is not None else items_path(out)
            batch = get_path(out, path) if path is not None else None
            if not isinstance(batch, list):
                raise ProgramError(f"{tool.name} returned no list")
            items += [r for r in batch if isinstance(r, dict)]
            style = page.get("style")
            if not page or len(batch) < size or not batch:
                break
            if style == "offset" and page.get("offset") in tool.params:
                args[page["offset"]] = typed(len(items), tool.params[page["offset"]].schema)
            elif style == "page" and page.get("page") in tool.params:
                args[page["page"]] = typed(
                    int(page.get("base", 1)) + n, tool.params[page["page"]].schema
                )
            elif style == "cursor" and page.get("cursor") in tool.params and tool.next:
                nxt = out.get(tool.next) if isinstance(out, dict) else None
                if not nxt:
                    break
                args[page["cursor"]] = nxt
            else:
                break
        return items


def value_at(record: dict[str, Any], path: str) -> Any:
    """The scripts' ``g``: the value at a dotted path, ``None`` when absent."""
    found = get_path(record, path)
    return None if found is MISSING else found


def hit(record: dict[str, Any], where: list[list[Any]]) -> bool:
    """The scripts' ``hit``: every ``[path, value]`` matches as text."""
    return all(str(value_at(record, f)) == str(v) for f, v in where)


# -- what one collection affords ------------------------------------------------------------
@dataclass
class Writable:
    """A field an update (or create) tool can set: ``args[param] = value`` or
    ``args[param] = {prop: value}``, landing at ``path`` in the record."""

    param: str
    path: str
    schema: dict[str, Any]
    prop: str | None = None

    def args(self, value: Any) -> dict[str, Any]:
        return {self.param: {self.prop: value} if self.prop else value}


@dataclass
class Caps:
    """The tools program templates can use on one collection."""

    coll: CollectionModel
    visibility: Visibility
    lister: ToolModel | None = None
    """A list tool with no required argument (every record)."""
    scoped: list[tuple[ToolModel, list[tuple[str, str, str | None]]]] = field(default_factory=list)
    """List tools whose required arguments all scope or filter the records:
    ``(tool, [(arg, field, parent collection or None), ...])``."""
    updater: ToolModel | None = None
    writable: list[Writable] = field(default_factory=list)
    """Fields the updater can set (unique ones left out: programs write one value to many)."""
    deleter: ToolModel | None = None
    getter: ToolModel | None = None
    """A get tool addressed by the key (and the parent scopes a record carries)."""
    maker: ToolModel | None = None
    """A create tool whose every required argument is a body field or a parent scope."""
    make_fields: list[Writable] = field(default_factory=list)
    links: list[tuple[str, str, str]] = field(default_factory=list)
    """``(arg, field, collection)``: arguments of ``maker`` taking another record's key."""
    unique: set[str] = field(default_factory=set)
    """Fields no two records may share (the key, the maker's unique fields)."""


class Visibility:
    """Whether a listing shows every record it should (some APIs cannot page past the first
    page): a program over an incomplete listing would disagree with its script."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self._seen: dict[bytes, bool] = {}

    def complete(
        self,
        tool: ToolModel,
        args: dict[str, Any],
        coll: CollectionModel,
        rows: list[dict[str, Any]],
    ) -> bool:
        key = orjson.dumps([tool.name, args], option=orjson.OPT_SORT_KEYS)
        if key not in self._seen:
            try:
                listed = Caller(self.runner, "visibility", 50).list_all(tool, args)
            except ProgramError:
                listed = []
            want = sorted(str(r.get(coll.pk)) for r in rows)
            self._seen[key] = sorted(str(r.get(coll.pk)) for r in listed) == want
        return self._seen[key]


def capabilities(model: EnvModel, runner: Runner) -> dict[str, Caps]:
    out: dict[str, Caps] = {}
    visibility = Visibility(runner)
    for name, coll in model.collections.items():
        caps = Caps(coll, visibility)
        for t in coll.tools.get("list", []):
            req = [p for p in t.required() if p.role != PAGE]
            if t.hidden & set(coll.profile.categorical):
                continue
            if not req and caps.lister is None:
                caps.lister = t
            elif req and all(
                p.role in (SCOPE, FILTER, MATCH) and p.field and "." not in p.field for p in req
            ):
                caps.scoped.append((t, [(p.name, p.field, p.ref) for p in req]))
        caps.unique = _unique(model, coll)
        for t in coll.tools.get("update", []):
            ws = [
                w
                for w in _writables(t, coll)
                if w.path not in caps.unique and writable_field(w.path, w.schema)
            ]
            if ws and _addressable(t) and caps.updater is None:
                caps.updater, caps.writable = t, ws
        for t in coll.tools.get("delete", []):
            if _addressable(t) and caps.deleter is None and not _bulk(model, t):
                caps.deleter = t
        caps.getter = _getter(coll)
        _maker(caps, model)
        out[name] = caps
    return out


def _unique(model: EnvModel, coll: CollectionModel) -> set[str]:
    """The key and the fields any tool of ``coll`` requires to be unique."""
    names = {t.name for ts in coll.tools.values() for t in ts}
    impls = [t.implementation for t in model.spec.tools if t.name in names]
    return {coll.pk, *(f for impl in impls for f in impl.get("unique", []))}


def _getter(coll: CollectionModel) -> ToolModel | None:
    for t in coll.tools.get("get", []):
        req = [p for p in t.required() if p.role != PAGE]
        if t.record is not None and _addressable(t) and all(p.role != BODY for p in req):
            if all(p.field and "." not in p.field for p in req if p.role == SCOPE):
                return t
    return None


def _maker(caps: Caps, model: EnvModel) -> None:
    """The create tool of ``caps.coll`` that programs can call with values they choose."""
    coll = caps.coll
    for t in coll.tools.get("create", []):
        req = t.required()
        if not all(p.role in (BODY, SCOPE) and p.field for p in req):
            continue
        links = [
            (p.name, p.field, p.ref)
            for p in t.params.values()
            if p.ref
            and p.ref != coll.name
            and p.ref in model.collections
            and p.field
            and "." not in p.field
        ]
        caps.maker, caps.make_fields, caps.links = t, _writables(t, coll), links
        return


_BULK = re.compile(r"[:/](?:purge|batchDelete|bulkDelete|deleteAll|clear)\b", re.I)


def _bulk(model: EnvModel, tool: ToolModel) -> bool:
    """A tool whose path ends in a bulk action (``documents:purge``): it empties a parent,
    so no request may use it to delete one record."""
    spec = next((t for t in model.spec.tools if t.name == tool.name), None)
    return bool(spec is not None and _BULK.search(spec.description or ""))


def _addressable(tool: ToolModel) -> bool:
    """Every required argument is the key, a parent scope, or body."""
    return any(p.role == KEY for p in tool.params.values()) and all(
        p.role in (KEY, SCOPE, BODY, PAGE) for p in tool.required()
    )


def _writables(tool: ToolModel, coll: CollectionModel) -> list[Writable]:
    out: list[Writable] = []
    for p in tool.params.values():
        if p.role != BODY or not p.field or p.field == coll.pk or p.field in coll.references:
            continue
        if "." in p.field:  # a key with a dot in its name reads as a path: ambiguous
            continue
        if simple(p.schema) and schema_type(p.schema) in ("string", "boolean", "integer"):
            if schema_type(p.schema) == "string" and p.schema.get("format"):
                continue
            out.append(Writable(p.name, p.field, p.schema))
        elif p.schema.get("type") == "object" and p.schema.get("properties"):
            if p.schema.get("required"):
                continue
            for prop, s in p.schema["properties"].items():
                if simple(s) and schema_type(s) in ("string", "boolean") and not s.get("format"):
                    out.append(Writable(p.name, f"{p.field}.{prop}", s, prop))
    return out


def address(tool: ToolModel, coll: CollectionModel, record: dict[str, Any]) -> dict[str, Any]:
    """The key and scope arguments that address ``record`` with ``tool``."""
    args: dict[str, Any] = {}
    for p in tool.params.values():
        if p.role == KEY:
            args[p.name] = typed(record.get(coll.pk), p.schema)
        elif p.role == SCOPE and p.field and (p.required or p.field in record):
            value = get_path(record, p.field)
            if not scalar(value):
                raise ProgramError(f"record has no {p.field}")
            args[p.name] = typed(value, p.schema)
    return args


def setting(
    tool: ToolModel, coll: CollectionModel, record: dict[str, Any], w: Writable, value: Any
) -> dict[str, Any]:
    """The arguments of an update setting ``w`` to ``value`` on ``record``: its address, the
    record's current values for the other body arguments the tool requires (a PUT resends
    them), and the new value. A field inside an object argument goes with the object's other
    fields as they are: "set the format of the rule's target" must not wipe the target's url,
    which an object sent with the format alone would replace."""
    args = address(tool, coll, record)
    for p in tool.required():
        if p.role == BODY and p.name != w.param and p.name not in args:
            current = get_path(record, p.field or p.name)
            if current is MISSING or current is None:
                raise ProgramError(f"record has no {p.field}")
            args[p.name] = typed(current, p.schema)
    if w.prop and "." in w.path:
        around = get_path(record, w.path.rsplit(".", 1)[0])
        if isinstance(around, dict):
            return {**args, w.param: {**around, w.prop: value}}
    return {**args, **w.args(value)}

"""Weighted random walks over the tool graph, executed as they go.

A walk starts at a tool with no strong predecessor and repeatedly picks the next tool with
probability proportional to the edge weight from the previous one (scaled by the config's
weak/independent knobs), times a bonus for each required argument an earlier output can fill.
Each call's arguments come only from

- earlier outputs, written as ``$<step>.<path>`` references so replay resolves them;
- the seed data (an *anchor* record the request names, a filter value, a scope);
- values the request states (the new title to set, a search word).

Each step runs at once on the walk's own fork; a call that fails or returns nothing is not added
(another tool is tried). The chain is replayed afterwards by
:mod:`agentworld_gym.synthesis.tasks.goal.walk`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import ToolArgumentError
from agentworld_gym.replay import resolve_refs
from agentworld_gym.synthesis.tasks.model import (
    BODY,
    FILTER,
    KEY,
    MATCH,
    OTHER,
    PAGE,
    SCOPE,
    SEARCH,
    EnvModel,
    Param,
    ToolModel,
    scalar,
    words,
)
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.graph import INDEPENDENT, STRONG, WEAK, ToolGraph
from agentworld_gym.synthesis.tasks.values import (
    MISSING,
    get_path,
    items_path,
    join,
    new_value,
    sayable_field,
    simple,
    typed,
    writable_field,
)

RESTARTS = 4
"""Starts a walk tries before it settles for a short one."""
MAX_ITEMS = 20
"""Listed records per step whose keys later steps may use."""
_ORDER = {KEY: 0, SCOPE: 1, MATCH: 2, FILTER: 3, SEARCH: 4, BODY: 5, PAGE: 6, OTHER: 7}


@dataclass
class WalkConfig:
    """Knobs of one walk."""

    min_length: int = 2
    max_length: int = 6
    weak_scale: float = 1.0
    """Multiplies the weight of weak edges (0 walks only along strong/independent ones)."""
    independent_scale: float = 0.5
    """Multiplies the weight of independent edges (jumps to an unrelated tool)."""
    max_writes: int = 2
    param_bonus: float = 0.5
    optional_filter: float = 0.25
    """Probability of setting an optional filter or scope (narrower lists)."""
    attempts: int = 8
    anchors: bool = True
    """Let a call address a seed record by its key (stated in the request); ``False`` hides
    every key: the agent must find each record through earlier calls."""
    chained: bool = True
    """Every step after the first takes an argument from an earlier output, so the chain
    serves one goal (a later step acts on what an earlier one found or made) instead of
    concatenating unrelated calls."""


@dataclass
class Source:
    """Where an argument's value came from (the instruction describes it from this)."""

    kind: str
    """``ref`` (an earlier output) | ``anchor`` (a seed record the request names) |
    ``given`` (a value the request states) | ``page``."""
    step: int = -1
    path: str = ""
    collection: str | None = None
    field: str | None = None
    value: Any = None


@dataclass
class Step:
    tool: ToolModel
    args: dict[str, Any]
    sources: dict[str, Source]
    output: Any = None
    edge: int = INDEPENDENT
    target: tuple[str, Any] | None = None
    """``(collection, key)`` of the record the call addressed (get/update/delete)."""
    record_path: str | None = None
    """Where the step's record sits in its output (``data.0`` for a list's first item)."""
    items: int = 0
    subject: str | None = None
    """The collection the returned record belongs to, as observed (code tools)."""


@dataclass
class Ref:
    step: int
    path: str
    collection: str
    value: Any


@dataclass
class Walk:
    steps: list[Step] = field(default_factory=list)
    pool: list[Ref] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    seen: set[bytes] = field(default_factory=set)
    fetched: set[tuple[str, str]] = field(default_factory=set)

    @property
    def writes(self) -> int:
        return sum(1 for s in self.steps if s.tool.writes)


class Walker:
    """Runs walks over one environment."""

    def __init__(
        self, model: EnvModel, graph: ToolGraph, runner: Runner, config: WalkConfig | None = None
    ) -> None:
        self.model = model
        self.graph = graph
        self.runner = runner
        self.config = config or WalkConfig()
        self._keysets: dict[str, set[str]] = {
            c.name: {str(r[c.pk]) for r in c.records} for c in model.collections.values()
        }

    # -- the walk ---------------------------------------------------------------------------
    def walk(
        self, rng: random.Random, task_id: str, length: int, focus: tuple[str, ...] = ()
    ) -> Walk:
        """A walk of up to ``length`` steps; a walk that stops before ``min_length`` (its
        start led nowhere) is tried again from another start, and the longest is kept."""
        best = Walk()
        for _ in range(RESTARTS):
            w = self._walk(rng, task_id, length, focus)
            if len(w.steps) > len(best.steps):
                best = w
            if len(best.steps) >= min(length, self.config.min_length):
                break
        return best

    def _walk(self, rng: random.Random, task_id: str, length: int, focus: tuple[str, ...]) -> Walk:
        ctx = self.runner.context(task_id)
        w = Walk()
        starts = self.graph.starts() or [n for n, t in self.model.tools.items() if not t.writes]
        for pos in range(length):
            weights = self._weights(w, starts if pos == 0 else None, focus)
            tried: set[str] = set()
            step = None
            for _ in range(self.config.attempts):
                names = [n for n in weights if n not in tried and weights[n] > 0]
                if not names:
                    break
                name = rng.choices(names, [weights[n] for n in names])[0]
                tried.add(name)
                step = self._try(name, w, ctx, rng)
                if step is not None:
                    if w.steps:
                        step.edge = self.graph.edge(w.steps[-1].tool.name, name).weight
                    w.steps.append(step)
                    w.outputs.append(step.output)
                    self._collect(w, len(w.steps) - 1, ctx.db)
                    break
            if step is None:
                break
        return w

    def _weights(
        self, w: Walk, starts: list[str] | None, focus: tuple[str, ...]
    ) -> dict[str, float]:
        cfg = self.config
        out: dict[str, float] = {}
        if starts is not None:
            for n, t in self.model.tools.items():
                if n in starts:
                    out[n] = 1.0 + len(self.graph.produces[n])
                elif not t.writes:
                    out[n] = 0.2  # starting from an anchor record: when no start tool works
                coll = self.model.collections.get(t.collection or "")
                if n in out and t.op in ("list", "search") and coll and coll.profile.names:
                    out[n] *= 3.0  # records found by name: the request names them as people do
                if n in focus and n in out:
                    out[n] += 3.0
            return out
        prev = w.steps[-1].tool.name
        have = {r.collection for r in w.pool}
        for n, t in self.model.tools.items():
            if t.writes and w.writes >= cfg.max_writes:
                continue
            e = self.graph.edge(prev, n).weight if n != prev else WEAK
            weight = {
                STRONG: 3.0,
                WEAK: 2.0 * cfg.weak_scale,
                INDEPENDENT: 1.0 * cfg.independent_scale,
            }[e]
            matches = sum(1 for p in t.required() if p.ref in have)
            weight *= 1.0 + cfg.param_bonus * matches
            if n == prev:
                weight *= 0.3
            if t.op == "delete":
                weight *= 0.5
            if n in focus:
                weight *= 3.0
            out[n] = weight
        return out

    # -- one step -----------------------------------------------------------------------------
    def _try(self, name: str, w: Walk, ctx: Any, rng: random.Random) -> Step | None:
        tool = self.model.tools[name]
        filled = self._fill(tool, w, ctx.db, rng)
        if filled is None:
            return None
        args, sources, target = filled
        if self.config.chained and w.steps and not any(s.kind == "ref" for s in sources.values()):
            return None
        try:
            self.runner.toolbox.get(name).check_arguments(resolve_refs(args, w.outputs))
        except ToolArgumentError:
            return None
        sig = orjson.dumps([name, args], option=orjson.OPT_SORT_KEYS)
        if sig in w.seen or (
            target is not None and not tool.writes and (name, str(target[1])) in w.fetched
        ):
            return None
        outcome = self.runner.call(ctx, name, resolve_refs(args, w.outputs))
        if not outcome.ok:
            return None
        step = Step(tool, args, sources, outcome.output, target=target)
        if not self._locate(step):
            return None
        w.seen.add(sig)
        if target is not None:
            w.fetched.add((name, str(target[1])))
        return step

    def _locate(self, step: Step) -> bool:
        """Find the step's record (or first listed record) in its output; reject empties."""
        out, tool = step.output, step.tool
        if out in (None, "", [], {}):
            return False
        if tool.op in ("list", "search"):
            path = tool.items if tool.items is not None else items_path(out)
            items = get_path(out, path) if path is not None else MISSING
            if not isinstance(items, list) or not items:
                return False
            step.items = len(items)
            step.record_path = join(path, 0) if isinstance(items[0], dict) else None
        elif tool.record is not None:
            rec = get_path(out, tool.record)
            step.record_path = tool.record if isinstance(rec, dict) else None
        elif not tool.declarative and isinstance(out, dict):
            path = items_path(out)
            if path is not None and isinstance(get_path(out, path), list):
                step.items = len(get_path(out, path))
                step.record_path = join(path, 0)
            else:
                step.record_path = ""
        return True

    def _collect(self, w: Walk, i: int, db: Database) -> None:
        """Add the keys in step ``i``'s record(s) to the pool later steps draw from (every
        listed record, not just the first, so a walk can continue from any of them)."""
        step = w.steps[i]
        if step.record_path is None:
            return
        paths = [step.record_path]
        head, _, last = step.record_path.rpartition(".")
        if step.items > 1 and last == "0":
            paths = [join(head, n) for n in range(min(step.items, MAX_ITEMS))]
        elif step.items > 1 and step.record_path == "0":
            paths = [str(n) for n in range(min(step.items, MAX_ITEMS))]
        found: set[str] = set()
        coll = self.model.collections.get(step.tool.collection or "")
        for path in paths:
            rec = get_path(step.output, path)
            if not isinstance(rec, dict):
                continue
            for k, v in rec.items():
                if not scalar(v) or "." in k:
                    continue
                if coll is not None and k == coll.pk and step.tool.declarative:
                    c = coll.name
                elif coll is not None and k in coll.references:
                    c = coll.references[k]
                else:
                    c = self._match_key(k, v, db)
                if c is not None and c in self.model.collections:
                    w.pool.append(Ref(i, join(path, k), c, v))
                    found.add(c)
                    if k in ("id", "gid", "uuid") or (coll is not None and k == coll.pk):
                        step.subject = step.subject or c
        self.graph.observe(step.tool.name, found)

    def _match_key(self, fld: str, value: Any, db: Database) -> str | None:
        """The collection whose key ``value`` is, judged by the field name or a unique match."""
        text = str(value)
        hits = [c for c, keys in self._keysets.items() if text in keys]
        if not hits:
            hits = [c for c in self.model.collections if db.get(c, text) is not None]
        if len(hits) == 1 and (isinstance(value, str) and len(text) >= 8):
            return hits[0]
        fw = words(fld)
        for c in hits:
            noun = words(self.model.collections[c].noun)
            if noun and noun[-1] in fw:
                return c
        return None

    # -- arguments ----------------------------------------------------------------------------
    def _fill(self, tool: ToolModel, w: Walk, db: Database, rng: random.Random):
        cfg = self.config
        args: dict[str, Any] = {}
        sources: dict[str, Source] = {}
        target: tuple[str, Any] | None = None
        record: dict[str, Any] | None = None
        ref_path: str | None = None
        coll = self.model.collections.get(tool.collection or "")
        optional = [n for n, p in tool.params.items() if p.role == BODY and not p.required]
        preferred = [
            n
            for n in optional
            if coll is not None
            and tool.params[n].field in (coll.profile.labels + list(coll.profile.categorical))
        ]
        want = 1 if rng.random() < 0.7 or tool.op == "create" else 2
        body = set(rng.sample(preferred or optional, min(want, len(preferred or optional))))
        keyed = ""
        for p in sorted(tool.params.values(), key=lambda p: _ORDER[p.role]):
            src: Source | None = None
            if p.role == KEY and tool.op != "create":
                src, record, ref_path = self._key(p, w, db, rng)
                if src is None:
                    return None
                keyed = str(src.value)
                if p.ref:
                    target = (
                        p.ref,
                        record.get(self.model.collections[p.ref].pk) if record else src.value,
                    )
            elif p.role == SCOPE:
                if (
                    not p.required
                    and (tool.op not in ("list", "search") or rng.random() > cfg.optional_filter)
                    and record is None
                ):
                    continue
                src = self._scope(p, tool, w, db, rng, record, ref_path, sources)
            elif p.role in (FILTER, MATCH):
                if not p.required and (
                    rng.random() > cfg.optional_filter
                    or coll is None
                    or p.field not in coll.profile.categorical
                ):
                    continue
                src = self._from_records(p, tool, coll, sources, rng)
            elif p.role == SEARCH:
                if not p.required and rng.random() > cfg.optional_filter / 2:
                    continue
                src = self._search(coll, rng)
            elif p.role in (BODY, OTHER) or (p.role == KEY and tool.op == "create"):
                if not p.required and p.name not in body:
                    continue
                if tool.op == "update" and (tool.collection, keyed, p.name) in _written(w):
                    if p.required:  # the field was set earlier in the walk: undoing it
                        return None  # reads as two unrelated asks
                    continue
                if tool.writes:
                    src = self._body(p, tool, record, coll, rng, args)
                elif p.required:
                    value = new_value(p.schema, p.name, None, rng)
                    src = None if value is MISSING else Source("given", value=value)
                else:
                    continue
                if src is None and not p.required:
                    continue
            elif p.role == PAGE:
                if not p.required:
                    continue
                src = _page_value(p, tool)
            if src is None:
                if p.required:
                    return None
                continue
            sources[p.name] = src
            args[p.name] = (
                f"${src.step}.{src.path}" if src.kind == "ref" else typed(src.value, p.schema)
            )
        if (
            tool.writes
            and tool.op in ("update", "create")
            and not any(
                s.kind == "given" and tool.params[n].role == BODY for n, s in sources.items()
            )
        ):
            return None
        return args, sources, target

    def _key(self, p: Param, w: Walk, db: Database, rng: random.Random):
        """A key from an earlier output (preferred) or an anchor record of the seed data."""
        if p.ref is None:
            return None, None, None
        coll = self.model.collections[p.ref]
        refs = [r for r in w.pool if r.collection == p.ref and db.get(p.ref, r.value) is not None]
        if refs:
            ref = _pick(refs, rng)
            rec = db.get(p.ref, ref.value)
            return Source("ref", ref.step, ref.path, p.ref, coll.pk, ref.value), rec, ref.path
        alive = [r for r in coll.records if db.get(p.ref, r[coll.pk]) is not None]
        if not alive or not self.config.anchors:
            return None, None, None
        rec = rng.choice(alive)
        return Source("anchor", collection=p.ref, field=coll.pk, value=rec[coll.pk]), rec, None

    def _scope(
        self,
        p: Param,
        tool: ToolModel,
        w: Walk,
        db: Database,
        rng: random.Random,
        record: dict | None,
        ref_path: str | None,
        sources: dict[str, Source],
    ) -> Source | None:
        if record is not None and p.field and scalar(record.get(p.field)):
            value = record[p.field]
            if ref_path is not None:
                prefix = ref_path.rsplit(".", 1)[0] if "." in ref_path else ""
                for ref in w.pool:
                    if ref.path == ref_path:
                        got = get_path(w.outputs[ref.step], join(prefix, p.field))
                        if got == value:
                            return Source(
                                "ref", ref.step, join(prefix, p.field), p.ref, p.field, value
                            )
            return Source("given", collection=p.ref, field=p.field, value=value)
        if p.ref and p.ref in self.model.collections:
            refs = [r for r in w.pool if r.collection == p.ref]
            if refs:
                ref = _pick(refs, rng)
                return Source("ref", ref.step, ref.path, p.ref, p.field, ref.value)
            parent = self.model.collections[p.ref]
            children = self.model.collections.get(tool.collection or "")
            used = {str(r.get(p.field)) for r in self._consistent(tool, children, sources)}
            alive = [
                r
                for r in parent.records
                if db.get(p.ref, r[parent.pk]) is not None
                and (not used or str(r[parent.pk]) in used)
            ]
            if alive:
                rec = rng.choice(alive)
                return Source("anchor", collection=p.ref, field=parent.pk, value=rec[parent.pk])
            return None
        coll = self.model.collections.get(tool.collection or "")
        return self._from_records(p, tool, coll, sources, rng)

    @staticmethod
    def _consistent(tool: ToolModel, coll, sources: dict[str, Source]) -> list[dict]:
        """Records of ``coll`` agreeing with the scope and filter values chosen so far."""
        if coll is None:
            return []
        scope = [
            (tool.params[a].field, s.value)
            for a, s in sources.items()
            if tool.params[a].role in (SCOPE, FILTER, MATCH) and tool.params[a].field
        ]
        return [r for r in coll.records if all(str(r.get(f)) == str(v) for f, v in scope)]

    def _from_records(
        self, p: Param, tool: ToolModel, coll, sources: dict[str, Source], rng: random.Random
    ) -> Source | None:
        """A filter value some record in the call's scope has (so the answer is not empty)."""
        if coll is None or not p.field:
            return None
        rows = [
            r
            for r in self._consistent(tool, coll, sources)
            if scalar(r.get(p.field)) or isinstance(r.get(p.field), bool)
        ]
        if not rows:
            return None
        value = rng.choice(rows)[p.field]
        if not _fits(value, p.schema):
            return None
        return Source("given", field=p.field, value=value)

    def _search(self, coll, rng: random.Random) -> Source | None:
        if coll is None or not coll.profile.labels:
            return None
        rec = rng.choice(coll.records)
        text = rec.get(coll.profile.labels[0])
        parts = [x for x in str(text).split() if len(x) >= 4 and x.isalpha()]
        if not parts:
            return None
        return Source("given", field=coll.profile.labels[0], value=rng.choice(parts))

    def _body(
        self, p: Param, tool: ToolModel, record: dict | None, coll, rng: random.Random, args: dict
    ) -> Source | None:
        current = record or {}
        fld = p.field or p.name
        if not writable_field(fld, p.schema) and (tool.op != "create" or not p.required):
            return None  # ids, etags, stamps: the service keeps them, people do not set them
        if simple(p.schema) and not sayable_field(fld, p.schema):
            # a required field of no known kind: a value the world holds, never made-up text
            held = [
                r.get(fld) for r in (coll.records if coll else []) if isinstance(r.get(fld), str)
            ]
            return Source("given", field=fld, value=rng.choice(held)) if held else None
        if simple(p.schema):
            known = coll.profile.categorical.get(fld) if coll else None
            hint, noun = (coll.hint, coll.noun) if coll else ("", "")
            value = new_value(p.schema, fld, current.get(fld), rng, known, hint, noun)
            if value is MISSING or (
                not p.required
                and tool.op == "create"
                and rng.random() < 0.5
                and fld not in (coll.profile.labels if coll else [])
            ):
                return None
            return Source("given", field=fld, value=value)
        props = p.schema.get("properties") if p.schema.get("type") == "object" else None
        if not props:
            return None
        inner_req = p.schema.get("required", [])
        if any(not simple(props.get(r, {})) for r in inner_req):
            return None
        names = list(inner_req) or [k for k, s in props.items() if simple(s)][:1] or []
        choices = [k for k, s in props.items() if simple(s) and k not in names]
        if choices and (not names or rng.random() < 0.3):
            names.append(rng.choice(choices))
        if not names:
            return None
        inner = current.get(fld) if isinstance(current.get(fld), dict) else {}
        value = {}
        names = [k for k in names if k in inner_req or writable_field(k, props[k])]
        if not names:
            return None
        for k in names:
            v = new_value(props[k], k, inner.get(k), rng)
            if v is MISSING:
                return None
            value[k] = v
        return Source("given", field=fld, value=value)


def _written(w: Walk) -> set[tuple[str | None, str, str]]:
    """(collection, key, argument) of every field an update of the walk has set."""
    out: set[tuple[str | None, str, str]] = set()
    for s in w.steps:
        if s.tool.op != "update":
            continue
        key = next((str(v.value) for n, v in s.sources.items() if s.tool.params[n].role == KEY), "")
        out.update((s.tool.collection, key, n) for n in s.sources if s.tool.params[n].role == BODY)
    return out


def _pick(refs: list[Ref], rng: random.Random) -> Ref:
    """Mostly a value from the latest step that has one (any of its listed records), else
    from any earlier step."""
    if rng.random() < 0.75:
        latest = refs[-1].step
        return rng.choice([r for r in refs if r.step == latest])
    return rng.choice(refs)


def _fits(value: Any, schema: dict[str, Any]) -> bool:
    enum = schema.get("enum")
    return not enum or value in enum


def _page_value(p: Param, tool: ToolModel) -> Source | None:
    page = tool.page
    if p.field == "size":
        return Source("page", value=int(page.get("max", page.get("default", 20)) or 20))
    if p.field == "offset":
        return Source("page", value=0)
    if p.field == "page":
        return Source("page", value=int(page.get("base", 1)))
    return None

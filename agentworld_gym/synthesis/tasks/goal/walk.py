"""Graph tasks: a walk becomes a request, a reference answer and a rubric.

The goal of an executed :class:`~agentworld_gym.synthesis.tasks.sample.walk.Walk` — the facts it
reports and the end state its writes make — worded by
:class:`~agentworld_gym.synthesis.tasks.request.walk.GoalWriter` and checked by the criteria of
:mod:`agentworld_gym.synthesis.tasks.verifier.rubric`:

1. pick the *facts* to report — a field of a looked-up record, how many records a list
   returned — preferring facts the first call does not already show;
2. drop read steps nothing depends on (no later step uses their output, no fact comes from
   them), nor the lookups of values the request states (a key it quotes), so every gold
   call is needed;
3. replay the chain twice on fresh forks, the second time with another task id and a shifted
   clock; a fact that differs is volatile (a generated id, a timestamp) and is dropped;
4. write the rubric: one machine-checked criterion per fact (exact text, or a number with a
   tolerance), one per final-state fact of each write (a field's new value, a created record,
   a deleted one), and a completeness criterion over all reported values.
"""

from __future__ import annotations

import random
import re
from typing import Any

from agentworld_gym.env import dumps
from agentworld_gym.synthesis.tasks.candidate import (
    Candidate,
    TaskBuilder,
    acceptance_cases,
    difficulty,
    needed,
    ref_depth,
    repeats,
)
from agentworld_gym.synthesis.tasks.model import (
    BODY,
    KEY,
    SCOPE,
    EnvModel,
    humanize,
    looks_like_id,
    paging,
    twinned,
    words,
)
from agentworld_gym.synthesis.tasks.request import render
from agentworld_gym.synthesis.tasks.request.walk import Fact, GoalWriter, field_label
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.graph import EDGE_NAMES
from agentworld_gym.synthesis.tasks.sample.walk import Source, Step, Walk
from agentworld_gym.synthesis.tasks.values import MISSING, get_path, join
from agentworld_gym.synthesis.tasks.verifier.rubric import (
    completeness_criterion,
    fact_criterion,
    state_criteria,
)

MAX_FACTS = 2
"""Values a short task asks for (a long one: two more): each more reads as another errand."""
MAX_REQUEST = 700
"""Characters of a request: a longer one reads as a dump of the chain, not a user's goal."""
_BORING = frozenset(
    {
        "object", "kind", "resource_type", "__typename", "cursor", "etag", "next", "page",
        "offset", "limit", "page_size", "per_page", "page_token", "next_token", "total",
        "count", "start", "size", "version",
    }
)  # fmt: skip
"""Paging and bookkeeping fields: asking for them reads as asking about the API."""


class GraphTaskBuilder(TaskBuilder):
    """Turns walks of one environment into graph-task candidates."""

    def __init__(self, model: EnvModel, runner: Runner, seed: int, llm: Any = None) -> None:
        super().__init__(model, runner, seed, llm)
        self.writer = GoalWriter(model)
        self.strict = True
        """Refuse walks whose request reads badly (see :attr:`GoalWriter.problems`)."""
        self.one_errand = True
        """Refuse walks that ask separate things (an environment still under its floor in the
        extra rounds turns this off, two rounds after the readability rules)."""

    def _start_at_named(
        self, steps: list[Step], facts: list[Fact], instruction: str, outputs: list[Any]
    ) -> tuple[list[Step], list[Fact]]:
        """The steps from the record the request names on (``steps`` itself when it names
        none found along the way): a walk that reached a record through calls the agent
        need not make, because the request names it, keeps only the rest
        (:func:`agentworld_gym.synthesis.tasks.candidate.needed`)."""
        calls = [{"name": s.tool.name, "arguments": s.args} for s in steps]
        keys = {
            (s.tool.name, n)
            for s in steps
            for n, p in s.tool.params.items()
            if p.role in (KEY, SCOPE)
        }
        writes = {s.tool.name for s in steps if s.tool.writes}
        keep = needed(calls, outputs, keys, instruction, writes, {f.step for f in facts})
        if len(keep) == len(steps):
            return steps, facts
        facts = [Fact(f.step, f.kind, f.field, f.path, f.value) for f in facts]
        return _drop_steps(steps, keep, facts, repeats(calls, outputs, writes)), facts

    def build(
        self, walk: Walk, rng: random.Random, task_id: str, min_calls: int = 1
    ) -> Candidate | str:
        """A candidate, or the reason the walk yields none."""
        steps = list(walk.steps)
        if not steps:
            return "empty walk"
        facts = self._pick_facts(
            steps, walk.outputs, rng, MAX_FACTS + 2 if min_calls > 2 else MAX_FACTS
        )
        for _ in range(4):  # drop unstable or leaking facts, then the steps they alone needed
            steps, facts = _prune(steps, facts)
            if len(steps) < min_calls:
                return "walk too short"
            calls = [{"name": s.tool.name, "arguments": s.args} for s in steps]
            r1 = self.runner.run(calls, task_id)
            r2 = self.runner.run(calls, task_id + "-probe", probe=True)
            if not (r1.ok and r2.ok):
                return "replay failed"
            stable = []
            for f in facts:
                value = _value(f, r1.outputs)
                if value is not MISSING and value == _value(f, r2.outputs):
                    f.value = value
                    stable.append(f)
            instruction, given = self.writer.write(
                self.model.spec.name, steps, r1.outputs, stable, random.Random(rng.random())
            )
            stable = [f for f in stable if render.leaks(instruction, [f.value], []) is None]
            if len(stable) != len(facts):
                facts = stable
                continue
            named = _name_stated(steps, instruction)
            if named is steps:
                named, facts = self._start_at_named(steps, facts, instruction, r1.outputs)
            if named is steps:
                break
            steps = named  # the lookups of values the request states go (step 2 again)
        else:
            return "unstable facts"
        state = state_criteria(self.model, self.runner.base, steps, r1, r2)
        if not facts and not state:
            return "nothing stable to check"
        if self.writer.problems and self.strict:
            return "unreadable: " + self.writer.problems[0].split(" '")[0]
        if _rewrites(steps):
            return "a field written twice"
        if _moved(steps):
            return "a record found in one scope is addressed in another"
        if self.one_errand and not _one_errand(steps, facts):
            return "separate errands"
        if len(instruction) > MAX_REQUEST:
            return "request too long"
        why = render.leaks(instruction, [f.value for f in facts], self.tool_names)
        if why:
            return "request names a tool" if why.startswith("names") else "request leaks a value"
        if self.llm is not None:
            instruction = render.paraphrase(
                self.llm, instruction, given, [f.value for f in facts], self.tool_names
            )
        names = self._field_names(facts, steps)
        criteria = [
            fact_criterion(f, self._fact_label(f, steps), n)
            for f, n in zip(facts, names, strict=True)
        ]
        criteria += state
        if (complete := completeness_criterion(facts)) is not None:
            criteria.append(complete)
        answer = "; ".join(f"{self._fact_label(f, steps, short=True)}: {f.value}" for f in facts)
        answer = answer or "Done."
        writes = sum(1 for s in steps if s.tool.writes)
        edges = [EDGE_NAMES[s.edge] for s in steps[1:]]
        diff = difficulty(
            calls,
            writes,
            ref_depth(calls),
            [],
            _answer_type(facts),
            pattern="walk",
            edges=[edges.count(k) for k in ("strong", "weak", "independent")],
        )
        verifier = {"type": "rubric", "criteria": criteria}
        task = self.task(task_id, instruction, answer, verifier, calls, diff, "graph-walk")
        cases = acceptance_cases(self.runner, calls, task_id, r1.db, r2.db, answer)
        anchor = next(
            (
                str(s.value)
                for st in steps
                for s in st.sources.values()
                if s.kind in ("anchor", "given")
            ),
            "",
        )
        return Candidate(task, f"g:{steps[0].tool.name}:{anchor}", cases)

    # -- facts ------------------------------------------------------------------------------
    def _pick_facts(
        self, steps: list[Step], outputs: list[Any], rng: random.Random, most: int
    ) -> list[Fact]:
        consumed = {s.step for st in steps for s in st.sources.values() if s.kind == "ref"}
        first_text = dumps(outputs[0]).casefold() if outputs else ""
        given = {str(s.value).casefold() for st in steps for s in st.sources.values()}
        facts: list[tuple[bool, float, Fact]] = []
        taken: set[str] = set()
        for i, step in enumerate(steps):
            if step.tool.writes:
                continue
            if i in consumed and i != len(steps) - 1:
                continue  # a lookup on the way: asking its values too glues on a second errand
            must = True
            options = self._fact_options(i, step, outputs[i])
            fresh = [
                f
                for f in options
                if str(f.value).casefold() not in given
                and (i == 0 or str(f.value).casefold() not in first_text)
            ]
            fresh = [f for f in fresh if str(f.value).casefold() not in taken]
            if fresh:
                pick = rng.choice(fresh[:3])
                taken.add(str(pick.value).casefold())
                facts.append((not must, rng.random(), pick))
        # keep the facts that keep a step needed first, then random others
        kept = sorted(facts, key=lambda t: t[:2])[:most]
        return sorted((f for _, _, f in kept), key=lambda f: f.step)

    def _fact_options(self, i: int, step: Step, output: Any) -> list[Fact]:
        tool = step.tool
        coll = self.model.collections.get(tool.collection or "")
        out: list[Fact] = []
        if tool.op in ("list", "search") and step.items:
            size = int(tool.page.get("default", 0) or 0)
            if not tool.page or step.items < size:
                path = (
                    tool.items
                    if tool.items is not None
                    else step.record_path.rsplit(".", 1)[0]
                    if step.record_path and "." in step.record_path
                    else ""
                )
                out.append(Fact(i, "count", path=path, value=step.items))
        if step.record_path is None:
            return out
        rec = get_path(output, step.record_path)
        if not isinstance(rec, dict):
            return out
        ranked: list[tuple[int, str]] = []
        twins = twinned([rec])
        for k, v in rec.items():
            if (
                "." in k
                or k in twins
                or not _answerable(v)
                or k in _BORING
                or paging(k)
                or (coll and (k == coll.pk or k in coll.references))
            ):
                continue
            if looks_like_id(k) or words(k)[-1:] == ["url"]:
                continue
            rank = 3
            if coll is not None:
                if k in coll.profile.labels:
                    rank = 0
                elif k in coll.profile.categorical or k in coll.profile.numeric:
                    rank = 1
            ranked.append((rank, k))
        kind = "first" if tool.op in ("list", "search") else "field"
        for _, k in sorted(ranked):
            out.append(Fact(i, kind, k, join(step.record_path, k), rec[k]))
        return out

    def _fact_label(
        self, f: Fact, steps: list[Step], short: bool = False, said: bool = True
    ) -> str:
        """A fact as the rubric and the reference answer say it ("item creation time",
        as the request does); ``said=False``: the field's own words, for answer keys."""
        noun = self.writer.noun(steps[f.step])
        where = "" if short else f" (step {f.step + 1})"
        if f.kind == "count":
            return f"number of {render.plural(noun)}{where}"
        return f"{noun} {field_label(f.field) if said else humanize(f.field)}{where}"

    def _field_names(self, facts: list[Fact], steps: list[Step]) -> list[str]:
        """A snake_case answer-field name per fact, unique within the task."""
        names: list[str] = []
        for f in facts:
            base = "_".join(words(self._fact_label(f, steps, True, said=False))) or "value"
            name, n = base, 2
            while name in names:
                name, n = f"{base}_{n}", n + 1
            names.append(name)
        return names


def _one_errand(steps: list[Step], facts: list[Fact]) -> bool:
    """Whether every outcome (a write, an asked value) leads to the last one — its output
    feeds it, or both act on one record the user names by its key — so the request serves one goal
    rather than gluing unrelated asks ("how many groups are there? what is the type of
    ...")."""
    outcomes = sorted({f.step for f in facts} | {i for i, s in enumerate(steps) if s.tool.writes})
    if len(outcomes) < 2:
        return True
    last = outcomes[-1]
    feeds, todo = set(), [last]
    while todo:
        for src in steps[todo.pop()].sources.values():
            if src.kind == "ref" and src.step not in feeds:
                feeds.add(src.step)
                todo.append(src.step)

    def named(i: int) -> set[str]:
        # the record itself, by its key: two records that share a parent are two errands
        params = steps[i].tool.params
        return {
            str(x.value)
            for n, x in steps[i].sources.items()
            if x.kind in ("anchor", "given") and params[n].role == KEY
        }

    told = named(last)
    return all(i in feeds or named(i) & told for i in outcomes[:-1])


def _moved(steps: list[Step]) -> bool:
    """Whether a step addresses a record an earlier step found (its key is a reference) in a
    scope other than the one that step looked in: "the dag run of the event in dag A" when
    the event was listed in dag B. The data flow is broken (the key only matches by chance
    in the other scope) and no request can state it truthfully."""
    for step in steps:
        if step.tool.op in ("list", "search", "create"):
            continue
        params = step.tool.params
        found = {
            src.step
            for n, src in step.sources.items()
            if src.kind == "ref" and params[n].role == KEY
        }
        for name, src in step.sources.items():
            if src.kind == "ref" or params[name].role != SCOPE:
                continue
            for j in found:
                there = steps[j].sources.get(name)
                if there is not None and there.kind != "ref" and str(there.value) != str(src.value):
                    return True
    return False


def _rewrites(steps: list[Step]) -> bool:
    """Whether two updates write one field of one record, or a record is updated and then
    deleted (the first write is undone: a request that says both reads as unrelated asks)."""
    seen: set[tuple[str, str, str]] = set()
    updated: set[str] = set()
    for s in steps:
        if s.tool.op not in ("update", "delete"):
            continue
        key = [str(src.value) for n, src in s.sources.items() if s.tool.params[n].role == KEY]
        if s.tool.op == "delete":
            if f"{s.tool.collection}:{key}" in updated:
                return True  # changed, then deleted: the change was for nothing
            continue
        updated.add(f"{s.tool.collection}:{key}")
        keys = sorted(
            (n, str(src.value))
            for n, src in s.sources.items()
            if s.tool.params[n].role in (KEY, SCOPE)
        )
        record = f"{s.tool.collection}:{keys}"
        for n in s.sources:
            if s.tool.params[n].role == BODY:
                mark = (record, n, "")
                if mark in seen:
                    return True
                seen.add(mark)
    return False


def _answerable(v: Any) -> bool:
    if isinstance(v, bool) or v is None:
        return False
    if isinstance(v, str):
        return 3 <= len(v) <= 60 and "\n" not in v and not v.startswith("http")
    return isinstance(v, int | float)


def _answer_type(facts: list[Fact]) -> str:
    if not facts:
        return "none"
    kinds = {"number" if isinstance(f.value, int | float) else "text" for f in facts}
    return kinds.pop() if len(kinds) == 1 else "mixed"


def _value(f: Fact, outputs: list[Any]) -> Any:
    if f.step >= len(outputs):
        return MISSING
    found = get_path(outputs[f.step], f.path)
    if f.kind == "count":
        return len(found) if isinstance(found, list) else MISSING
    return found


def _drop_steps(
    steps: list[Step], keep: list[int], facts: list[Fact], same: list[int]
) -> list[Step]:
    """``steps[keep]``, references renumbered: one to a dropped repeat of a kept read
    (``same``: :func:`repeats`) goes to that read, and one to another dropped step becomes the
    value it resolved to (the request states it: see :func:`needed`). ``facts`` are
    renumbered in place (every fact's step is kept)."""
    new = {old: n for n, old in enumerate(keep)}
    out = []
    for old in keep:
        s = steps[old]
        sources, args = dict(s.sources), dict(s.args)
        for k, v in s.sources.items():
            if v.kind != "ref":
                continue
            step = v.step if v.step in new else same[v.step]
            if step in new:
                sources[k] = Source("ref", new[step], v.path, v.collection, v.field, v.value)
                args[k] = f"${new[step]}.{v.path}"
            else:
                sources[k] = Source("anchor", collection=v.collection, field=v.field, value=v.value)
                args[k] = v.value
        out.append(Step(s.tool, args, sources, s.output, s.edge, s.target, s.record_path, s.items))
    for f in facts:
        f.step = new[f.step]
    return out


def _name_stated(steps: list[Step], instruction: str) -> list[Step]:
    """``steps`` with every argument the request states outright (a key it quotes) taken
    as given rather than from the earlier call that found it: the agent needs no lookup
    for a value it was told, so the gold chain holds none (``steps`` itself when nothing
    changes)."""
    out, changed = [], False
    for st in steps:
        sources, args = dict(st.sources), dict(st.args)
        for n, src in st.sources.items():
            if src.kind == "ref" and _states(instruction, src.value):
                v = src.value
                sources[n] = Source("anchor", collection=src.collection, field=src.field, value=v)
                args[n] = v
                changed = True
        out.append(
            Step(st.tool, args, sources, st.output, st.edge, st.target, st.record_path, st.items)
            if sources != st.sources
            else st
        )
    return out if changed else steps


def _states(instruction: str, value: Any) -> bool:
    """Whether the request gives ``value`` outright: quoted, or a number of 2+ digits."""
    if isinstance(value, str):
        return bool(value) and f'"{value}"' in instruction
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10:
        return re.search(rf"(?<![\w.]){value}(?!\w|\.\d)", instruction) is not None
    return False


def _prune(steps: list[Step], facts: list[Fact]) -> tuple[list[Step], list[Fact]]:
    """Drop reads that feed nothing and report nothing; renumber the references."""
    while True:
        used = {s.step for st in steps for s in st.sources.values() if s.kind == "ref"}
        with_fact = {f.step for f in facts}
        drop = [
            i
            for i, s in enumerate(steps)
            if not s.tool.writes and i not in used and i not in with_fact
        ]
        if not drop:
            return steps, facts
        keep = [i for i in range(len(steps)) if i not in drop]
        new = {old: n for n, old in enumerate(keep)}
        out = []
        for old in keep:
            s = steps[old]
            sources = {
                k: (
                    Source(v.kind, new[v.step], v.path, v.collection, v.field, v.value)
                    if v.kind == "ref"
                    else v
                )
                for k, v in s.sources.items()
            }
            args = {
                k: (
                    f"${sources[k].step}.{sources[k].path}"
                    if k in sources and sources[k].kind == "ref"
                    else v
                )
                for k, v in s.args.items()
            }
            out.append(
                Step(s.tool, args, sources, s.output, s.edge, s.target, s.record_path, s.items)
            )
        facts = [Fact(new[f.step], f.kind, f.field, f.path, f.value) for f in facts]
        steps = out

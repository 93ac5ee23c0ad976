"""Task synthesis for one environment and for a whole catalog: ``agentworld synth tasks``.

Per environment: build the model and tool graph, then draw candidates in rounds — graph walks
and program instances, a share of them long-horizon — judge each round (:mod:`.gate.accept`), drop
duplicates, and stop once enough are kept. Kept tasks are split into train and test by
*family* (a graph walk's start tool and anchor, a program's template and target), so no test
task shares its request, its gold chain or its near-twin with a training task.

Everything random is drawn from generators seeded by ``(seed, env id, purpose, attempt)``:
the same seed gives byte-identical ``tasks.json`` whatever the number of worker processes.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.adversarial import Gate
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.audit import id_shaped, quoted, unreadable
from agentworld_gym.synthesis.tasks.candidate import (
    LONG_CALLS,
    SYNTHESIZER,
    Candidate,
    acceptance_cases,
    given_in,
    horizon,
)
from agentworld_gym.synthesis.tasks.gate.accept import judge, verdict
from agentworld_gym.synthesis.tasks.goal.program import ProgramTaskBuilder
from agentworld_gym.synthesis.tasks.goal.walk import GraphTaskBuilder
from agentworld_gym.synthesis.tasks.model import KEY, SCOPE, build_model
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.graph import ToolGraph
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs
from agentworld_gym.synthesis.tasks.sample.walk import WalkConfig, Walker
from agentworld_gym.synthesis.tasks.values import rng_for
from agentworld_gym.synthesis.tasks.verifier.seal import seal
from agentworld_gym.synthesis.words import noun_reads, prose_words

logger = logging.getLogger(__name__)

KINDS = ("graph", "program", "graph_long", "program_long")


@dataclass
class TaskSynthConfig:
    """Settings of task synthesis (the ``agentworld synth tasks`` flags)."""

    n: int = 20
    """Tasks wanted per environment (fewer where the environment does not afford them)."""
    seed: int = 0
    program_share: float = 0.5
    """Fraction of program (script-verified) tasks; the rest are graph (rubric) tasks."""
    long_share: float = 0.35
    """Fraction of long-horizon tasks (see :func:`.candidate.long_horizon`: >= 8 chained
    calls a solver needs over >= 3 tools, flagged ``difficulty.long_horizon``)."""
    long_extra: int = 0
    """Long tasks of each long kind an environment that made one may add past its quota,
    in place of its latest ordinary ones (see ``EnvSynthesizer._encore``). The catalog
    command sets 10 (``--long-extra``); 0 here keeps targeted synthesis (the evolution loop's)
    to what it asked for."""
    test_share: float = 0.2
    """Fraction of task families in the test split."""
    walk_length: tuple[int, int] = (2, 6)
    """Tool calls of an ordinary graph walk (before unneeded reads are pruned)."""
    long_length: tuple[int, int] = (10, 16)
    """Tool calls of a long-horizon walk (before unneeded reads are pruned)."""
    long_min_calls: int = LONG_CALLS
    """Fewest gold calls of a long-horizon candidate (the rule itself also wants >= 3
    tools and every call depending on an earlier one)."""
    weak_scale: float = 1.0
    independent_scale: float = 0.5
    max_writes: int = 2
    """Write steps per ordinary graph walk."""
    targets: tuple[int, int] = (2, 8)
    """Records a program writes or reads through (per ordinary program task)."""
    distractors: int = 0
    """Near-miss records a program's filter must tell apart (two conditions when > 0)."""
    attempts: int = 8
    """Rounds of candidates (each round tries what is still missing, programs twice over)."""
    hide_ids: bool = False
    """Requests never state a record's key: graph walks find every record through earlier
    calls, and programs over keys the user names are not used."""
    focus_tools: tuple[str, ...] = ()
    patterns: tuple[str, ...] = ()
    """Program templates to restrict to (empty: all)."""
    min_tasks: int = 10
    """Keep drawing (up to ``EXTRA_ROUNDS`` more rounds) while fewer tasks than this are kept."""
    prune_existing: bool = True
    """Judge the machine-made tasks of other synthesizers (environment synthesis's seed
    tasks) by the same acceptance rules and drop those that fail: a one-call lookup that
    the first call alone answers is trivial. Hand-written tasks are never touched."""


@dataclass
class EnvReport:
    """What synthesis did for one environment."""

    env_id: str
    wanted: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    tried: dict[str, int] = field(default_factory=dict)
    """Draws per kind (including those no template or walk could instantiate)."""
    judged: Counter[str] = field(default_factory=Counter)
    """Candidates built and judged per kind (kept or rejected by acceptance)."""
    rejected: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    graph_edges: dict[str, int] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)
    """Other synthesizers' tasks dropped (see ``TaskSynthConfig.prune_existing``), by reason."""

    @property
    def n_kept(self) -> int:
        return sum(self.kept.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "env": self.env_id,
            "wanted": self.wanted,
            "kept": self.kept,
            "tried": self.tried,
            "judged": dict(self.judged),
            "rejected": dict(self.rejected.most_common()),
            "seconds": round(self.seconds, 3),
            "graph_edges": self.graph_edges,
            "dropped_existing": dict(self.dropped.most_common()),
        }


def _plan(config: TaskSynthConfig) -> dict[str, int]:
    n_long = round(config.n * config.long_share)
    n_prog = round(config.n * config.program_share)
    # half the long draws are programs: a long walk must serve one errand, which few can
    long_prog = n_long // 2 if n_prog else 0
    long_graph = n_long - long_prog
    return {
        "graph": max(0, config.n - n_prog - long_graph),
        "program": max(0, n_prog - long_prog),
        "graph_long": long_graph,
        "program_long": long_prog,
    }


class EnvSynthesizer:
    """Synthesizes the tasks of one environment."""

    def __init__(self, spec: EnvSpec, config: TaskSynthConfig, llm: Any = None) -> None:
        self.spec = spec
        self.config = config
        self.model = build_model(spec)
        self.graph = ToolGraph(self.model)
        self.runner = Runner(spec)
        if llm is not None:
            self.graph.label_with_llm(llm)
        self.walker = Walker(self.model, self.graph, self.runner)
        self.graphs = GraphTaskBuilder(self.model, self.runner, config.seed, llm)
        self.programs = ProgramTaskBuilder(self.model, self.runner, config.seed, llm)
        self.late = False
        """Past ``REALLOCATE_AFTER`` rounds: quotas move, plain programs are taken as drawn."""
        self._gate: Gate | None = None
        self._probe()

    def gate(self, c: Candidate) -> str | None:
        """Why the adversarial gate refuses ``c`` (``None``: it passes)."""
        if self._gate is None:
            scratch = copy.copy(self.spec)  # shares the compiled tools and the loaded data
            scratch.tasks = [c.task]
            self._gate = Gate(scratch, self.config.seed)
        elif c.task not in self._gate.spec.tasks:
            self._gate.spec.tasks.append(c.task)
        problems = self._gate.attack(c.task).problems
        if not problems:
            return None
        return "gate: " + re.sub(r"\s*\(?\d+\.\d+\)?", "", problems[0].split(":")[0])

    def _horizon(self, c: Candidate, kind: str) -> str | None:
        """Stamp the turn budget and the long-horizon flag (one rule for every task); a
        candidate made to be long that the rule does not call long is refused."""
        calls = (c.task.gold or {}).get("calls") or []
        d = c.task.difficulty
        d.update(
            horizon(
                calls,
                self.runner,
                c.task.id,
                c.task.instruction,
                self._keys,
                self.spec.runtime.max_turns,
                self._writes if c.task.kind == "graph" else None,
            )
        )
        if kind.endswith("_long") and not d["long_horizon"]:
            return "not long-horizon (unchained or too few tools)"
        return None

    @functools.cached_property
    def _prose(self) -> frozenset[str]:
        """The environment's own words (its product and brand names) a request may use."""
        return prose_words(self.spec)

    @functools.cached_property
    def _bad_nouns(self) -> re.Pattern[str] | None:
        """The collection nouns that name no kind of thing ("full", "all", "dels")."""
        bad = sorted(
            {
                c.noun
                for c in self.model.collections.values()
                if not noun_reads(c.noun, prose_words(self.spec, names=False))
            }
        )
        if not bad:
            return None
        return re.compile(
            r"\b(?:the|a|an|\d+|these|those|their|its|each|every|all|any|some|other|only|many|of"
            r"|new|add|create|remove|delete|copy|update) (?:"
            + "|".join(re.escape(n) + "(?:e?s)?" for n in bad)
            + r")\b",
            re.I,
        )

    @functools.cached_property
    def _world_text(self) -> str:
        """The seed world as text: an id a request quotes must be somewhere in it."""
        return self.runner.base.snapshot_json().decode()

    def _made_up_id(self, c: Candidate) -> str | None:
        """A request that quotes an id-shaped value the world does not hold: an id the user
        would have to invent for a new record ("a calendar with id "id_42970f2b56""), which
        no user writes; people name what they create."""
        for value in quoted(c.task.instruction):
            if id_shaped(value) and not value.isdigit() and value not in self._world_text:
                return f"a made-up id {value!r}"
        return None

    def _misnamed(self, c: Candidate) -> str | None:
        found = self._bad_nouns.search(c.task.instruction) if self._bad_nouns else None
        return f"a collection name as a noun {found.group(0)!r}" if found else None

    def _unsaid(self, c: Candidate) -> str | None:
        """A walk whose gold passes a value the request never gives and no earlier call
        returned: "the location of the workspace of the job "catalog-west"" over a listing
        that needs the job's resource group, workspace and experiment, or a domain other than
        the one the request names. An agent could only guess it. Programs read their records
        from listings the request names, so this holds for walks alone."""
        if c.task.kind != "graph":
            return None
        for call in (c.task.gold or {}).get("calls", []):
            for arg, value in call["arguments"].items():
                if isinstance(value, bool) or (isinstance(value, str) and value.startswith("$")):
                    continue  # a flag, or a value an earlier call returned
                key = (call["name"], arg) in self._keys
                checked = isinstance(value, str) or (key and isinstance(value, int))
                if checked and not given_in(str(value), c.task.instruction):
                    return "a value the request does not give"
        return None

    @functools.cached_property
    def _writes(self) -> frozenset[str]:
        return frozenset(t.name for t in self.model.tools.values() if t.writes)

    @functools.cached_property
    def _keys(self) -> set[tuple[str, str]]:
        """(tool, argument) pairs whose argument addresses a record (a key or parent)."""
        return {
            (t.name, p.name)
            for t in self.model.tools.values()
            for p in t.params.values()
            if p.role in (KEY, SCOPE)
        }

    def _probe(self) -> None:
        """Run each code tool once so the graph learns what it returns."""
        if all(t.declarative for t in self.model.tools.values()):
            return
        rng = rng_for(self.config.seed, self.spec.id, "probe")
        for name, tool in self.model.tools.items():
            if not tool.declarative and not tool.writes:
                self.walker.walk(rng, f"{self.spec.id}-probe", 1, focus=(name,))

    def audit(self, tasks: list[TaskSpec]) -> dict[str, str]:
        """Why each machine-made task of another synthesizer fails acceptance or the gate (by
        id; tasks that pass, sealed in place, and hand-written ones, are absent)."""
        out: dict[str, str] = {}
        cands = []
        for t in tasks:
            made_by = (t.provenance or {}).get("synthesizer")
            calls = (t.gold or {}).get("calls") or []
            if not made_by or made_by == SYNTHESIZER or not calls:
                continue
            gold = self.runner.run(calls, t.id)
            probe = self.runner.run(calls, t.id + "-probe", probe=True)
            if not (gold.ok and probe.ok):
                out[t.id] = "gold replay failed"
                continue
            answer = t.reference_answer or str((t.gold or {}).get("answer", ""))
            cases = acceptance_cases(self.runner, calls, t.id, gold.db, probe.db, answer)
            cand = Candidate(t, "", cases)
            why = seal(cand, self.runner.base)
            if why is not None:
                out[t.id] = why
                continue
            cands.append(cand)
        judge(cands, self.runner.base)
        for c in cands:
            why = verdict(c) or self.gate(c)
            if why is not None:
                out[c.task.id] = why
        return out

    def candidate(self, kind: str, k: int) -> Candidate | str:
        cfg = self.config
        rng = rng_for(cfg.seed, self.spec.id, kind, k)
        task_id = f"{self.spec.id}-cand-{kind}-{k}"
        max_calls = max(1, self.spec.runtime.max_turns - 1)
        if kind.startswith("graph"):
            long = kind == "graph_long"
            lo, hi = cfg.long_length if long else cfg.walk_length
            hi = min(hi, max_calls)
            self.walker.config = WalkConfig(
                min_length=min(lo, hi),
                max_length=hi,
                weak_scale=cfg.weak_scale,
                independent_scale=cfg.independent_scale,
                max_writes=max(cfg.max_writes, 6) if long else cfg.max_writes,
                attempts=12 if long else 8,
                anchors=not cfg.hide_ids,
                # once chained walks have had their rounds, an ordinary walk may ask two
                # separate things (an environment of lists alone affords no chain)
                chained=long or not self.late,
            )
            walk = self.walker.walk(rng, task_id, rng.randint(min(lo, hi), hi), cfg.focus_tools)
            min_calls = min(cfg.long_min_calls, max_calls) if long else 2
            return self.graphs.build(walk, rng, task_id, min_calls=min_calls)
        long = kind == "program_long"
        knobs = Knobs(
            lo=cfg.targets[0] if not long else 5,
            hi=cfg.targets[1] if not long else max_calls,
            max_calls=max_calls,
            long=long,
            min_calls=min(cfg.long_min_calls, max_calls) if long else 1,
            distractors=cfg.distractors,
            given=not cfg.hide_ids,
            rich=not self.late,
            strict=self.graphs.strict,
        )
        return self.programs.build(rng, task_id, knobs, tuple(sorted(cfg.patterns)))

    def run(self, avoid: set[tuple[str, str]] = frozenset()) -> tuple[list[Candidate], EnvReport]:
        """Kept candidates (unsplit) and the report."""
        start = time.perf_counter()
        cfg = self.config
        plan = _plan(cfg)
        report = EnvReport(self.spec.id, wanted=dict(plan), graph_edges=self.graph.summary())
        kept: dict[str, list[Candidate]] = {k: [] for k in KINDS}
        seen = ({a for a, _ in avoid}, {b for _, b in avoid})
        tried: Counter[str] = Counter()
        idle: Counter[str] = Counter()
        floor = min(cfg.min_tasks, cfg.n)
        for round_ in range(cfg.attempts + EXTRA_ROUNDS):
            if round_ >= cfg.attempts and sum(map(len, kept.values())) >= floor:
                break
            self.late = round_ >= REALLOCATE_AFTER
            # past the rounds, an environment still under the floor keeps it with requests
            # the readability rules would refuse (the audit counts them)
            self.graphs.strict = round_ < cfg.attempts
            # separate asks glued into one request read worst: allowed two rounds later
            self.graphs.one_errand = round_ < cfg.attempts + 2
            if self.late:
                _reallocate(plan, kept, idle, last=round_ >= cfg.attempts - 1)
            short = {k for k in KINDS if len(kept[k]) < plan[k]}
            gained = self._round(plan, kept, seen, tried, report)
            for k in KINDS:
                idle[k] = idle[k] + 1 if k in short and not gained[k] else 0
            if all(len(kept[k]) >= plan[k] for k in KINDS):
                break
        self._encore(plan, kept, seen, tried, report)
        report.kept = {k: len(v) for k, v in kept.items()}
        if self.programs.writer is not None:  # LLM drafts that fell back to a template
            report.rejected.update(self.programs.writer.rejected)
        report.wanted = plan
        report.tried = dict(tried)
        report.seconds = time.perf_counter() - start
        return [c for k in KINDS for c in kept[k]], report

    def _encore(
        self,
        plan: dict[str, int],
        kept: dict[str, list[Candidate]],
        seen: tuple[set[str], set[str]],
        tried: Counter[str],
        report: EnvReport,
    ) -> None:
        """Up to ``config.long_extra`` more long tasks of each long kind the environment has
        shown it affords, in place of its latest ordinary ones (the total stays, or grows to
        ``config.n``). Few environments can make any long task (their APIs must list, create
        and delete one collection, or chain reads through several); those that can make more
        than the quota, and the catalog is mostly short. No family gets more than
        ``ENCORE_FAMILY`` tasks this way (more would be one task with other values), and at
        most ``ENCORE_THIN`` of them use fewer than ``ENCORE_TOOLS`` tools: the extra tasks
        exercise the environment rather than repeat three-tool loops."""
        longs = [k for k in KINDS if k.endswith("_long") and kept[k]]
        if not longs or not self.config.long_extra:
            return
        thin = _thin(kept) + ENCORE_THIN
        total = sum(map(len, kept.values()))
        self.late, self.graphs.strict, self.graphs.one_errand = True, True, True
        for k in KINDS:
            plan[k] = len(kept[k]) + (self.config.long_extra if k in longs else 0)
        for _ in range(ENCORE_ROUNDS):
            gained = self._round(
                plan,
                kept,
                seen,
                tried,
                report,
                family_cap=ENCORE_FAMILY,
                draws=ENCORE_DRAWS,
                thin=thin,
            )
            if not any(gained.values()) or all(len(kept[k]) >= plan[k] for k in longs):
                break
        excess = sum(map(len, kept.values())) - max(total, self.config.n)
        for _ in range(max(0, excess)):
            kind = max(("program", "graph"), key=lambda k: len(kept[k]))
            if not kept[kind]:
                break
            kept[kind].pop()  # the latest: kept in the laxest round
            report.rejected["replaced by a long task"] += 1
        for k in KINDS:
            plan[k] = len(kept[k])

    def _round(
        self,
        plan: dict[str, int],
        kept: dict[str, list[Candidate]],
        seen: tuple[set[str], set[str]],
        tried: Counter[str],
        report: EnvReport,
        family_cap: int = 0,
        draws: int = 1,
        thin: int | None = None,
    ) -> Counter[str]:
        """One round: candidates for what is still missing, judged together; kept per kind
        (with ``family_cap``, none of a family that has that many tasks already; ``draws``
        multiplies the spare draws of programs and long walks; ``thin``: how many long tasks
        with fewer than ``ENCORE_TOOLS`` tools the environment may hold)."""
        families = Counter(c.family for v in kept.values() for c in v)
        batch: list[tuple[str, Candidate]] = []
        for kind in KINDS:
            need = plan[kind] - len(kept[kind])
            # programs and long walks fail to instantiate more often: twice the draws
            extra = draws * need if kind.startswith("program") or kind.endswith("_long") else 1
            for _ in range(need + extra if need > 0 else 0):
                made = self.candidate(kind, tried[kind])
                tried[kind] += 1
                if isinstance(made, str):
                    report.rejected[made] += 1
                elif (why := seal(made, self.runner.base)) is not None:
                    report.rejected[why] += 1
                else:
                    batch.append((kind, made))
        gained: Counter[str] = Counter()
        # a long task should exercise the environment, not repeat one call: of the long
        # candidates, those using more distinct tools are judged (and so kept) first
        batch.sort(key=lambda kc: -_tools(kc[1]) if kc[0].endswith("_long") else 0)
        report.judged.update(kind for kind, _ in batch)
        if batch:
            judge([c for _, c in batch], self.runner.base)
        for kind, c in batch:
            why = verdict(c)
            text, calls = c.signature
            if why is None and (text in seen[0] or calls in seen[1]):
                why = "duplicate"
            if why is None and len(kept[kind]) >= plan[kind]:
                why = "surplus"
            if why is None and family_cap and families[c.family] >= family_cap:
                why = "family repeated"
            if why is None and thin is not None and kind.endswith("_long"):
                if _tools(c) < ENCORE_TOOLS and _thin(kept) >= thin:
                    why = f"encore: fewer than {ENCORE_TOOLS} tools"
            if why is None:
                why = self._horizon(c, kind)
            if why is None and self.graphs.strict:
                bad = (
                    unreadable(c.task.instruction, self._prose)
                    or self._misnamed(c)
                    or self._made_up_id(c)
                )
                if bad:
                    why = "unreadable: " + bad.split(" '")[0]
            if why is None:  # even under the floor: an agent could only guess the value
                why = self._unsaid(c)
            if why is None:
                why = self.gate(c)
            if why is not None:
                report.rejected[why] += 1
                continue
            seen[0].add(text)
            seen[1].add(calls)
            kept[kind].append(c)
            families[c.family] += 1
            gained[kind] += 1
        return gained


REALLOCATE_AFTER = 5
EXTRA_ROUNDS = 10
"""Rounds beyond ``attempts`` while an environment has fewer than ``min_tasks`` (walks that
ask separate things only from the third of them)."""
ENCORE_ROUNDS = 8
ENCORE_DRAWS = 4
"""Draws per missing long task in an encore round (long programs seldom instantiate)."""
ENCORE_TOOLS = 4
ENCORE_THIN = 3
"""Long tasks with fewer than ``ENCORE_TOOLS`` distinct tools the encore may add."""
ENCORE_FAMILY = 5
"""Tasks of one family (a template over one collection and scope, a walk from one start)
past which the encore adds none."""
STALLED = 2
"""Rounds in a row a kind gained nothing while short before its quota moves elsewhere."""
FALLBACK = (("program_long", "program"), ("graph_long", "graph"))
"""Where a long kind's unmet quota goes once its rounds are spent: to the ordinary kind
(long walks' first to long programs, see :func:`_reallocate`)."""


def _reallocate(
    plan: dict[str, int],
    kept: dict[str, list[Candidate]],
    idle: Counter[str],
    last: bool = False,
) -> None:
    """Move unmet quotas: long walks' to long programs where those fill their quota (few
    walks serve one long errand; many environments afford long programs), long programs'
    once they gain nothing (or in the ``last`` round) to ordinary ones, long walks' else to
    ordinary walks; then from a stalled kind (programs or graph walks) to the other while
    that one still makes progress (an environment whose tools only write affords few walks;
    one without readable or creatable records few programs)."""
    for kind, fallback in FALLBACK:
        deficit = plan[kind] - len(kept[kind])
        if kind == "program_long" and idle[kind] == 0 and not last:
            continue  # still gaining: the long programs keep their share another round
        if kind == "graph_long" and len(kept["program_long"]) >= plan["program_long"] > 0:
            fallback = "program_long"  # long programs are being made: they take the share
        if deficit > 0:
            plan[kind] -= deficit
            plan[fallback] += deficit
    for kind, other in (("program", "graph"), ("graph", "program")):
        deficit = plan[kind] - len(kept[kind])
        if deficit > 0 and idle[kind] >= STALLED and idle[other] < STALLED:
            plan[kind] -= deficit
            plan[other] += deficit


def split_and_name(
    env_id: str,
    cands: list[Candidate],
    test_share: float,
    seed: int,
    taken: set[str] | frozenset[str] = frozenset(),
) -> list[TaskSpec]:
    """Assign splits by family (whole families go to one split) and final task ids (none of
    them in ``taken``, the ids of the environment's other tasks)."""
    families = sorted(
        {c.family for c in cands},
        key=lambda f: hashlib.sha256(f"{seed}:{env_id}:{f}".encode()).digest(),
    )
    n_test = round(test_share * len(families)) if len(families) > 1 else 0
    if test_share > 0 and len(families) >= 3:
        n_test = max(1, n_test)
    test = set(families[:n_test])
    out = []
    counters = Counter()
    for c in cands:
        letter = "g" if c.task.kind == "graph" else "p"
        counters[letter] += 1
        while f"{env_id}-{letter}{counters[letter]:03d}" in taken:
            counters[letter] += 1
        c.task.id = f"{env_id}-{letter}{counters[letter]:03d}"
        c.task.split = "test" if c.family in test else "train"
        out.append(c.task)
    return out


def synthesize_tasks(
    spec: EnvSpec,
    n: int = 20,
    seed: int = 0,
    *,
    walk_length: int | None = None,
    writes: int | None = None,
    distractors: int = 0,
    program_share: float = 0.5,
    focus_tools: list[str] | tuple[str, ...] = (),
    patterns: list[str] | tuple[str, ...] = (),
    llm: Any = None,
    config: TaskSynthConfig | None = None,
) -> list[TaskSpec]:
    """Synthesize up to ``n`` verified tasks for ``spec`` (the evolution loop's entry point).

    Knobs override the config: ``walk_length`` (calls per graph walk), ``writes`` (write
    steps per walk), ``distractors`` (near-miss records per program filter),
    ``program_share``, ``focus_tools`` (graph walks favour them) and ``patterns`` (program
    templates to use). Returned tasks keep the split assigned here and avoid the requests and
    gold chains of the environment's existing tasks.
    """
    cfg = config or TaskSynthConfig()
    cfg = TaskSynthConfig(
        **{
            **cfg.__dict__,
            "n": n,
            "seed": seed,
            "program_share": program_share,
            "distractors": distractors,
            "focus_tools": tuple(focus_tools),
            "patterns": templates_for(patterns),
        }
    )
    if walk_length:
        cfg.walk_length = (max(1, walk_length - 1), walk_length + 1)
    if writes is not None:
        cfg.max_writes = writes
    existing = existing_signatures(spec.tasks)
    cands, _ = EnvSynthesizer(spec, cfg, llm).run(existing)
    return split_and_name(spec.id, cands, cfg.test_share, seed, others(spec.tasks))


EVOLUTION_PATTERNS = {
    "count": ("aggregate", "children_agg"),
    "aggregate": ("aggregate", "group_max", "children_agg", "batch_read"),
    "update": (
        "bulk_update",
        "branch_update",
        "batch_update",
        "extreme",
        "bulk_delete",
        "lookup_branch",
    ),
    "create": ("create_each", "create_batch", "create_chain"),
}
"""The evolution loop's task patterns -> the program templates that serve them."""


def templates_for(patterns: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Program templates for ``patterns`` (template names or evolution patterns)."""
    names = _template_names()
    out: list[str] = []
    for p in patterns:
        for t in (p,) if p in names else EVOLUTION_PATTERNS.get(p, ()):
            if t not in out:
                out.append(t)
    return tuple(out)


def _template_names() -> set[str]:
    from agentworld_gym.synthesis.tasks.goal.program import TEMPLATES

    return set(TEMPLATES)


def others(tasks: list[TaskSpec]) -> set[str]:
    """Ids of the tasks not made by this synthesizer (kept when it rewrites ``tasks.json``)."""
    return {t.id for t in tasks if (t.provenance or {}).get("synthesizer") != SYNTHESIZER}


def existing_signatures(tasks: list[TaskSpec]) -> set[tuple[str, str]]:
    """Signatures of tasks not made by this synthesizer (new tasks must not repeat them)."""
    return {
        Candidate(t, "").signature
        for t in tasks
        if (t.provenance or {}).get("synthesizer") != SYNTHESIZER
    }


def _thin(kept: dict[str, list[Candidate]]) -> int:
    """Long tasks kept with fewer than ``ENCORE_TOOLS`` distinct tools."""
    return sum(_tools(c) < ENCORE_TOOLS for k in KINDS if k.endswith("_long") for c in kept[k])


def _tools(c: Candidate) -> int:
    """How many distinct tools ``c``'s gold solution calls."""
    return int(c.task.difficulty.get("distinct_tools", 0))

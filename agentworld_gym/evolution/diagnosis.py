"""Diagnosis: classify failures, aggregate them, rank weak environments, write guidelines.

Weak-environment score (per environment e, over this round's evaluation episodes)::

    F_e      = sum over e's episodes of (1 - reward)      soft failure mass: partial credit
                                                          counts as a partial failure
    p0       = sum_e F_e / sum_e n_e                      global failure rate of the round
    rate_e   = (F_e + alpha * p0) / (n_e + alpha)         failure rate shrunk towards p0
    evid_e   = n_e / (n_e + kappa)                        evidence: few episodes, less trust
    score_e  = rate_e * evid_e

``alpha`` (``prior_strength``) and ``kappa`` (``evidence_scale``) default to 2: one failed
episode out of one scores below three out of four. Environments without any failure mass
are never weak; the ``weak_env_count`` highest scores are (ties broken by id).

Guidelines come from rules over the environment's failure classes (see
:func:`rule_guidelines`); an LLM diagnosis agent may refine them (``llm_diagnosis.py``).
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.evolution.episodes import EpisodeRecord
from agentworld_gym.evolution.failures import FailureClass, FailureDiagnosis, classify_failure
from agentworld_gym.evolution.protocols import Guidelines
from agentworld_gym.spec import EnvSpec, TaskSpec

SCORE_FORMULA = (
    "score_e = ((F_e + alpha*p0) / (n_e + alpha)) * (n_e / (n_e + kappa)), "
    "F_e = sum(1 - reward) over e's episodes, p0 = sum F / sum n"
)


@dataclass
class EnvStats:
    """One environment's evaluation, aggregated."""

    env_id: str
    l1: str
    episodes: int = 0
    successes: int = 0
    failure_mass: float = 0.0
    mean_reward: float = 0.0
    classes: dict[str, int] = field(default_factory=dict)
    """Primary failure class -> episodes."""
    labels: dict[str, int] = field(default_factory=dict)
    """Every failure label -> episodes showing it."""
    patterns: dict[str, list[int]] = field(default_factory=dict)
    """Task pattern -> [episodes, failures]."""
    failed_chain_lengths: list[int] = field(default_factory=list)
    smoothed_failure_rate: float = 0.0
    evidence: float = 0.0
    score: float = 0.0

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0


@dataclass
class ToolStats:
    """One tool of one environment: how often called, how it failed, how often implicated."""

    env_id: str
    tool: str
    calls: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    implicated: int = 0
    """Failed episodes whose diagnosis names this tool."""

    @property
    def weakness(self) -> float:
        return (sum(self.errors.values()) + self.implicated) / max(1, self.calls + self.implicated)


@dataclass
class CategoryStats:
    l1: str
    episodes: int = 0
    successes: int = 0
    mean_reward: float = 0.0
    classes: dict[str, int] = field(default_factory=dict)

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0


@dataclass
class Diagnosis:
    """Everything one round's evaluation says about the policy."""

    round: int
    episodes: int
    success_rate: float
    global_failure_rate: float
    envs: list[EnvStats]
    """Ranked by score, weakest first."""
    tools: list[ToolStats]
    categories: list[CategoryStats]
    failures: list[FailureDiagnosis]
    weak_envs: list[str]
    guidelines: dict[str, Guidelines]
    """Gym id of each weak environment -> its task-generation guidelines."""
    formula: str = SCORE_FORMULA
    parameters: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if k not in ("failures", "guidelines")}
        for row, stats in zip(data["envs"], self.envs, strict=True):
            row["success_rate"] = stats.success_rate
        for row, stats in zip(data["categories"], self.categories, strict=True):
            row["success_rate"] = stats.success_rate
        data["failures"] = [f.to_dict() for f in self.failures]
        data["guidelines"] = {k: g.to_dict() for k, g in self.guidelines.items()}
        return data

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_bytes(orjson.dumps(self.to_dict(), option=orjson.OPT_INDENT_2))
        return path


def write_tools_of(spec: EnvSpec) -> frozenset[str]:
    return frozenset(t.name for t in spec.tools if t.kind != "read")


def _chain_length(task: TaskSpec | None) -> int:
    if task is None or not task.gold:
        return 0
    return int(task.difficulty.get("chain_length") or len(task.gold.get("calls", [])))


def diagnose(
    records: list[EpisodeRecord],
    specs: dict[str, EnvSpec],
    *,
    round_index: int = 0,
    weak_env_count: int = 5,
    prior_strength: float = 2.0,
    evidence_scale: float = 2.0,
) -> Diagnosis:
    """Classify every failure, aggregate by environment, tool and category, rank, advise.

    Args:
        records: the round's evaluation episodes.
        specs: gym id -> the environment spec holding the evaluated tasks.
    """
    tasks = {(gid, t.id): t for gid, spec in specs.items() for t in spec.tasks}
    envs: dict[str, EnvStats] = {}
    tools: dict[tuple[str, str], ToolStats] = {}
    cats: dict[str, CategoryStats] = {}
    failures: list[FailureDiagnosis] = []
    rewards: dict[str, list[float]] = defaultdict(list)
    for rec in records:
        spec = specs.get(rec.env_id)
        task = tasks.get((rec.env_id, rec.task_id))
        stats = envs.setdefault(rec.env_id, EnvStats(rec.env_id, rec.l1))
        cat = cats.setdefault(rec.l1, CategoryStats(rec.l1))
        stats.episodes += 1
        cat.episodes += 1
        stats.successes += int(rec.success)
        cat.successes += int(rec.success)
        stats.failure_mass += 1.0 - min(1.0, max(0.0, rec.reward))
        rewards[rec.env_id].append(rec.reward)
        rewards["cat:" + rec.l1].append(rec.reward)
        pattern = str((task.difficulty.get("pattern") if task else None) or "unknown")
        stats.patterns.setdefault(pattern, [0, 0])[0] += 1
        for call in rec.calls:
            name = call.get("name") or "<unparsed>"
            ts = tools.setdefault((rec.env_id, name), ToolStats(rec.env_id, name))
            ts.calls += 1
            if not call.get("ok"):
                code = call.get("error") or "error"
                ts.errors[code] = ts.errors.get(code, 0) + 1
        write = write_tools_of(spec) if spec is not None else frozenset()
        diag = classify_failure(rec, task, write)
        if diag is None:
            continue
        failures.append(diag)
        stats.patterns[pattern][1] += 1
        stats.failed_chain_lengths.append(_chain_length(task))
        stats.classes[diag.primary.value] = stats.classes.get(diag.primary.value, 0) + 1
        cat.classes[diag.primary.value] = cat.classes.get(diag.primary.value, 0) + 1
        for label in diag.labels:
            stats.labels[label.value] = stats.labels.get(label.value, 0) + 1
        for name in diag.tools:
            ts = tools.setdefault((rec.env_id, name), ToolStats(rec.env_id, name))
            ts.implicated += 1
    n_total = sum(s.episodes for s in envs.values())
    p0 = sum(s.failure_mass for s in envs.values()) / n_total if n_total else 0.0
    for stats in envs.values():
        stats.mean_reward = statistics.fmean(rewards[stats.env_id])
        stats.smoothed_failure_rate = (stats.failure_mass + prior_strength * p0) / (
            stats.episodes + prior_strength
        )
        stats.evidence = stats.episodes / (stats.episodes + evidence_scale)
        stats.score = stats.smoothed_failure_rate * stats.evidence
    for cat in cats.values():
        cat.mean_reward = statistics.fmean(rewards["cat:" + cat.l1])
    ranked = sorted(envs.values(), key=lambda s: (-s.score, s.env_id))
    weak = [s.env_id for s in ranked if s.failure_mass > 1e-9][:weak_env_count]
    env_tools = defaultdict(list)
    for ts in tools.values():
        env_tools[ts.env_id].append(ts)
    guidelines = {
        gid: rule_guidelines(
            envs[gid],
            env_tools[gid],
            [f for f in failures if f.env_id == gid],
            specs.get(gid),
        )
        for gid in weak
    }
    return Diagnosis(
        round=round_index,
        episodes=n_total,
        success_rate=sum(s.successes for s in envs.values()) / n_total if n_total else 0.0,
        global_failure_rate=p0,
        envs=ranked,
        tools=sorted(tools.values(), key=lambda t: (t.env_id, -t.weakness, t.tool)),
        categories=sorted(cats.values(), key=lambda c: c.l1),
        failures=failures,
        weak_envs=weak,
        guidelines=guidelines,
        parameters={"alpha": prior_strength, "kappa": evidence_scale},
    )


_CLASS_PATTERNS: dict[str, list[str]] = {
    FailureClass.NO_TOOL_USE: ["lookup"],
    FailureClass.MALFORMED_CALL: ["lookup"],
    FailureClass.UNKNOWN_TOOL: ["lookup"],
    FailureClass.INVALID_ARGUMENTS: ["update", "find"],
    FailureClass.TOOL_ERROR_UNRECOVERED: ["find", "walk"],
    FailureClass.BUDGET_EXHAUSTED: ["walk"],
    FailureClass.MISSING_STEP: ["walk", "update"],
    FailureClass.WRONG_VALUE: ["update", "create"],
    FailureClass.WRONG_ANSWER: ["find", "count", "aggregate"],
}
_CLASS_NOTES: dict[str, str] = {
    FailureClass.NO_TOOL_USE: "answers without looking anything up: tasks whose answer is "
    "only in the database",
    FailureClass.MALFORMED_CALL: "emits tool calls that do not parse: many short tasks to "
    "practise the call format",
    FailureClass.UNKNOWN_TOOL: "calls tools that do not exist: tasks that name the needed "
    "operation without naming the tool",
    FailureClass.INVALID_ARGUMENTS: "breaks argument schemas: tasks needing enum values, "
    "required fields and typed ids of {tools}",
    FailureClass.TOOL_ERROR_UNRECOVERED: "gives up after API errors: tasks that start from a "
    "name, not a key, so a first guess fails and must be corrected",
    FailureClass.BUDGET_EXHAUSTED: "runs out of turns: longer chains that reward planning",
    FailureClass.MISSING_STEP: "skips steps of the chain: longer walks that need every hop",
    FailureClass.WRONG_VALUE: "writes the wrong state: tasks with writes checked field by field",
    FailureClass.WRONG_ANSWER: "reads the wrong record or miscounts: near-duplicate "
    "distractors and counting/aggregation tasks",
}


def rule_guidelines(
    stats: EnvStats,
    tools: list[ToolStats],
    failures: list[FailureDiagnosis],
    spec: EnvSpec | None,
) -> Guidelines:
    """Guidelines for one weak environment from its statistics (deterministic).

    - ``focus_tools``: the three tools with the highest weakness
      ((errors + implicated) / (calls + implicated)).
    - ``patterns``: the patterns of failed tasks, most failed first, then those that train
      the skills behind the dominant failure classes.
    - ``walk_length``: the median gold-chain length of failed tasks, plus one when the
      environment is partly solved (a curriculum: push where the agent already gets some
      right, consolidate where it gets nothing), within [2, 6].
    - ``writes``: 1 when writes went wrong or were skipped, 2 when that is the majority.
    - ``distractors``: 1 per quarter of failures that are wrong answers (at most 3).

    Shares are of *primary* classes (root causes): an agent that never calls a tool also
    gets every answer wrong, but distractors would not help it.
    - ``program_share``: 0.2, plus 0.2 when wrong answers dominate, plus 0.1 for misses.
    """
    n_fail = max(1, sum(stats.classes.values()))
    share = {k: v / n_fail for k, v in stats.classes.items()}
    ranked_tools = sorted(
        (t for t in tools if t.tool != "<unparsed>" and t.tool != "submit"),
        key=lambda t: (-t.weakness, -t.implicated, t.tool),
    )
    focus = [t.tool for t in ranked_tools if t.weakness > 0][:3]
    patterns = [
        p for p, (_, failed) in sorted(stats.patterns.items(), key=lambda kv: -kv[1][1]) if failed
    ]
    patterns = [p for p in patterns if p != "unknown"]
    for cls, _ in sorted(share.items(), key=lambda kv: -kv[1]):
        for p in _CLASS_PATTERNS.get(cls, []):
            if p not in patterns:
                patterns.append(p)
    notes = [
        f"{share[c]:.0%} {c}: " + _CLASS_NOTES[c].format(tools=", ".join(focus) or "its tools")
        for c in sorted(share, key=lambda c: -share[c])
        if c in _CLASS_NOTES
    ]
    median_chain = (
        int(statistics.median(stats.failed_chain_lengths)) if stats.failed_chain_lengths else 1
    )
    walk = median_chain + (1 if stats.successes > 0 else 0)
    walk = min(6, max(2, walk))
    write_trouble = share.get(FailureClass.WRONG_VALUE, 0.0) + share.get(
        FailureClass.MISSING_STEP, 0.0
    ) * _write_share(failures, spec)
    writes = 0 if write_trouble == 0 else (2 if write_trouble >= 0.5 else 1)
    wrong_answer = share.get(FailureClass.WRONG_ANSWER, 0.0)
    distractors = min(3, int(wrong_answer * 4 + 0.999)) if wrong_answer else 0
    program = 0.2 + (0.2 if share.get(FailureClass.WRONG_ANSWER, 0) >= 0.5 else 0.0)
    program += 0.1 if share.get(FailureClass.MISSING_STEP, 0) > 0 else 0.0
    notes.append(
        f"walk_length {walk}: median failed chain {median_chain}"
        + (", +1 since the env is partly solved" if stats.successes else "")
    )
    return Guidelines(
        env_id=spec.id if spec is not None else stats.env_id,
        focus_tools=focus,
        patterns=patterns[:5],
        walk_length=walk,
        writes=writes,
        distractors=distractors,
        program_share=round(min(0.6, program), 2),
        notes=notes,
    )


def _write_share(failures: list[FailureDiagnosis], spec: EnvSpec | None) -> float:
    """The share of failures whose implicated tools include a write tool."""
    if spec is None or not failures:
        return 0.0
    writes = write_tools_of(spec)
    return sum(1 for f in failures if writes & set(f.tools)) / len(failures)


def class_totals(diagnosis: Diagnosis) -> Counter[str]:
    """Primary failure class -> episodes, over the whole round."""
    return Counter(f.primary.value for f in diagnosis.failures)

"""Evaluate any policy (an OpenAI-compatible server, typically) on catalog tasks, in threads.

The library side of ``agentworld eval``: pick tasks, run them concurrently with retries,
stream one JSON line per trajectory, and summarise success rate and mean reward per
environment and per L1 category.

>>> from agentworld_gym.integrations import GoldPolicy
>>> from agentworld_gym.registry import load_spec
>>> refs = select_tasks(["notion"], split="test", limit=2)
>>> report = evaluate(refs, lambda env_id: GoldPolicy(load_spec(env_id)), concurrency=2)
>>> report.rows[-1].success_rate
1.0
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import gymnasium as gym
import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.integrations.rollout import Policy, TaskRef, Trajectory, run_with_retries
from agentworld_gym.registry import list_envs, load_spec, resolve
from agentworld_gym.spec import EnvSpec

PolicyFactory = Callable[[str], Policy]
"""``factory(env_id) -> policy``; called once per environment (policies may be per env)."""


def make_env(env_id: str, spec: EnvSpec, max_turns: int | None) -> AgentWorldEnv:
    """An env over every task of ``env_id``: its registered entry point when it has its own
    (held-out benchmarks such as BFCL), else a plain :class:`AgentWorldEnv` on ``spec``."""
    entry_point = gym.spec(env_id).entry_point if env_id in gym.registry else None
    if entry_point in (None, "agentworld_gym.registry:make_env"):
        return AgentWorldEnv(spec, split="all", max_turns=max_turns)
    return gym.make(env_id, split="all", max_turns=max_turns).unwrapped


def select_tasks(
    envs: Iterable[str], split: str = "test", limit: int | None = None
) -> list[TaskRef]:
    """The tasks of ``envs`` (names as ``agentworld list`` shows them, or ``"all"``) in ``split``.

    Args:
        envs: environment names; ``["all"]`` means every registered environment.
        split: ``train``, ``test`` or ``all``.
        limit: keep the first ``limit`` tasks of each environment.
    """
    names = list(envs)
    if names == ["all"]:
        names = [e.gym_id for e in list_envs()]
    refs = []
    for name in names:
        entry = resolve(name)
        tasks = load_spec(entry.gym_id).tasks_in(split)[:limit]
        refs += [TaskRef(entry.gym_id, task.id) for task in tasks]
    return refs


@dataclass
class SummaryRow:
    """Aggregate of some trajectories: one environment, one category, or all."""

    group: str
    """``env``, ``category`` or ``all``."""
    name: str
    episodes: int = 0
    successes: int = 0
    reward_sum: float = 0.0
    turns_sum: int = 0
    errors: int = 0

    @property
    def success_rate(self) -> float:
        return self.successes / self.episodes if self.episodes else 0.0

    @property
    def mean_reward(self) -> float:
        return self.reward_sum / self.episodes if self.episodes else 0.0

    @property
    def mean_turns(self) -> float:
        return self.turns_sum / self.episodes if self.episodes else 0.0

    def add(self, trajectory: Trajectory) -> None:
        self.episodes += 1
        self.successes += int(trajectory.success)
        self.reward_sum += trajectory.reward
        self.turns_sum += trajectory.turns
        self.errors += int(trajectory.error is not None)

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "name": self.name,
            "episodes": self.episodes,
            "success_rate": self.success_rate,
            "mean_reward": self.mean_reward,
            "mean_turns": self.mean_turns,
            "errors": self.errors,
        }


def summarize(trajectories: Iterable[Trajectory]) -> list[SummaryRow]:
    """Rows per environment, then per L1 category, then one ``all`` row (sorted by name)."""
    rows: dict[tuple[str, str], SummaryRow] = {}
    total = SummaryRow("all", "all")
    for t in trajectories:
        for key in (("env", t.env_id), ("category", t.category or "(none)")):
            rows.setdefault(key, SummaryRow(*key)).add(t)
        total.add(t)
    order = {"env": 0, "category": 1}
    return sorted(rows.values(), key=lambda r: (order[r.group], r.name)) + [total]


def format_table(rows: list[SummaryRow]) -> str:
    """A plain-text table of summary rows."""
    width = max([len(r.name) for r in rows] + [20])
    lines = [
        f"{'group':<9}{'name':<{width}} {'tasks':>6} {'success':>8} {'reward':>7} "
        f"{'turns':>6} {'errors':>6}"
    ]
    for r in rows:
        lines.append(
            f"{r.group:<9}{r.name:<{width}} {r.episodes:>6} {r.success_rate:>8.1%} "
            f"{r.mean_reward:>7.3f} {r.mean_turns:>6.1f} {r.errors:>6}"
        )
    return "\n".join(lines)


@dataclass
class EvalReport:
    """Every trajectory (in task order) and the summary rows."""

    trajectories: list[Trajectory] = field(default_factory=list)
    rows: list[SummaryRow] = field(default_factory=list)
    elapsed_s: float = 0.0
    resumed: int = 0
    """Episodes read back from an earlier run's JSONL (``resume=True``), not run again."""
    interrupted: bool = False
    """Ctrl-C stopped the run: ``trajectories`` holds the episodes that finished."""

    @property
    def episodes_per_min(self) -> float:
        ran = len(self.trajectories) - self.resumed
        return 60.0 * ran / self.elapsed_s if self.elapsed_s > 0 else 0.0


def read_trajectories(path: str | Path) -> list[Trajectory]:
    """The trajectories of an eval JSONL (a line cut short by a kill is skipped)."""
    known = {f.name for f in dataclasses.fields(Trajectory)}
    out = []
    for line in Path(path).read_bytes().splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict) and "env_id" in row and "task_id" in row:
            out.append(Trajectory(**{k: v for k, v in row.items() if k in known}))
    return out


def evaluate(
    refs: list[TaskRef],
    policy_factory: PolicyFactory,
    *,
    concurrency: int = 8,
    max_turns: int | None = None,
    retries: int = 2,
    jsonl: IO[bytes] | str | Path | None = None,
    on_result: Callable[[Trajectory], None] | None = None,
    resume: bool = False,
) -> EvalReport:
    """Run every task in ``refs`` with a policy from ``policy_factory``, ``concurrency`` at once.

    Each episode gets its own environment instance (environments are cheap; their specs are
    shared). Episodes whose policy raises are retried from scratch ``retries`` times, then
    recorded with their error and reward 0; environment bugs propagate.

    Args:
        refs: tasks to run (see :func:`select_tasks`).
        policy_factory: builds the policy of an environment (called once per environment).
        concurrency: worker threads (a model server batches their requests).
        max_turns: turn budget (default: each environment's own).
        retries: whole-episode retries after the policy raised.
        jsonl: where to stream one JSON line per trajectory (a path or a binary file); each
            is written as it finishes, so a killed run keeps what it did.
        on_result: called with each trajectory as it finishes (progress bars, logging).
        resume: with a ``jsonl`` path that exists, keep its finished episodes (those without
            an error), run only the others, and append.

    Ctrl-C stops the run: the report holds the finished episodes, ``interrupted`` set.
    """
    start = time.perf_counter()
    own = isinstance(jsonl, str | Path)
    previous: dict[tuple[str, str], Trajectory] = {}
    if resume and own and Path(jsonl).is_file():
        previous = {(t.env_id, t.task_id): t for t in read_trajectories(jsonl) if not t.error}
    todo = [r for r in refs if (r.env_id, r.task_id) not in previous]
    policies: dict[str, Policy] = {}
    for ref in todo:
        if ref.env_id not in policies:
            policies[ref.env_id] = policy_factory(ref.env_id)
    lock = threading.Lock()
    sink: IO[bytes] | None = open(jsonl, "ab" if previous else "wb") if own else jsonl
    if previous and sink is not None and not Path(jsonl).read_bytes().endswith(b"\n"):
        sink.write(b"\n")  # a line cut short by a kill: the next one starts on its own

    def run(ref: TaskRef) -> Trajectory:
        spec = load_spec(ref.env_id)
        trajectory = run_with_retries(
            lambda: make_env(ref.env_id, spec, max_turns),
            ref,
            policies[ref.env_id],
            retries=retries,
        )
        if not trajectory.category:
            trajectory.category = spec.taxonomy.get("l1", "")
        with lock:
            if sink is not None and not sink.closed:
                sink.write(orjson.dumps(trajectory.to_json(), default=str) + b"\n")
                sink.flush()
            if on_result is not None:
                on_result(trajectory)
        return trajectory

    results: dict[tuple[str, str], Trajectory] = {}
    interrupted = False
    pool = ThreadPoolExecutor(max_workers=max(1, concurrency))
    try:
        futures = {pool.submit(run, ref): ref for ref in todo}
        for future in as_completed(futures):
            ref = futures[future]
            results[(ref.env_id, ref.task_id)] = future.result()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        pool.shutdown(wait=not interrupted, cancel_futures=True)
        if own and sink is not None:
            with lock:
                sink.close()
            if not previous and not results and Path(jsonl).stat().st_size == 0:
                Path(jsonl).unlink()  # nothing finished: leave no empty file behind
    done = {**previous, **results}
    trajectories = [done[k] for k in ((r.env_id, r.task_id) for r in refs) if k in done]
    return EvalReport(
        trajectories,
        summarize(trajectories),
        time.perf_counter() - start,
        resumed=len(previous),
        interrupted=interrupted,
    )

"""Which environments and tasks to train and evaluate on: a pool over registered env ids.

Tasks are drawn across many environments at once, balanced by taxonomy (each L1 category as
likely as any other, then each environment within it, then each task), by environment, or
uniformly over tasks. Environments are made with ``gymnasium.make`` and reused.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import gymnasium as gym

import agentworld_gym
from agentworld_gym.errors import ConfigError
from agentworld_gym.verifiers import needs_judge
from algorithms.catalog_split import CatalogRule, CatalogSplit, fitting_tasks, split_catalog


class Balance(StrEnum):
    """How :meth:`TaskPool.sample` spreads draws over the pool."""

    taxonomy = "taxonomy"
    """Uniform over L1 categories, then environments within one, then tasks."""
    env = "env"
    """Uniform over environments, then tasks."""
    task = "task"
    """Uniform over all tasks (big environments dominate)."""


@dataclass
class EnvPoolConfig:
    """The environments an experiment uses (the Hydra ``env_pool`` group)."""

    envs: list[str] = field(default_factory=list)
    """Registered environment ids (``AgentWorld/notion-v0``, ``notion-v0`` or ``notion``);
    empty = every registered environment (filtered by ``categories``)."""
    categories: list[str] = field(default_factory=list)
    """Keep only environments whose L1 category contains one of these (case-insensitive)."""
    catalogs: list[str] = field(default_factory=list)
    """Extra catalog roots (folders with an ``index.json``) to register before resolving."""
    balance: Balance = Balance.taxonomy
    """How training tasks are drawn across environments."""
    train_split: str = "train"
    """Split that training (GRPO, SFT) draws from."""
    max_envs: int | None = None
    """Use at most this many environments (the first ones by id); ``None`` = all."""
    max_turns: int | None = None
    """Override every environment's turn budget; ``None`` keeps each env's own."""
    judged_tasks: bool = False
    """Keep tasks with criteria only an LLM judge can decide (prose values). Off by default:
    without a judge they cannot succeed, and a weak rule must not score them."""
    rule: CatalogRule = field(default_factory=CatalogRule)
    """Select environments and tasks from the catalog by a computed rule
    (:mod:`algorithms.catalog_split`): ``rule.part`` says which part (training or held out)."""


@dataclass(frozen=True)
class TaskRef:
    """One task of one environment."""

    env_id: str
    task_id: str
    category: str = ""


class TaskPool:
    """Tasks of the configured environments, and reusable env instances to run them in.

    >>> pool = TaskPool(EnvPoolConfig(envs=["AgentWorld/notion-v0"]))  # doctest: +SKIP
    >>> pool.sample(4, random.Random(0))  # doctest: +SKIP
    """

    def __init__(self, config: EnvPoolConfig) -> None:
        self.config = config
        for root in config.catalogs:
            if not (Path(root) / "index.json").is_file():
                raise ConfigError(f"env_pool.catalogs: {root} has no index.json")
            agentworld_gym.register_catalog(root)
        entries = agentworld_gym.list_envs()
        self.split: CatalogSplit | None = None
        if config.rule.enabled:
            if config.envs:
                raise ConfigError("env_pool: set either envs or rule.enabled, not both")
            from agentworld_gym.registry import resolve

            self.split = split_catalog(config.rule)
            entries = [resolve(g) for g in self.split.part(config.rule.part)]
        elif config.envs:
            from agentworld_gym.registry import resolve

            entries = [resolve(name) for name in config.envs]
        if config.categories:
            needles = [c.casefold() for c in config.categories]
            entries = [
                e for e in entries if any(n in e.taxonomy.get("l1", "").casefold() for n in needles)
            ]
        if self.split is None:
            entries = sorted(entries, key=lambda e: e.gym_id)
        entries = entries[: config.max_envs]
        if not entries:
            raise ConfigError(
                "env_pool selects no environment: set env_pool.envs to registered ids "
                f"(registered: {[e.gym_id for e in agentworld_gym.list_envs()][:10]})"
            )
        self.env_ids = [e.gym_id for e in entries]
        self.categories = {e.gym_id: e.taxonomy.get("l1", "") or "uncategorised" for e in entries}
        self._tasks: dict[str, list[TaskRef]] = {}
        self._free: dict[tuple[str, str], list[gym.Env]] = defaultdict(list)

    def tasks(self, split: str) -> list[TaskRef]:
        """Every task of the pool in ``split`` (``"all"`` for every split), in a fixed order."""
        if split not in self._tasks:
            refs = []
            for env_id in self.env_ids:
                spec = agentworld_gym.load_spec(env_id)
                fits = None
                if self.config.rule.enabled:
                    fits = {t.id for t in fitting_tasks(spec, self.config.rule)}
                refs += [
                    TaskRef(env_id, t.id, self.categories[env_id])
                    for t in spec.tasks_in(split)
                    if (self.config.judged_tasks or not needs_judge(t.verifier))
                    and (fits is None or t.id in fits)
                ]
            self._tasks[split] = refs
        return self._tasks[split]

    def sample(self, n: int, rng: random.Random, split: str | None = None) -> list[TaskRef]:
        """``n`` tasks drawn with replacement according to ``config.balance``."""
        tasks = self.tasks(split or self.config.train_split)
        if not tasks:
            raise ConfigError(f"the pool has no {split or self.config.train_split!r} tasks")
        if self.config.balance is Balance.task:
            return [rng.choice(tasks) for _ in range(n)]
        by_env: dict[str, list[TaskRef]] = defaultdict(list)
        for t in tasks:
            by_env[t.env_id].append(t)
        by_category: dict[str, list[str]] = defaultdict(list)
        for env_id in by_env:
            by_category[self.categories[env_id]].append(env_id)
        out = []
        for _ in range(n):
            if self.config.balance is Balance.taxonomy:
                env_id = rng.choice(by_category[rng.choice(sorted(by_category))])
            else:
                env_id = rng.choice(sorted(by_env))
            out.append(rng.choice(by_env[env_id]))
        return out

    # -- env instances ----------------------------------------------------------------------
    def acquire(self, env_id: str, split: str) -> gym.Env:
        """An env of ``env_id`` drawing from ``split``; give it back with :meth:`release`."""
        free = self._free[(env_id, split)]
        if free:
            return free.pop()
        kwargs = {"split": split}
        if self.config.max_turns:
            kwargs["max_turns"] = self.config.max_turns
        return gym.make(env_id, **kwargs)

    def release(self, env: gym.Env, env_id: str, split: str) -> None:
        self._free[(env_id, split)].append(env)

    def close(self) -> None:
        for envs in self._free.values():
            for env in envs:
                env.close()
        self._free.clear()

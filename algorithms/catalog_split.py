"""Which catalog environments a small model trains on, and which it never sees.

The rule is computed from the specs, never from a list of names, so it stays true as the
catalog is regenerated:

1. **Fits the model.** An environment qualifies when it has at most ``max_tools`` tools whose
   OpenAI schemas take at most ``max_tool_chars`` characters of JSON (the system prompt every
   turn re-reads), and at least ``min_tasks`` tasks that fit. A task fits when its gold
   solution is a tool chain of at most ``max_gold_calls`` calls that replays to reward 1.0 and
   whose tool results take at most ``max_observation_chars`` characters together. For the
   embedded SmolLM2-135M, which reads the tools as signature lines, the defaults keep
   prompt + gold episode under ~1,500 tokens.
2. **Held-out category.** One L1 category among those with at least two qualifying
   environments (seeded choice; or named by ``heldout_category``) is held out whole.
3. **Held-out environments.** Of the remaining qualifying environments, a seeded
   ``heldout_env_fraction`` is held out; the rest is the training pool, in a seeded order so
   that ``max_train_envs=k`` pools are nested (the 4-env pool is inside the 16-env pool).

Training never sees a held-out environment or the held-out category; held-out *tasks* of the
training environments are their ``test`` split.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import agentworld_gym
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import ConfigError
from agentworld_gym.registry import IndexEntry
from agentworld_gym.replay import replay_gold
from agentworld_gym.spec import EnvSpec, TaskSpec


class Part(StrEnum):
    """Which part of the catalog split a pool covers."""

    train = "train"
    """The training environments (their ``train`` split trains, ``test`` is held out)."""
    heldout_envs = "heldout_envs"
    """Qualifying environments training never sees, from the training categories."""
    heldout_category = "heldout_category"
    """Qualifying environments of the held-out L1 category."""


@dataclass
class CatalogRule:
    """The documented rule that picks training and held-out environments (``env_pool.rule``)."""

    enabled: bool = False
    """Select the pool by this rule (then ``env_pool.envs`` must be empty)."""
    part: Part = Part.train
    """Which part of the split the pool covers (evaluation asks for the held-out parts)."""
    max_tools: int = 10
    """At most this many tools (``submit`` not counted)."""
    max_tool_chars: int = 6000
    """At most this many characters of tool schemas (compact JSON; the embedded model reads
    them as signature lines, about 900 tokens at most)."""
    max_gold_calls: int = 2
    """A fitting task's gold chain has at most this many calls."""
    max_observation_chars: int = 1200
    """A fitting task's gold tool results take at most this many characters together."""
    min_tasks: int = 4
    """An environment qualifies with at least this many fitting tasks (all splits)."""
    heldout_category: str = "auto"
    """The L1 category held out whole (a substring of its name), ``auto`` = seeded choice
    among categories with at least two qualifying environments, ``none`` = no category."""
    heldout_env_fraction: float = 0.3
    """Share of the other qualifying environments held out (rounded, at least one)."""
    max_train_envs: int | None = None
    """Train on the first this many training environments (seeded order); ``None`` = all."""
    seed: int = 0
    """Seeds the held-out choices and the training order."""


@dataclass
class CatalogSplit:
    """The outcome of :func:`split_catalog`: env ids per part, in a fixed order."""

    train: list[str]
    heldout_envs: list[str]
    heldout_category: list[str]
    category: str | None
    qualifying: int
    examined: int
    tasks: dict[str, int] = field(default_factory=dict)
    """Env id → number of fitting tasks."""

    def part(self, part: Part) -> list[str]:
        return {
            Part.train: self.train,
            Part.heldout_envs: self.heldout_envs,
            Part.heldout_category: self.heldout_category,
        }[Part(part)]

    def describe(self) -> str:
        """One line per part, for the run log."""
        n = self.tasks
        return (
            f"catalog rule: {self.qualifying} of {self.examined} environments qualify; "
            f"train {len(self.train)} envs ({sum(n[e] for e in self.train)} fitting tasks), "
            f"held-out envs {len(self.heldout_envs)} "
            f"({sum(n[e] for e in self.heldout_envs)}), held-out category "
            f"{self.category!r}: {len(self.heldout_category)} "
            f"({sum(n[e] for e in self.heldout_category)})"
        )


def tool_chars(spec: EnvSpec) -> int:
    """Characters of the environment's tool schemas as compact JSON."""
    schemas = [t.openai_schema() for t in spec.tools]
    return len(json.dumps(schemas, ensure_ascii=False, separators=(",", ":")))


def fitting_tasks(spec: EnvSpec, rule: CatalogRule) -> list[TaskSpec]:
    """The tasks of ``spec`` (all splits) that fit the rule, each checked by a gold replay."""
    ids = _fitting_ids(spec.gym_id, rule.max_gold_calls, rule.max_observation_chars)
    return [spec.task(t) for t in ids]


@functools.cache
def _fitting_ids(gym_id: str, max_calls: int, max_obs: int) -> tuple[str, ...]:
    spec = agentworld_gym.load_spec(gym_id)
    short = [
        t
        for t in spec.tasks
        if t.gold
        and t.gold.get("type") == "tool_chain"
        and 0 < len(t.gold.get("calls", [])) <= max_calls
    ]
    if not short:
        return ()
    env = AgentWorldEnv(spec, split="all", max_turns=max_calls + 2)
    kept = []
    try:
        for task in short:
            result = replay_gold(env, task)
            observed = sum(
                len(str(m.get("content") or "")) for m in env.messages if m.get("role") == "tool"
            )
            if result.ok and observed <= max_obs:
                kept.append(task.id)
    finally:
        env.close()
    return tuple(kept)


def qualifies(entry: IndexEntry, rule: CatalogRule) -> int:
    """Number of fitting tasks when ``entry`` qualifies, else 0 (cheapest checks first)."""
    if entry.n_tools > rule.max_tools:
        return 0
    spec = agentworld_gym.load_spec(entry.gym_id)
    if len(spec.tools) > rule.max_tools or tool_chars(spec) > rule.max_tool_chars:
        return 0
    n = len(_fitting_ids(entry.gym_id, rule.max_gold_calls, rule.max_observation_chars))
    return n if n >= rule.min_tasks else 0


def catalog_entries() -> list[IndexEntry]:
    """The registered environments that live in the catalog roots."""
    from agentworld_gym.registry import default_roots

    roots = {Path(r).resolve() for r in default_roots()}
    return [e for e in agentworld_gym.list_envs() if e.root and Path(e.root).resolve() in roots]


def split_catalog(rule: CatalogRule, entries: list[IndexEntry] | None = None) -> CatalogSplit:
    """Apply the rule to ``entries`` (default: every environment of the catalog roots,
    ``envs_generated/`` and ``AGENTWORLD_CATALOGS`` -- not whatever else this process has
    registered, so the split depends on the catalog alone)."""
    entries = sorted(entries or catalog_entries(), key=lambda e: e.gym_id)
    counts = {e.gym_id: n for e in entries if (n := qualifies(e, rule))}
    if not counts:
        raise ConfigError("env_pool.rule: no environment qualifies; loosen max_tools/max_*")
    category_of = {e.gym_id: e.taxonomy.get("l1", "") or "uncategorised" for e in entries}
    rng = random.Random(f"catalog-split:{rule.seed}")
    category = _pick_category(rule, [category_of[g] for g in counts], rng)
    held_cat = [g for g in counts if category is not None and category_of[g] == category]
    rest = [g for g in counts if g not in held_cat]
    rng.shuffle(rest)
    n_held = max(1, round(rule.heldout_env_fraction * len(rest))) if len(rest) > 1 else 0
    heldout, train = sorted(rest[:n_held]), rest[n_held:]
    if rule.max_train_envs is not None:
        train = train[: rule.max_train_envs]
    if not train:
        raise ConfigError("env_pool.rule leaves no training environment")
    return CatalogSplit(train, heldout, held_cat, category, len(counts), len(entries), counts)


def _pick_category(rule: CatalogRule, categories: list[str], rng: random.Random) -> str | None:
    choice = rule.heldout_category.strip()
    if choice.lower() == "none":
        return None
    names = sorted(set(categories))
    if choice.lower() != "auto":
        match = [c for c in names if choice.casefold() in c.casefold()]
        if len(match) != 1:
            raise ConfigError(
                f"env_pool.rule.heldout_category={choice!r} matches {match or 'no category'}; "
                f"qualifying categories: {names}"
            )
        return match[0]
    sized = [c for c in names if categories.count(c) >= 2]
    return rng.choice(sized) if sized else None

"""Held-out evaluation: success rate and mean reward per environment and L1 category.

Works with any model: a token-level generator (the policy in process, vLLM) runs batched
episodes through :func:`~algorithms.grpo.rollout.run_episodes`; any other
:class:`~agentworld_gym.llm.LLMBackend` (a model behind an OpenAI-compatible server, the
``openai`` backend) plays episodes through ``chat()`` in the shared loop
(:func:`agentworld_gym.integrations.rollout.run_episode`), several at once in threads.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from agentworld_gym.integrations.rollout import backend_policy, run_episode
from agentworld_gym.suites import get_suite, wilson_interval
from algorithms.grpo.rollout import INVALID_CALL_ERRORS, RolloutConfig, Trajectory, run_episodes
from algorithms.pool import EnvPoolConfig, TaskPool, TaskRef


@dataclass
class EvalConfig:
    """Evaluation settings (the ``eval`` node)."""

    split: str = "test"
    """Which tasks: ``test`` are held out from training."""
    episodes_per_task: int = 1
    """Episodes per task (more with sampling, to average the noise)."""
    max_tasks: int | None = None
    """Evaluate on at most this many tasks (spread over environments); ``None`` = all."""
    train_max_tasks: int | None = None
    """With a rule-selected pool, at most this many test tasks of the training environments
    (``None``: ``max_tasks``). Each environment in a set costs a prefill of its ~1k-token
    system prompt, and the training pool has the most environments."""
    temperature: float = 0.0
    """Sampling temperature; 0 = greedy."""
    max_turns: int = 8
    """Assistant turns per episode at most."""
    max_new_tokens: int = 256
    """Tokens per assistant turn at most."""
    max_episode_tokens: int = 4096
    """Tokens per episode at most (token-level generators)."""
    constrain_calls: bool = True
    """Hold tool calls to each episode's tools while decoding (see
    :attr:`~algorithms.grpo.rollout.RolloutConfig.constrain_calls`); in-process generators."""
    batch_size: int = 32
    """Episodes run together (one generation batch, or threads for chat backends)."""
    before: bool = True
    """Evaluate the model before training too (base vs trained)."""
    after: bool = True
    """Evaluate the trained model."""
    seed: int = 1234
    """Seeds episodes and sampling."""
    suite: str | None = None
    """A registered evaluation suite (``bfcl-multi-turn``, ``bfcl-multi-turn-base``, ...;
    ``agentworld eval --suite list``) to evaluate on instead of the pool's ``split``: a
    held-out benchmark the run never trains on, reported per suite category (with 95%
    Wilson intervals). Its episodes are long: raise ``max_turns`` (BFCL: 100 or more)."""
    heldout: bool = True
    """With a rule-selected pool (``env_pool.rule``), also evaluate the held-out
    environments and the held-out category (:mod:`algorithms.heldout`)."""
    parts: list[str] = field(default_factory=lambda: ["train", "heldout_envs", "heldout_category"])
    """Which sets of a rule-selected pool are evaluated (:class:`~algorithms.catalog_split.Part`
    names): the training environments' ``test`` split, the held-out environments, the
    held-out category. The scaling sweep plots only ``heldout_envs`` and evaluates only it."""
    gold_nll: bool = False
    """Also measure each set's teacher-forced loss of its gold trajectories (mean negative
    log-likelihood per assistant token, one forward pass per task, no decoding): transfer a
    small model shows in likelihood before it shows in success (:func:`heldout.gold_nll`)."""
    extra_envs: list[str] = field(default_factory=list)
    """Environments evaluated on their ``split`` as sets of their own (``[notion]``)."""
    extra_max_episode_tokens: int = 6144
    """Token budget of the ``extra_envs`` episodes (notion's system prompt is ~5k tokens)."""
    bootstrap_resamples: int = 2000
    """Resamples of the 95% bootstrap intervals in the report."""


@dataclass
class EvalResult:
    """What an evaluation found."""

    success: float
    mean_reward: float
    episodes: int
    tool_call_valid: float
    per_env: dict[str, dict[str, float]] = field(default_factory=dict)
    per_category: dict[str, dict[str, float]] = field(default_factory=dict)
    per_task: dict[str, float] = field(default_factory=dict)
    episode_success: list[float] = field(default_factory=list)
    """1.0/0.0 per episode in task order (the same order for every model: paired tests)."""
    answered: float | None = None
    """Share of episodes the model ended with a final answer, not cut by the turn or token
    budget (``None`` in results written before it was recorded)."""
    gold_nll: float | None = None
    """Mean over tasks of the gold trajectory's loss per assistant token (``eval.gold_nll``)."""
    episode_gold_nll: list[float] = field(default_factory=list)
    """That loss per evaluated task, in task order: one value a task, not one an episode, and
    tasks without a replayable gold are left out, so it is bootstrapped on its own, never
    paired with ``episode_success``."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def metrics(self, prefix: str) -> dict[str, float]:
        """Flat metrics, e.g. ``eval_base/success`` and ``eval_base/env/<id>/success``."""
        out = {f"{prefix}/success": self.success, f"{prefix}/mean_reward": self.mean_reward}
        for env, values in self.per_env.items():
            out[f"{prefix}/env/{env}/success"] = values["success"]
        return out


def select_tasks(pool: TaskPool, config: EvalConfig) -> list[TaskRef]:
    """The tasks to evaluate: all of the split, or ``max_tasks`` spread round-robin over
    environments (deterministic), grouped by environment so that one batch shares its system
    prompt's key/value cache."""
    tasks = pool.tasks(config.split)
    if config.max_tasks is None or len(tasks) <= config.max_tasks:
        return sorted(tasks, key=lambda t: t.env_id)
    by_env: dict[str, list[TaskRef]] = defaultdict(list)
    for t in tasks:
        by_env[t.env_id].append(t)
    chosen: list[TaskRef] = []
    while len(chosen) < config.max_tasks:
        for env_id in sorted(by_env):
            if by_env[env_id] and len(chosen) < config.max_tasks:
                chosen.append(by_env[env_id].pop(0))
    return sorted(chosen, key=lambda t: t.env_id)


def suite_pool(name: str) -> TaskPool:
    """A pool over a registered suite's environments, its categories the suite's."""
    suite = get_suite(name)
    suite.check()
    pool = TaskPool(EnvPoolConfig(envs=list(suite.envs)))
    pool.categories = dict(suite.envs)
    return pool


def evaluate(model: Any, pool: TaskPool, config: EvalConfig) -> tuple[EvalResult, list]:
    """Evaluate a token generator (has ``generate`` and ``chat_format``) or a chat backend.

    With ``config.suite`` the episodes come from that suite, not from ``pool``.
    Returns ``(result, trajectories)``.
    """
    if config.suite:
        held_out = suite_pool(config.suite)
        plain = dataclasses.replace(config, suite=None, split=get_suite(config.suite).split)
        try:
            return _evaluate_pool(model, held_out, plain)
        finally:
            held_out.close()
    return _evaluate_pool(model, pool, config)


def _evaluate_pool(model: Any, pool: TaskPool, config: EvalConfig) -> tuple[EvalResult, list]:
    tasks = [t for t in select_tasks(pool, config) for _ in range(config.episodes_per_task)]
    if hasattr(model, "generate") and hasattr(model, "chat_format"):
        trajs = play_batched(model, pool, tasks, config.split, config)
    else:
        trajs = _chat_episodes(model, pool, tasks, config)
    return summarise(trajs, pool), trajs


def play_batched(
    model: Any, pool: Any, tasks: list[Any], split: str, config: EvalConfig
) -> list[Trajectory]:
    """Greedy in-process episodes of ``tasks``, ``config.batch_size`` per generation batch."""
    rollout = RolloutConfig(
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        max_episode_tokens=config.max_episode_tokens,
        temperature=config.temperature,
        constrain_calls=config.constrain_calls,
    )
    trajs: list[Trajectory] = []
    for start in range(0, len(tasks), config.batch_size):
        chunk = tasks[start : start + config.batch_size]
        label = f"eval episodes {start + 1}-{start + len(chunk)} of {len(tasks)}"
        trajs += run_episodes(model, pool, chunk, split, rollout, config.seed + start, label)
    return trajs


def summarise(trajs: list[Trajectory], pool: TaskPool) -> EvalResult:
    """Aggregate episodes into an :class:`EvalResult`."""
    if not trajs:
        return EvalResult(0.0, 0.0, 0, 0.0)
    groups: dict[str, dict[str, list[Trajectory]]] = {
        "env": defaultdict(list),
        "cat": defaultdict(list),
    }
    per_task: dict[str, list[float]] = defaultdict(list)
    for t in trajs:
        groups["env"][t.task.env_id].append(t)
        groups["cat"][t.task.category or pool.categories.get(t.task.env_id, "")].append(t)
        per_task[f"{t.task.env_id}:{t.task.task_id}"].append(t.reward)

    def stats(items: list[Trajectory]) -> dict[str, float]:
        successes = sum(t.success for t in items)
        low, high = wilson_interval(successes, len(items))
        return {
            "success": successes / len(items),
            "mean_reward": sum(t.reward for t in items) / len(items),
            "episodes": float(len(items)),
            "success_ci95_low": low,
            "success_ci95_high": high,
        }

    calls = sum(t.tool_calls for t in trajs)
    invalid = sum(t.invalid_tool_calls for t in trajs)
    overall = stats(trajs)
    return EvalResult(
        success=overall["success"],
        mean_reward=overall["mean_reward"],
        episodes=len(trajs),
        tool_call_valid=(1 - invalid / calls) if calls else 0.0,
        per_env={k: stats(v) for k, v in sorted(groups["env"].items())},
        per_category={k: stats(v) for k, v in sorted(groups["cat"].items())},
        per_task={k: sum(v) / len(v) for k, v in sorted(per_task.items())},
        episode_success=[float(t.success) for t in trajs],
        answered=sum(t.end == "answer" for t in trajs) / len(trajs),
    )


def _chat_episodes(backend: Any, pool: TaskPool, tasks: list[TaskRef], config: EvalConfig) -> list:
    def play(i: int) -> Trajectory:
        task = tasks[i]
        policy = backend_policy(
            backend,
            temperature=config.temperature,
            max_tokens=config.max_new_tokens,
            seed=config.seed + i,
        )
        env = pool.acquire(task.env_id, config.split)
        try:
            episode = run_episode(
                env, task.task_id, policy, seed=config.seed + i, max_turns=config.max_turns
            )
        finally:
            pool.release(env, task.env_id, config.split)
        calls = [result for step in episode.tool_results for result in step]
        return Trajectory(
            task,
            reward=episode.reward,
            turns=episode.turns,
            tool_calls=len(calls),
            invalid_tool_calls=sum(r.get("error") in INVALID_CALL_ERRORS for r in calls),
            end="answer" if episode.terminated else "max_turns",
            messages=episode.messages,
        )

    with ThreadPoolExecutor(max_workers=max(1, config.batch_size)) as executor:
        return list(executor.map(play, range(len(tasks))))

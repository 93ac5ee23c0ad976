"""Multi-turn episodes through the Gymnasium API, with token-exact bookkeeping.

All episodes of a batch advance in lockstep: each turn, every unfinished episode's token
sequence goes to the generator in one batch; each generated turn is sent to its environment
as an action (Hermes ``<tool_call>`` text or a final answer, parsed by the environment); the
tool results come back as messages and their template text is appended as tokens. The
sequence the policy is trained on is the sequence it saw — never re-tokenised — with a mask
that is 1 exactly on the tokens it sampled.

An episode ends at a final answer (reward from the verifier), at the environment's turn budget,
or when the token budget is spent (then the episode is closed with an empty ``submit`` so the
verifier scores the state reached, as the environment does at its own turn budget).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from agentworld_gym.llm.hardware import refresh_threads
from agentworld_gym.llm.transformers_backend import Sampling, TokenGenerator
from agentworld_gym.verifiers import succeeded
from algorithms.pool import TaskPool, TaskRef

logger = logging.getLogger(__name__)

INVALID_CALL_ERRORS = frozenset({"malformed_action", "unknown_tool", "invalid_arguments"})
"""Tool-result error codes that mean the *call* was wrong (not an API-level failure)."""


@dataclass
class RolloutConfig:
    """Budgets and sampling of one episode."""

    max_turns: int = 8
    """Assistant turns per episode at most (the env's own budget may end it sooner)."""
    max_new_tokens: int = 256
    """Tokens per assistant turn at most."""
    max_episode_tokens: int = 4096
    """Tokens of the whole sequence (prompt, turns, tool results) at most."""
    temperature: float = 1.0
    """Sampling temperature; the loss uses the same one."""
    top_p: float = 1.0
    """Nucleus sampling (1.0 keeps the policy's distribution exact)."""
    constrain_calls: bool = True
    """Hold each ``<tool_call>`` to the episode's tools: a real tool name, only its argument
    keys, required ones present, enum members (:mod:`agentworld_gym.llm.call_grammar`); the
    values and the answer stay the policy's. The agent trained and evaluated is the model with
    this grammar; off = the model's raw text."""


@dataclass
class Trajectory:
    """One finished episode as a token sequence plus what the environment said."""

    task: TaskRef
    token_ids: list[int] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    """1 on the policy's own sampled tokens, 0 on prompt, tool results and template text."""
    sample_logprobs: list[float] = field(default_factory=list)
    """Sampling-time log-probabilities, aligned with ``token_ids`` (0 off the mask)."""
    reward: float = 0.0
    turns: int = 0
    tool_calls: int = 0
    invalid_tool_calls: int = 0
    ok_tool_calls: int = 0
    """Tool calls that ran without an error (the environment's ``ok``)."""
    cut_turns: int = 0
    """Turns that hit ``max_new_tokens`` before the end-of-turn token."""
    end: str = ""
    """``answer``, ``max_turns`` or ``token_budget``."""
    messages: list[dict[str, Any]] = field(default_factory=list, repr=False)
    verification: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def success(self) -> bool:
        return succeeded(self.verification, self.reward)

    @property
    def policy_tokens(self) -> int:
        return sum(self.mask)


@dataclass
class _Live:
    traj: Trajectory
    env: gym.Env
    split: str
    tools: list[dict[str, Any]]
    history: list[dict[str, Any]]
    seen: int
    done: bool = False


def run_episodes(
    generator: TokenGenerator,
    pool: TaskPool,
    tasks: list[TaskRef],
    split: str,
    config: RolloutConfig,
    seed: int = 0,
    progress: str | None = None,
) -> list[Trajectory]:
    """Play one episode per entry of ``tasks`` (repeat a task for a group) and return them in
    the same order; with ``progress``, log each turn under that label (how many episodes are
    still playing, the time so far)."""
    t0 = time.perf_counter()
    fmt = generator.chat_format
    live: list[_Live] = []
    for i, task in enumerate(tasks):
        env = pool.acquire(task.env_id, split)
        _, info = env.reset(seed=seed + i, options={"task_id": task.task_id})
        traj = Trajectory(task)
        traj.token_ids = fmt.prompt_ids(info["messages"], info["tools"])
        traj.mask = [0] * len(traj.token_ids)
        traj.sample_logprobs = [0.0] * len(traj.token_ids)
        live.append(
            _Live(traj, env, split, info["tools"], list(info["messages"]), len(info["messages"]))
        )
    for turn in range(config.max_turns):
        refresh_threads()  # auto threads follow other jobs' load within a long evaluation
        active = [ep for ep in live if not ep.done]
        if not active:
            break
        room = [config.max_episode_tokens - len(ep.traj.token_ids) for ep in active]
        for ep, left in zip(active, room, strict=True):
            if left <= 0:
                _close(ep, "token_budget")
        active = [ep for ep in active if not ep.done]
        if not active:
            break
        sampling = Sampling(
            max_new_tokens=min(config.max_new_tokens, max(room)),
            temperature=config.temperature,
            top_p=config.top_p,
            seed=seed * 1000 + turn,
        )
        if progress:
            logger.info(
                "%s: turn %d/%d, %d of %d episodes playing (%.0f s so far)",
                progress,
                turn + 1,
                config.max_turns,
                len(active),
                len(live),
                time.perf_counter() - t0,
            )
        prompts = [ep.traj.token_ids for ep in active]
        if config.constrain_calls:
            tools = [ep.tools for ep in active]
            generations = generator.generate(prompts, sampling, tools=tools)
        else:
            generations = generator.generate(prompts, sampling)
        for ep, gen in zip(active, generations, strict=True):
            _advance(ep, gen, fmt, config)
    for ep in live:
        if not ep.done:
            _close(ep, "max_turns")
        pool.release(ep.env, ep.traj.task.env_id, ep.split)
    return [ep.traj for ep in live]


def _advance(ep: _Live, gen: Any, fmt: Any, config: RolloutConfig) -> None:
    """Append one generated turn, send it to the env, append what comes back."""
    traj = ep.traj
    tokens = gen.token_ids[: max(0, config.max_episode_tokens - len(traj.token_ids))]
    text = gen.text
    if len(tokens) < len(gen.token_ids):  # cut by the episode's token budget: act on what's kept
        text = fmt.tokenizer.decode(tokens, skip_special_tokens=True)
    traj.token_ids += tokens
    traj.mask += [1] * len(tokens)
    logprobs = gen.logprobs if gen.logprobs is not None else [0.0] * len(tokens)
    traj.sample_logprobs += list(logprobs[: len(tokens)])
    traj.turns += 1
    ended_with_eos = bool(tokens) and tokens[-1] == fmt.eos_token_id
    traj.cut_turns += int(not ended_with_eos)
    _, reward, terminated, truncated, info = ep.env.step(text)
    for result in info.get("tool_results", []):
        traj.tool_calls += 1
        traj.invalid_tool_calls += int(result.get("error") in INVALID_CALL_ERRORS)
        traj.ok_tool_calls += int(bool(result.get("ok")))
    if terminated or truncated:
        _finish(ep, float(reward), "answer" if terminated else "max_turns", info)
        return
    new = info["messages"][ep.seen + 1 :]
    history = [*ep.history, fmt.history_message(text)]
    more = fmt.continuation_ids(history, new, ep.tools, ended_with_eos)
    if len(traj.token_ids) + len(more) >= config.max_episode_tokens:
        _close(ep, "token_budget")
        return
    traj.token_ids += more
    traj.mask += [0] * len(more)
    traj.sample_logprobs += [0.0] * len(more)
    ep.history = [*history, *new]
    ep.seen = len(info["messages"])


def _close(ep: _Live, why: str) -> None:
    """End an unfinished episode with an empty answer: the verifier scores the state reached."""
    _, reward, _, _, info = ep.env.step({"name": "submit", "arguments": {"answer": ""}})
    _finish(ep, float(reward), why, info)


def _finish(ep: _Live, reward: float, why: str, info: dict[str, Any]) -> None:
    ep.done = True
    ep.traj.reward = reward
    ep.traj.end = why
    ep.traj.messages = list(info.get("messages", []))
    ep.traj.verification = dict(info.get("verification") or {})


def rollout_metrics(trajs: list[Trajectory], prefix: str = "rollout") -> dict[str, float]:
    """Episode statistics (``rollout/``) and rewards (``reward/``) of a batch."""
    if not trajs:
        return {}
    rewards = np.array([t.reward for t in trajs], dtype=float)
    calls = sum(t.tool_calls for t in trajs)
    metrics = {
        "reward/mean": float(rewards.mean()),
        "reward/std": float(rewards.std()),
        "reward/success": float(np.mean([t.success for t in trajs])),
        # the reward-hacking guard: reward earned without one successful tool call (every
        # catalog task needs at least one), which must stay ~0 for the reward curve to be real
        "reward/without_ok_call": float(
            np.mean([t.reward > 0 and t.ok_tool_calls == 0 for t in trajs])
        ),
        # what the environment's own rules refused to pay: criteria met, but no successful
        # call or an answer the episode never looked up (verification["unpaid"]); a policy
        # drifting toward guessing shows here while its reward stays 0
        "reward/unpaid": float(np.mean([bool(t.verification.get("unpaid")) for t in trajs])),
        f"{prefix}/turns": float(np.mean([t.turns for t in trajs])),
        f"{prefix}/response_tokens": float(np.mean([t.policy_tokens for t in trajs])),
        f"{prefix}/sequence_tokens": float(np.mean([len(t.token_ids) for t in trajs])),
        f"{prefix}/tool_calls": float(calls / len(trajs)),
        f"{prefix}/tool_call_valid": float(
            1.0 - sum(t.invalid_tool_calls for t in trajs) / calls if calls else 0.0
        ),
        f"{prefix}/cut_turns": float(np.mean([t.cut_turns for t in trajs])),
    }
    for end in ("answer", "max_turns", "token_budget"):
        metrics[f"{prefix}/end_{end}"] = float(np.mean([t.end == end for t in trajs]))
    return metrics

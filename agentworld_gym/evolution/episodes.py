"""Evaluation episodes with their full trajectories: what diagnosis reads.

:func:`run_episode` plays one task with any :class:`~agentworld_gym.llm.LLMBackend` as the
policy through the shared loop (:func:`agentworld_gym.integrations.rollout.run_episode`) and
keeps, as an :class:`EpisodeRecord`, everything the diagnosis needs (messages, per-step tool
results, the answer, the verifier's breakdown). A trainer's ``evaluate`` can be a one-liner over
:func:`evaluate_with_policy`.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.integrations import rollout
from agentworld_gym.llm.base import LLMBackend
from agentworld_gym.spec import EnvSpec
from agentworld_gym.verifiers import succeeded

logger = logging.getLogger(__name__)


@dataclass
class EvalTask:
    """One evaluation task: the environment (holding this round's fresh tasks) and its id."""

    spec: EnvSpec
    """The environment with the evaluation tasks as its ``test`` split (never trained on)."""
    task_id: str
    env_id: str
    """Gymnasium id of the environment version (``AgentWorld/<slug>-v<k>``)."""
    l1: str = ""
    """L1 category of the environment (the arena's stratum)."""


@dataclass
class EpisodeRecord:
    """One evaluated episode, complete enough to classify its failure afterwards."""

    env_id: str
    task_id: str
    l1: str
    reward: float
    success: bool
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per step, ``info["tool_results"]``: ``{"name", "ok", "error"}`` per call."""
    final_answer: str | None = None
    """The answer text, or ``None`` when the turn budget ran out first."""
    truncated: bool = False
    verification: dict[str, Any] = field(default_factory=dict)
    turns: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_trajectory(
        cls,
        trajectory: rollout.Trajectory,
        *,
        l1: str | None = None,
        success_threshold: float = 1.0,
    ) -> EpisodeRecord:
        """The record of a finished :class:`~agentworld_gym.integrations.rollout.Trajectory`.

        ``l1`` defaults to the trajectory's category; ``success`` is judged against
        ``success_threshold`` (the evolution's own bar, not the rollout's 1.0).
        """
        return cls(
            env_id=trajectory.env_id,
            task_id=trajectory.task_id,
            l1=l1 if l1 is not None else trajectory.category,
            reward=trajectory.reward,
            success=succeeded(trajectory.verification, trajectory.reward, success_threshold),
            messages=trajectory.messages,
            tool_results=trajectory.tool_results,
            final_answer=trajectory.final_answer,
            truncated=trajectory.truncated,
            verification=trajectory.verification,
            turns=trajectory.turns,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    @property
    def calls(self) -> list[dict[str, Any]]:
        """Every tool-call result of the episode, in order."""
        return [r for step in self.tool_results for r in step]


def run_episode(
    env: AgentWorldEnv,
    policy: LLMBackend,
    task_id: str,
    *,
    l1: str | None = None,
    success_threshold: float = 1.0,
    sampling: dict[str, Any] | None = None,
) -> EpisodeRecord:
    """Play ``task_id`` with ``policy`` until it answers or runs out of turns.

    The policy sees the environment's own chat (``info["messages"]``) and tool schemas, and
    its assistant message goes to ``env.step`` unchanged, so whatever the backend emits
    (OpenAI ``tool_calls``, Hermes text, plain answers) is judged exactly as in training.
    """
    policy_fn = rollout.backend_policy(policy, **(sampling or {}))
    trajectory = rollout.run_episode(env, task_id, policy_fn)
    return EpisodeRecord.from_trajectory(trajectory, l1=l1, success_threshold=success_threshold)


def evaluate_with_policy(
    tasks: Iterable[EvalTask],
    policy: LLMBackend,
    *,
    max_turns: int | None = None,
    success_threshold: float = 1.0,
    sampling: dict[str, Any] | None = None,
) -> list[EpisodeRecord]:
    """Run every task once with ``policy`` (one env per environment spec, reused)."""
    envs: dict[int, AgentWorldEnv] = {}
    records = []
    for task in tasks:
        env = envs.get(id(task.spec))
        if env is None:
            env = envs[id(task.spec)] = AgentWorldEnv(task.spec, split="all", max_turns=max_turns)
        record = run_episode(
            env,
            policy,
            task.task_id,
            l1=task.l1,
            success_threshold=success_threshold,
            sampling=sampling,
        )
        record.env_id = task.env_id
        records.append(record)
    return records


def save_episodes(path: str | Path, records: Iterable[EpisodeRecord]) -> Path:
    """Write records as JSON lines."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for record in records:
            fh.write(orjson.dumps(record.to_dict(), default=str) + b"\n")
    return path


def load_episodes(path: str | Path) -> list[EpisodeRecord]:
    lines = Path(path).read_bytes().splitlines()
    return [EpisodeRecord.from_dict(orjson.loads(line)) for line in lines if line.strip()]

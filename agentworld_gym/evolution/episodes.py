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
from agentworld_gym.errors import AgentWorldError, LLMRequestError
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
    """L1 category of the environment (the arena's stratum; a suite task: its suite
    category)."""
    suite: str = ""
    """The held-out suite the task is from (``EvolutionConfig.held_out_suite``; ``""``: an
    arena task). Its environment is made from its registered entry point (BFCL's, tau2's),
    its success is the benchmark's own, and a policy that raises (a request timed out) gives
    an error record rather than stopping the round."""


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
    error: str | None = None
    """Why a held-out suite episode could not finish (its policy raised); reward 0."""

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        if data["error"] is None:
            del data["error"]
        return data

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
    """Run every task once with ``policy`` (one env per environment spec, reused).

    A held-out suite task (:attr:`EvalTask.suite`) runs in its registered environment and
    is judged by the benchmark's own success; if the policy raises, its record carries the
    error (a bug of the environment still propagates)."""
    envs: dict[int, AgentWorldEnv] = {}
    records = []
    for task in tasks:
        env = envs.get(id(task.spec))
        if env is None:
            env = envs[id(task.spec)] = _make_env(task, max_turns)
        if task.suite:
            records.append(_held_out_episode(env, policy, task, sampling))
            continue
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


def _make_env(task: EvalTask, max_turns: int | None) -> AgentWorldEnv:
    if task.suite:
        from agentworld_gym.integrations.openai_eval import make_env

        return make_env(task.env_id, task.spec, max_turns)
    return AgentWorldEnv(task.spec, split="all", max_turns=max_turns)


def _held_out_episode(
    env: AgentWorldEnv, policy: LLMBackend, task: EvalTask, sampling: dict[str, Any] | None
) -> EpisodeRecord:
    try:
        record = run_episode(env, policy, task.task_id, l1=task.l1, sampling=sampling)
    except LLMRequestError as exc:
        error = str(exc)
    except AgentWorldError:
        raise
    except Exception as exc:  # the policy's (model server's) failure
        error = f"{type(exc).__name__}: {exc}"
    else:
        record.env_id = task.env_id
        return record
    logger.warning("%s %s: %s", task.env_id, task.task_id, error)
    return EpisodeRecord(task.env_id, task.task_id, task.l1, 0.0, False, error=error)


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

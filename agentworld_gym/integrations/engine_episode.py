"""One AgentWorld episode driven from outside: the core of the verl, SkyRL and verifiers adapters.

RL engines own the loop (they generate, then call the environment with the model's output), so
the adapters need the Gymnasium episode in push form. :class:`EngineEpisode` is that: a fresh
``gym.make`` environment per rollout (isolation: every rollout gets its own database copy),
reset on one task, fed the model's actions, returning the messages the environment added
(tool results, or the next user turn) and, at the end, the verifier's reward. Actions go to
``env.step`` unchanged, so the marker rule is the environment's own (:mod:`agentworld_gym.actions`):
text with a ``<tool_call>`` tag, a JSON object with ``"name"`` or an OpenAI ``tool_calls`` entry
calls tools; text without a marker is the final answer. The reward is the one ``gym.make``
gives for the same actions, because it is ``gym.make``'s environment.

:func:`task_rows` lists the tasks of an environment pool with their opening messages, the
common part of the dataset files each engine reads (verl and SkyRL parquet, verifiers rows).

>>> episode = EngineEpisode("notion", "notion-r01")
>>> messages, tools = episode.start()
>>> [m["role"] for m in messages], "submit" in {t["function"]["name"] for t in tools}
(['system', 'user'], True)
>>> step = episode.act('<tool_call>{"name": "API-get-self", "arguments": {}}</tool_call>')
>>> [m["role"] for m in step.observations], step.done
(['tool'], False)
>>> episode.act("I could not finish.").done
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import load_spec
from agentworld_gym.spec import EnvSpec
from agentworld_gym.verifiers import succeeded

Message = dict[str, Any]


@dataclass
class EngineStep:
    """What one action did: the messages to show the model next, and the outcome."""

    observations: list[Message]
    """The messages the environment added after the agent's turn (``tool`` results, or the
    next ``user`` turn of a multi-turn task); empty once the episode is over."""
    reward: float
    """The verifier's reward at the end of the episode, else 0."""
    terminated: bool
    """The agent gave its final answer (the last one, on a multi-turn task)."""
    truncated: bool
    """The turn budget ran out."""
    info: dict[str, Any] = field(default_factory=dict)
    """The environment's ``info`` (``verification`` at the end)."""

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


class EngineEpisode:
    """One episode of one task on a fresh environment, fed actions by an engine.

    Args:
        env: a registered environment (``"notion"``, ``"AgentWorld/notion-v0"``) or an EnvSpec.
        task_id: the task of this episode (one task per episode).
        seed: the reset seed.
        max_turns: turn budget (default: the task's own, as with ``gym.make``).
    """

    def __init__(
        self,
        env: str | EnvSpec,
        task_id: str,
        *,
        seed: int | None = None,
        max_turns: int | None = None,
    ) -> None:
        self.task_id = task_id
        self.seed = seed
        budget = {} if max_turns is None else {"max_turns": max_turns}
        if isinstance(env, EnvSpec):
            self.env: gym.Env = AgentWorldEnv(env, split="all", **budget)
        else:
            self.env = gym.make(load_spec(env).gym_id, split="all", **budget)
        self.tools: list[dict[str, Any]] = []
        self.turns = 0
        self.reward = 0.0
        self.terminated = False
        self.truncated = False
        self.verification: dict[str, Any] = {}
        self._started = False

    def start(self) -> tuple[list[Message], list[dict[str, Any]]]:
        """Reset on the task: ``(opening messages, OpenAI tool schemas)``."""
        _, info = self.env.reset(seed=self.seed, options={"task_id": self.task_id})
        self.tools = list(info["tools"])
        self._started = True
        return [dict(m) for m in info["messages"]], self.tools

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    def act(self, action: Any) -> EngineStep:
        """Step with the model's action (text or an OpenAI assistant message).

        Raises:
            RuntimeError: before :meth:`start`, or after the episode ended.
        """
        if not self._started or self.done:
            raise RuntimeError("act() needs a started episode that has not ended")
        before = len(self.env.unwrapped.messages)
        _, reward, terminated, truncated, info = self.env.step(action)
        self.turns += 1
        self.tools = list(info.get("tools", self.tools))  # a step may add tools (BFCL)
        added = [dict(m) for m in info["messages"][before:]]
        if added and added[0]["role"] == "assistant":
            added = added[1:]
        self.terminated, self.truncated = bool(terminated), bool(truncated)
        if self.done:
            self.reward = float(reward)
            self.verification = dict(info.get("verification", {}))
            added = []
        return EngineStep(added, float(reward), self.terminated, self.truncated, info)

    def assistant_message(self) -> Message | None:
        """The environment's record of the agent's last turn (calls parsed into ``tool_calls``)."""
        for message in reversed(self.env.unwrapped.messages):
            if message["role"] == "assistant":
                return dict(message)
        return None

    def finish(self) -> float:
        """End an episode the engine stopped early (its own turn or token budget): the
        verifier scores the state reached with an empty answer, as the environment does at
        its turn budget. Returns the reward (the episode's own when it already ended)."""
        if self._started and not self.done:
            verification = self.env.unwrapped.verify("")
            self.reward = float(verification.reward)
            self.verification = verification.to_info()
            self.truncated = True
        return self.reward

    @property
    def success(self) -> bool:
        """Every criterion met (what evaluations count)."""
        return succeeded(self.verification, self.reward) if self.done else False

    def metrics(self) -> dict[str, float]:
        """``reward``, ``success``, ``turns``, ``truncated`` of the episode, as numbers."""
        return {
            "reward": self.reward,
            "success": float(self.success),
            "turns": float(self.turns),
            "truncated": float(self.truncated),
        }

    def close(self) -> None:
        self.env.close()


@dataclass(frozen=True)
class TaskRow:
    """One task of a pool, with the messages an episode of it opens with."""

    env: str
    """The environment's name (what :class:`EngineEpisode` takes)."""
    task_id: str
    split: str
    messages: list[Message]
    """System and user messages at reset."""
    tools: list[dict[str, Any]]
    """OpenAI function schemas, ``submit`` included."""
    category: str = ""
    """The environment's L1 taxonomy category."""


def task_rows(envs: list[str], split: str = "train") -> list[TaskRow]:
    """Every task of ``envs`` in ``split`` (``train``, ``test`` or ``all``), in catalog order."""
    rows = []
    for name in envs:
        spec = load_spec(name)
        for task in spec.tasks_in(split):
            episode = EngineEpisode(name, task.id)
            messages, tools = episode.start()
            episode.close()
            rows.append(
                TaskRow(
                    env=name,
                    task_id=task.id,
                    split=task.split,
                    messages=messages,
                    tools=tools,
                    category=spec.taxonomy.get("l1", ""),
                )
            )
    return rows


def write_parquet(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write dataset rows as one parquet file (the engines read them with ``datasets``/pandas)."""
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_parquet(path, index=False)
    return path

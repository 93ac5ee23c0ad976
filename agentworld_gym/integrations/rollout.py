"""One episode, any policy: the loop that evaluation, Ray workers and examples share.

A **policy** is any callable ``policy(messages, tools) -> action`` where ``messages`` is the
OpenAI chat so far (``info["messages"]``, a read-only :class:`~agentworld_gym.env.MessagesView`:
``list(messages)`` to mutate or JSON-encode it), ``tools`` the OpenAI tool schemas
(``info["tools"]``) and ``action`` anything ``env.step`` accepts: an OpenAI assistant message
dict (what every :class:`~agentworld_gym.llm.LLMBackend` returns), JSON text, Hermes
``<tool_call>`` text or a plain-text final answer. A policy may put extra keys in the message
dict it returns (token ids, logprobs): the environment ignores them and :class:`Trajectory`
keeps them in ``actions``.

>>> from agentworld_gym.registry import load_spec
>>> spec = load_spec("notion")
>>> env = AgentWorldEnv(spec, split="all")
>>> run_episode(env, "notion-r01", GoldPolicy(spec)).reward
1.0
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym
import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import AgentWorldError, LLMRequestError
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import EnvSpec
from agentworld_gym.verifiers import succeeded

Policy = Callable[[list[dict[str, Any]], list[dict[str, Any]]], Any]
"""``policy(messages, tools) -> action`` (see the module docstring)."""


@dataclass(frozen=True)
class TaskRef:
    """One episode to run: which environment, which task, and the reset seed."""

    env_id: str
    task_id: str
    seed: int | None = None


@dataclass
class Trajectory:
    """The record of one episode, JSON-ready (``to_json``), one line of an eval JSONL."""

    env_id: str
    task_id: str
    split: str = ""
    category: str = ""
    """The environment's L1 taxonomy category."""
    reward: float = 0.0
    success: bool = False
    """Reward 1.0: every criterion met."""
    turns: int = 0
    terminated: bool = False
    """The agent answered (``False`` with ``truncated``: it ran out of turns)."""
    truncated: bool = False
    final_answer: str | None = None
    verification: dict[str, Any] = field(default_factory=dict)
    messages: list[dict[str, Any]] = field(default_factory=list)
    actions: list[Any] = field(default_factory=list)
    """What the policy returned at each turn, as returned (extra keys included)."""
    tool_results: list[list[dict[str, Any]]] = field(default_factory=list)
    """Per turn, ``info["tool_results"]``: ``{"name", "ok", "error"}`` per call."""
    error: str | None = None
    """Why the episode could not finish (the policy raised); its reward is 0."""
    attempts: int = 1
    elapsed_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


CLOSE_ACTION = {"name": "submit", "arguments": {"answer": ""}}
"""What :func:`run_episode` sends when its own ``max_turns`` cap ends an episode: an empty
``submit``, so the verifier scores the state reached (as the env does at its turn budget)."""


def run_episode(
    env: gym.Env,
    task_id: str,
    policy: Policy,
    *,
    seed: int | None = None,
    max_turns: int | None = None,
) -> Trajectory:
    """Reset ``env`` on ``task_id`` and let ``policy`` act until the episode ends.

    Args:
        env: an :class:`AgentWorldEnv`, bare or wrapped (``gym.make``).
        task_id: the task to play.
        policy: ``policy(messages, tools) -> action``.
        seed: the reset seed.
        max_turns: cap the policy's turns below the env's own budget; an episode still open
            then is closed with :data:`CLOSE_ACTION` (``truncated``, no ``final_answer``).

    Raises:
        Exception: whatever the policy raises (the caller decides whether to retry);
            environment errors never reach here, they are observations.
    """
    start = time.perf_counter()
    _, info = env.reset(seed=seed, options={"task_id": task_id})
    spec = env.unwrapped.spec_data
    trajectory = Trajectory(
        env_id=spec.gym_id,
        task_id=task_id,
        split=info.get("split", ""),
        category=spec.taxonomy.get("l1", ""),
    )
    tools = info["tools"]
    reward, terminated, truncated, closed = 0.0, False, False, False
    while not (terminated or truncated):
        if max_turns is not None and trajectory.turns >= max_turns:
            _, reward, _, _, info = env.step(CLOSE_ACTION)
            truncated = closed = True
            break
        action = policy(info["messages"], tools)
        trajectory.actions.append(action)
        _, reward, terminated, truncated, info = env.step(action)
        tools = info.get("tools", tools)  # a step may list more tools (BFCL's miss_func)
        trajectory.turns += 1
        trajectory.tool_results.append(list(info["tool_results"]))
    trajectory.reward = float(reward)
    trajectory.verification = info.get("verification", {})
    trajectory.success = succeeded(trajectory.verification, trajectory.reward)
    trajectory.terminated = bool(terminated)
    trajectory.truncated = bool(truncated)
    trajectory.final_answer = None if closed else info.get("final_answer")
    trajectory.messages = list(info["messages"])
    trajectory.elapsed_s = time.perf_counter() - start
    return trajectory


def run_with_retries(
    make_env: Callable[[], AgentWorldEnv],
    ref: TaskRef,
    policy: Policy,
    retries: int = 2,
) -> Trajectory:
    """:func:`run_episode` on a fresh env, retried from scratch when the policy raises.

    A bug in the environment (an :class:`AgentWorldError` outside tool calls) is not retried:
    it propagates. After ``retries`` failed retries the trajectory carries the last error.
    """
    error = ""
    for attempt in range(1, retries + 2):
        start = time.perf_counter()
        try:
            trajectory = run_episode(make_env(), ref.task_id, policy, seed=ref.seed)
        except LLMRequestError as exc:  # the model server failed this time: retry
            error = str(exc)
            continue
        except AgentWorldError:
            raise
        except Exception as exc:  # the policy's (model server's) failure: retry the episode
            error = f"{type(exc).__name__}: {exc}"
            continue
        trajectory.attempts = attempt
        return trajectory
    return Trajectory(
        env_id=ref.env_id,
        task_id=ref.task_id,
        error=error,
        attempts=retries + 1,
        elapsed_s=time.perf_counter() - start,
    )


def backend_policy(backend: Any, **sampling: Any) -> Policy:
    """A policy that asks an :class:`~agentworld_gym.llm.LLMBackend` (native tool calling)."""

    def policy(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        return backend.chat(messages, tools, **sampling)

    return policy


class GoldPolicy:
    """A policy that plays each task's gold tool chain, one call per turn, then its answer.

    It finds the task from the user message and resolves ``$<step>.<path>`` references from
    the tool results in the chat, so it keeps no episode state: one instance serves many
    threads, and it holds plain data only, so it pickles (Ray workers, subprocesses). Use it
    to check a pipeline end to end: every task should score 1.0.
    """

    def __init__(self, spec: EnvSpec) -> None:
        self.plays: dict[str, tuple[list[dict[str, Any]], str]] = {}
        for task in spec.tasks:
            gold = task.gold or {}
            answer = gold.get("answer", task.reference_answer) or "(done)"
            self.plays[task.instruction] = (list(gold.get("calls", [])), answer)

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        instruction = next(m["content"] for m in messages if m["role"] == "user")
        calls, answer = self.plays[instruction]
        step = sum(1 for m in messages if m["role"] == "assistant")
        if step >= len(calls):
            return {"role": "assistant", "content": answer}
        outputs = [_loads(m["content"]) for m in messages if m["role"] == "tool"]
        arguments = resolve_refs(calls[step].get("arguments", {}), outputs)
        function = {"name": calls[step]["name"], "arguments": orjson.dumps(arguments).decode()}
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": f"call_{step}", "type": "function", "function": function}],
        }


def _loads(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text

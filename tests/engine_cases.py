"""Shared cases of the engine adapter tests (verl, SkyRL, verifiers): a notion task, a catalog
task, two scripted policies, and the reward ``gym.make`` gives each."""

from __future__ import annotations

import functools
from typing import Any

import gymnasium as gym

import agentworld_gym  # noqa: F401 (registers the environments)
from agentworld_gym.integrations.rollout import GoldPolicy, run_episode
from agentworld_gym.registry import list_envs, load_spec

NOTION = ("notion", "notion-r01")
WRONG_ANSWER = "I could not find what you asked for."


class WrongAnswerPolicy:
    """The gold tool calls, then a wrong final answer: partial credit at most, never success."""

    def __init__(self, gold: GoldPolicy) -> None:
        self.gold = gold

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        action = self.gold(messages, tools)
        if isinstance(action, dict) and not action.get("tool_calls"):
            return {"role": "assistant", "content": WRONG_ANSWER}
        return action


class PoolPolicy:
    """Plays the tasks of several environments: routes on the chat's first user message
    (stripped, as chat templates may strip it) to that task's gold or wrong-answer policy."""

    def __init__(self, envs: list[str], wrong: bool = False) -> None:
        self.routes: dict[str, tuple[str, Any]] = {}
        for name in envs:
            gold = GoldPolicy(load_spec(name))
            policy = WrongAnswerPolicy(gold) if wrong else gold
            for instruction in gold.plays:
                self.routes[instruction.strip()] = (instruction, policy)

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Any:
        i = next(i for i, m in enumerate(messages) if m["role"] == "user")
        instruction, policy = self.routes[messages[i]["content"].strip()]
        exact = [*messages[:i], {**messages[i], "content": instruction}, *messages[i + 1 :]]
        return policy(exact, tools)


@functools.cache
def catalog_case() -> tuple[str, str]:
    """A catalog environment and task whose gold solution scores 1.0 through ``gym.make``
    (the catalog is regenerated now and then, so the case is found rather than named)."""
    names = [e.id for e in sorted(list_envs(), key=lambda e: e.id) if e.id != "notion"]
    preferred = [n for n in names if n == "docker-dvp"] + names[:40]
    for name in preferred:
        spec = load_spec(name)
        for task in spec.tasks[:2]:
            if (task.gold or {}).get("calls") and gym_reward(name, task.id) == 1.0:
                return name, task.id
    raise AssertionError("no catalog task whose gold solution earns 1.0")


def gym_reward(env: str, task_id: str, wrong: bool = False) -> float:
    """The reward of the scripted episode through ``gym.make`` (the reference)."""
    gold = GoldPolicy(load_spec(env))
    policy = WrongAnswerPolicy(gold) if wrong else gold
    made = gym.make(load_spec(env).gym_id, split="all")
    try:
        return run_episode(made, task_id, policy).reward
    finally:
        made.close()

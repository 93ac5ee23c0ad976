"""Validate notion-v0 tasks by execution: gold earns 1.0, empty and wrong answers < 0.5.

The build runs this before writing ``tasks.json`` (synthesis validates through the same runtime
the agent uses). The wrong answer of each task lives in ``provenance["wrong_answer"]``.
"""

from __future__ import annotations

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.spec import EnvSpec

PASS = 1.0 - 1e-9
FAIL_BELOW = 0.5


def check_tasks(spec: EnvSpec) -> list[str]:
    """Every problem found, as readable lines (empty when all tasks are sound)."""
    env = AgentWorldEnv(spec, split="all", max_turns=10_000)
    problems: list[str] = []
    for task in spec.tasks:
        result = replay_gold(env, task)
        if result.reward < PASS or result.errors:
            problems.append(
                f"{task.id}: gold reward {result.reward:.3f} {result.errors[:3]} "
                f"{_unmet(result.verification)}"
            )
        for label, answer in (("empty", ""), ("wrong", task.provenance.get("wrong_answer"))):
            if answer is None:
                problems.append(f"{task.id}: no wrong_answer in provenance")
                continue
            reward = score_answer(env, task, answer)
            if reward >= FAIL_BELOW:
                problems.append(f"{task.id}: {label} answer scores {reward:.3f}")
    return problems


def _unmet(verification: dict) -> list[str]:
    return [b["criterion"] for b in verification.get("breakdown", []) if b.get("met") is False]

"""Replay a τ² task's gold actions through :class:`~agentworld_gym.tau2.env.Tau2Env`.

The check that the environment runs tau2's tasks as tau2 does: the agent makes the task's
gold calls (``evaluation_criteria.actions``, the reference trajectory tau2's DB check replays)
in order; the user's own gold calls (``requestor: "user"``, telecom's phone actions) are made
by a scripted user when the agent asks for them; the agent's last message carries the task's
``communicate_info``; then the user stops. A faithful environment gives every such replay
tau2's reward for the same trajectory: 1.0, except where tau2's own data disagrees with
itself.
"""

from __future__ import annotations

import itertools
from typing import Any

from agentworld_gym.tau2.users import STOP, Tau2ScriptedUser

__all__ = ["gold_script", "replay_gold"]


def _segments(actions: list[Any]) -> list[tuple[str, list[Any]]]:
    return [(who, list(group)) for who, group in itertools.groupby(actions, lambda a: a.requestor)]


def gold_script(task: Any) -> list[Any]:
    """The scripted user's lines for a gold replay of ``task``."""
    criteria = task.evaluation_criteria
    script: list[Any] = ["Hi, I need help with my request."]
    for who, group in _segments(list(criteria.actions or []) if criteria else []):
        if who == "user":
            calls = [{"name": a.name, "arguments": dict(a.arguments)} for a in group]
            script.append({"tool_calls": calls, "content": "Done."})
    return [*script, STOP]


def replay_gold(env: Any, task: Any) -> dict[str, Any]:
    """Run ``task``'s gold actions through ``env``; returns the final step's ``info``.

    ``env.user`` is replaced by a :class:`Tau2ScriptedUser` playing :func:`gold_script`.
    """
    env.user = Tau2ScriptedUser({task.id: gold_script(task)})
    env.reset(options={"task_id": task.id})
    criteria = task.evaluation_criteria
    info: dict[str, Any] = {}
    done = terminated = truncated = False
    for who, group in _segments(list(criteria.actions or []) if criteria else []):
        if who == "user":
            _, _, terminated, truncated, info = env.step("Please do the following on your side.")
        else:
            for action in group:
                call = {"name": action.name, "arguments": dict(action.arguments)}
                _, _, terminated, truncated, info = env.step(call)
                if terminated or truncated:
                    break
        if terminated or truncated:
            done = True
            break
    said = "; ".join(str(s) for s in (criteria.communicate_info or [])) if criteria else ""
    while not done:
        _, _, terminated, truncated, info = env.step(f"All done. {said}".strip())
        done = terminated or truncated
    return info

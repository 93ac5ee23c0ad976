"""Replay gold solutions through the Gymnasium API (what ``agentworld validate`` runs).

A gold tool chain's arguments may reference earlier outputs as ``"$<step>.<path>"``: ``"$0.id"``
is the ``id`` of step 0's result, ``"$1.results.0.id"`` walks into lists. A string that *is*
a reference is replaced by the referenced value (any JSON type); references embedded inside
longer strings are not expanded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import SpecError
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.verifiers.checks import _MISSING, get_path

_REF = re.compile(r"^\$(\d+)(?:\.(.+))?$")


def resolve_refs(value: Any, outputs: list[Any]) -> Any:
    """Replace ``"$<step>.<path>"`` strings inside ``value`` by earlier outputs."""
    if isinstance(value, str):
        match = _REF.match(value)
        if not match:
            return value
        step, path = int(match.group(1)), match.group(2) or ""
        if step >= len(outputs):
            raise SpecError(f"reference {value!r} points past the {len(outputs)} earlier steps")
        found = get_path(outputs[step], path)
        if found is _MISSING:
            raise SpecError(f"reference {value!r} does not resolve in step {step}'s output")
        return found
    if isinstance(value, dict):
        return {k: resolve_refs(v, outputs) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_refs(v, outputs) for v in value]
    return value


@dataclass
class ReplayResult:
    """The outcome of replaying one task's gold solution."""

    task_id: str
    reward: float
    errors: list[str] = field(default_factory=list)
    calls: int = 0
    verification: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.errors and self.reward >= 1.0 - 1e-9


def replay_gold(env: AgentWorldEnv, task: TaskSpec) -> ReplayResult:
    """Run ``task``'s gold tool chain and answer through ``env.step``; report the reward."""
    if not task.gold or task.gold.get("type") != "tool_chain":
        return ReplayResult(task.id, 0.0, [f"task {task.id} has no tool_chain gold solution"])
    env.reset(options={"task_id": task.id})
    outputs: list[Any] = []
    errors: list[str] = []
    for i, call in enumerate(task.gold.get("calls", [])):
        try:
            arguments = resolve_refs(call.get("arguments", {}), outputs)
        except SpecError as exc:
            errors.append(f"step {i} ({call.get('name')}): {exc}")
            outputs.append(None)
            continue
        action = orjson.dumps({"name": call["name"], "arguments": arguments}).decode()
        obs, _, terminated, truncated, info = env.step(action)
        result = info["tool_results"][0]
        if not result["ok"]:
            errors.append(f"step {i} ({call['name']}): {obs[:300]}")
        outputs.append(_loads(obs))
        if terminated or truncated:
            errors.append(f"episode ended at step {i} (turn budget {env.max_turns})")
            return ReplayResult(task.id, 0.0, errors, i + 1, info.get("verification", {}))
    answer = task.gold.get("answer", task.reference_answer) or "(done)"
    _, reward, terminated, _, info = env.step(
        orjson.dumps({"name": "submit", "arguments": {"answer": answer}}).decode()
    )
    verification = info.get("verification", {})
    if verification.get("error"):
        errors.append(verification["error"])
    return ReplayResult(task.id, float(reward), errors, len(outputs), verification)


def gold_trajectory(env: AgentWorldEnv, task: TaskSpec) -> list[dict[str, Any]] | None:
    """The gold solution as an OpenAI chat (system, user, assistant tool calls, tool results,
    final answer) for supervised warm starts; ``None`` when it does not replay to 1.0."""
    result = replay_gold(env, task)
    if not result.ok:
        return None
    return env.messages  # a submit call is recorded as the plain-text final answer


def score_answer(env: AgentWorldEnv, task: TaskSpec, answer: str) -> float:
    """What the answer checks pay ``answer`` given straight away, with no tool calls (an
    episode would be paid nothing: see ``AgentWorldEnv.verify``'s ``call_rule``)."""
    env.reset(options={"task_id": task.id})
    return float(env.verify(answer, call_rule=False).reward)


def validate(spec: EnvSpec, split: str = "all") -> list[ReplayResult]:
    """Replay every gold solution of an environment; a fresh env per call keeps it honest."""
    env = AgentWorldEnv(spec, split=split, max_turns=10_000)
    return [replay_gold(env, task) for task in spec.tasks_in(split)]


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text

"""The reward of a τ² episode: tau2's own evaluators, combined as tau2 combines them.

``evaluate`` does what ``tau2.evaluator.evaluator.evaluate_simulation`` does for
``EvaluationType.ALL`` on a half-duplex run, with tau2's own classes:

- ``EnvironmentEvaluator`` replays the episode's tool calls on a fresh environment and the
  task's gold actions on another, and compares the database hashes (``DB``) and runs the task's
  env assertions (``ENV_ASSERTION``);
- ``ActionEvaluator`` checks each gold action was called (``ACTION``);
- ``CommunicateEvaluator`` checks each ``communicate_info`` string was said (``COMMUNICATE``);
- NL assertions (``NL_ASSERTION``) are judged by an LLM behind our interface with tau2's own
  judge prompt (read from the checkout; tau2's module itself imports litellm);

the reward is the product of the components in the task's ``reward_basis``. A run that did not
end with the agent's or the user's stop (the turn budget ran out) scores 0, as in tau2.
``evaluate_simulation`` itself is not called: importing it pulls tau2's agent registry and LLM
client. What differs is only who combines the components; the combination is the same product.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Tau2Verification", "evaluate", "judge_nl_assertions"]


@dataclass
class Tau2Verification:
    """tau2's verdict on one episode (``info["verification"]``)."""

    reward: float
    success: bool
    reward_basis: list[str]
    breakdown: dict[str, float | None]
    termination: str
    checks: dict[str, Any] = field(default_factory=dict)
    needs_judge: bool = False

    def to_info(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "success": self.success,
            "reward_basis": list(self.reward_basis),
            "breakdown": dict(self.breakdown),
            "termination": self.termination,
            "needs_judge": self.needs_judge,
            **self.checks,
        }


def judge_nl_assertions(
    judge: Any, prompt: str, trajectory: list[Any], assertions: list[str]
) -> list[dict[str, Any]]:
    """tau2's NL-assertion judge with ``judge`` (an LLM backend) as its model.

    The conversation and the expected outcomes are laid out as tau2 lays them out; the
    answer must be tau2's JSON (``{"results": [{"expectedOutcome", "metExpectation",
    "reasoning"}]}``). An answer that is not such JSON meets nothing.
    """
    conversation = "\n".join(f"{m.role}: {m.content}" for m in trajectory)
    user = f"""
        conversation:
        {conversation}
        
        expectedOutcomes:
        {assertions}
        """
    reply = judge.chat(
        [{"role": "system", "content": prompt}, {"role": "user", "content": user}],
        None,
        temperature=0.0,
        seed=0,
    )
    text = str((reply or {}).get("content") or "")
    try:
        results = json.loads(text[text.find("{") : text.rfind("}") + 1]).get("results", [])
    except (ValueError, AttributeError):
        results = []
    met = {
        str(r.get("expectedOutcome")): bool(r.get("metExpectation") is True)
        for r in results
        if isinstance(r, dict)
    }
    return [{"nl_assertion": a, "met": met.get(a, False)} for a in assertions]


def evaluate(
    domain: Any,
    task: Any,
    trajectory: list[Any],
    termination: str,
    *,
    tool_types: dict[str, Any] | None = None,
    judge: Any = None,
    nl_prompt: str | None = None,
) -> Tau2Verification:
    """Score a finished episode. ``trajectory``: tau2 messages (initial history included)."""
    from tau2.data_model.tasks import RewardType
    from tau2.evaluator.evaluator_action import ActionEvaluator
    from tau2.evaluator.evaluator_communicate import CommunicateEvaluator
    from tau2.evaluator.evaluator_env import EnvironmentEvaluator

    criteria = task.evaluation_criteria
    basis = [b.value for b in criteria.reward_basis] if criteria is not None else []
    if termination not in ("agent_stop", "user_stop"):
        return Tau2Verification(
            0.0, False, basis, {}, termination, {"note": f"terminated by {termination}"}
        )
    if criteria is None:
        return Tau2Verification(1.0, True, [], {}, termination, {"note": "no criteria"})

    env_info = EnvironmentEvaluator.calculate_reward(
        environment_constructor=domain.new_environment,
        task=task,
        full_trajectory=trajectory,
        solo_mode=False,
    )
    action_info = ActionEvaluator.calculate_reward(
        task=task, full_trajectory=trajectory, tool_types=tool_types
    )
    comm_info = CommunicateEvaluator.calculate_reward(task=task, full_trajectory=trajectory)

    wanted = set(criteria.reward_basis)
    breakdown: dict[str, float | None] = {}
    reward = 1.0
    for bases, info in (
        ({RewardType.DB, RewardType.ENV_ASSERTION}, env_info),
        ({RewardType.ACTION}, action_info),
        ({RewardType.COMMUNICATE}, comm_info),
    ):
        if wanted & bases:
            breakdown.update({k.value: v for k, v in (info.reward_breakdown or {}).items()})
            reward *= info.reward
    checks: dict[str, Any] = {
        "db_match": env_info.db_check.db_match if env_info.db_check else None,
        "env_assertions": [c.met for c in env_info.env_assertions or []],
        "action_checks": [
            {"action": c.action.name, "match": c.action_match}
            for c in action_info.action_checks or []
        ],
        "communicate_checks": [
            {"info": c.info, "met": c.met} for c in comm_info.communicate_checks or []
        ],
    }
    needs_judge = False
    if RewardType.NL_ASSERTION in wanted:
        assertions = list(criteria.nl_assertions or [])
        if not assertions:
            breakdown[RewardType.NL_ASSERTION.value] = 1.0
        elif judge is None:
            breakdown[RewardType.NL_ASSERTION.value] = None  # unjudged: no success
            needs_judge = True
        else:
            results = judge_nl_assertions(judge, nl_prompt or "", trajectory, assertions)
            nl_reward = 1.0 if all(r["met"] for r in results) else 0.0
            breakdown[RewardType.NL_ASSERTION.value] = nl_reward
            checks["nl_assertions"] = results
            reward *= nl_reward
    success = reward == 1.0 and not needs_judge
    return Tau2Verification(reward, success, basis, breakdown, termination, checks, needs_judge)

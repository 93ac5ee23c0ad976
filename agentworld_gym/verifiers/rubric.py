"""Rubric verifier: weighted criteria, each judged by its machine check or by an LLM judge.

Reward = (sum of weight × score of the criteria judged) / (sum of their weights); a machine
check scores in [0, 1] (the ``state`` check gives partial credit per requested change), a
judged criterion 0 or 1. A criterion with ``"requires": "state"`` scores only when every
``state`` criterion is met (a write task's "tell me how many" pays only for work done);
``"requires": "answer"`` only when every answer check is (a read-only task's "nothing
changed" pays for keeping the data intact while answering, not for doing nothing).

``success`` = every criterion met, those of weight 0 included.

A criterion without a machine check is judged by the LLM judge when one is configured; with no
judge it is reported as ``unjudged`` in the breakdown, left out of the reward, and the episode
cannot succeed (``needs_judge`` in the details), so the rule judge never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.base import Episode, Verification
from agentworld_gym.verifiers.checks import (
    ANSWER_CHECKS,
    AnswerReading,
    answer_expected,
    run_check,
    validate_check,
)


class Judge(Protocol):
    """Anything with the ``LLMJudge.judge`` signature."""

    def judge(
        self, instruction: str, answer: str, criteria: list[str], evidence: str = ""
    ) -> list[Any]: ...


@dataclass(frozen=True)
class Criterion:
    text: str
    weight: float = 1.0
    check: dict[str, Any] | None = None
    requires: str | None = None
    """A check type (``"state"``, or ``"answer"`` for every answer check) whose criteria must
    all be met for this one to score."""


class RubricVerifier:
    """Judge an episode against weighted criteria (see :mod:`agentworld_gym.verifiers.checks`)."""

    def __init__(self, criteria: list[dict[str, Any]], judge: Judge | None = None) -> None:
        if not criteria:
            raise VerifierError("a rubric needs at least one criterion")
        self.criteria: list[Criterion] = []
        for i, raw in enumerate(criteria):
            if not isinstance(raw, dict) or not isinstance(raw.get("text"), str):
                raise VerifierError(f"criterion {i} must be an object with a 'text' string")
            weight = float(raw.get("weight", 1.0))
            if weight < 0:
                raise VerifierError(f"criterion {i} has a negative weight {weight}")
            check = raw.get("check")
            if check is not None:
                validate_check(check)
            requires = raw.get("requires")
            if requires is not None and not isinstance(requires, str):
                raise VerifierError(
                    f"criterion {i}: requires must be a check type, got {requires!r}"
                )
            self.criteria.append(Criterion(raw["text"], weight, check, requires))
        self.judge = judge
        self.asked = [
            e
            for c in self.criteria
            if c.check is not None and c.check["type"] in ANSWER_CHECKS
            for e in answer_expected(c.check)
        ]
        """Every value the rubric's answer checks ask for (none competes with another)."""

    @property
    def needs_judge(self) -> bool:
        """Whether some criterion has no machine check (its value is prose)."""
        return any(c.check is None for c in self.criteria)

    def verify(self, episode: Episode) -> Verification:
        breakdown: list[dict[str, Any]] = []
        prose = [c for c in self.criteria if c.check is None]
        verdicts = self._judge(prose, episode) if prose and self.judge is not None else {}
        reading = AnswerReading(self.asked)
        for c in self.criteria:
            score: float | None
            if c.check is not None:
                score, reason = run_check(c.check, episode, reading)
                by = "rule"
            elif c.text in verdicts:
                met, reason = verdicts[c.text]
                score, by = float(met), "llm"
            else:
                score, reason, by = None, "no machine check and no LLM judge configured", "unjudged"
            breakdown.append(
                {
                    "criterion": c.text,
                    "weight": c.weight,
                    "met": None if score is None else score >= 1.0 - 1e-9,
                    "score": score,
                    "by": by,
                    "reason": reason,
                }
            )
        for c, b in zip(self.criteria, breakdown, strict=True):
            if c.requires and b["score"]:
                family = ANSWER_CHECKS if c.requires == "answer" else {c.requires}
                unmet = [
                    d["criterion"]
                    for k, d in zip(self.criteria, breakdown, strict=True)
                    if k.check is not None and k.check["type"] in family and not d["met"]
                ]
                if unmet:
                    b.update(score=0.0, met=False, reason=f"counts once met: {unmet[0]}")
                    b["waits_for"] = c.requires  # unmet because of another criterion
        judged = [b for b in breakdown if b["score"] is not None]
        total = sum(b["weight"] for b in judged)
        earned = sum(b["weight"] * b["score"] for b in judged)
        reward = earned / total if total > 0 else 0.0
        success = all(b["met"] for b in breakdown)
        details: dict[str, Any] = {"verifier": "rubric"}
        if any(b["score"] is None for b in breakdown):
            details["needs_judge"] = True
        return Verification(reward, breakdown, details, success=success)

    def _judge(self, prose: list[Criterion], ep: Episode) -> dict[str, tuple[bool, str]]:
        evidence = "\n".join(
            f"- {c.name}({c.arguments}) -> {'ok' if c.ok else 'error'}" for c in ep.calls
        )
        texts = [c.text for c in prose]
        verdicts = self.judge.judge(ep.instruction, ep.answer, texts, evidence)  # type: ignore[union-attr]
        return {t: (bool(v.met), str(v.reason)) for t, v in zip(texts, verdicts, strict=False)}

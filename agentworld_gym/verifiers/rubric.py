"""Rubric verifier: weighted criteria, each judged by its machine check or by an LLM judge.

Reward = (sum of weights of the criteria met) / (sum of weights of the criteria judged).
A criterion without a machine check is judged by the LLM judge when one is configured; with no
judge it is reported as ``unjudged`` in the breakdown and left out of the reward, so the rule
judge never guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.base import Episode, Verification
from agentworld_gym.verifiers.checks import run_check, validate_check


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
            self.criteria.append(Criterion(raw["text"], weight, check))
        self.judge = judge

    def verify(self, episode: Episode) -> Verification:
        breakdown: list[dict[str, Any]] = []
        prose = [c for c in self.criteria if c.check is None]
        verdicts = self._judge(prose, episode) if prose and self.judge is not None else {}
        for c in self.criteria:
            if c.check is not None:
                met, reason = run_check(c.check, episode)
                by = "rule"
            elif c.text in verdicts:
                met, reason = verdicts[c.text]
                by = "llm"
            else:
                met, reason, by = None, "no machine check and no LLM judge configured", "unjudged"
            breakdown.append(
                {"criterion": c.text, "weight": c.weight, "met": met, "by": by, "reason": reason}
            )
        judged = [b for b in breakdown if b["met"] is not None]
        total = sum(b["weight"] for b in judged)
        score = sum(b["weight"] for b in judged if b["met"])
        reward = score / total if total > 0 else 0.0
        return Verification(reward, breakdown, {"verifier": "rubric"})

    def _judge(self, prose: list[Criterion], ep: Episode) -> dict[str, tuple[bool, str]]:
        evidence = "\n".join(
            f"- {c.name}({c.arguments}) -> {'ok' if c.ok else 'error'}" for c in ep.calls
        )
        texts = [c.text for c in prose]
        verdicts = self.judge.judge(ep.instruction, ep.answer, texts, evidence)  # type: ignore[union-attr]
        return {t: (bool(v.met), str(v.reason)) for t, v in zip(texts, verdicts, strict=False)}

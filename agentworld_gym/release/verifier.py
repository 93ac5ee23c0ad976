"""The verifier of imported (and LLM-synthesized) tasks: the release's prose rubric.

A task's ``verifier`` object::

    {"type": "release_rubric",
     "criteria": ["The answer names Lighthouse and Anchor App.", ...],   # the release's prose
     "expected": {"state": {<file>: <change>}, "answer_facts": ["Lighthouse", ...],
                  "clock": "2026-08-05T09:00:00Z"} | null,        # timestamps near it are masked
     "ignore": ["usage_log"],                  # files left out of the state comparison
     "unverified": "why the chain did not replay"}                  # when expected is null

How it judges, honestly:

* **With an LLM judge** (``AgentWorldEnv(judge=...)``): each prose criterion is judged from the
  instruction, the answer and the evidence (tool calls, and the masked state change); the
  reward is the fraction met. The replay checks below appear in the breakdown with weight 0.
* **Without one (default)**: a deterministic *approximation*. The task's ``verified_tool_chain``
  was replayed at import on a fresh copy of the database (:mod:`.expect`); the episode earns one
  point if its final state made the same change (ids and timestamps masked, log files
  ignored), and one if the answer mentions every fact of the chain's last output (record names
  or titles, or the scalar result; read by type and exclusive, as rubric answer checks are).
  The prose criteria are listed as ``unjudged``: a criterion
  about *how* the agent worked ("Step 1 finds ...") or about what the answer must *not* say is
  not checked, and an agent that reaches the same state by another route gets full credit.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.errors import VerifierError
from agentworld_gym.release.expect import (
    MASK_ALL,
    Masker,
    answer_facts,
    describe_delta,
    normalise_delta,
    state_delta,
)
from agentworld_gym.verifiers.answers import Expected, check_answer
from agentworld_gym.verifiers.base import Episode, Verification
from agentworld_gym.verifiers.competitors import pool_for
from agentworld_gym.verifiers.rubric import Judge

VERIFIER_TYPE = "release_rubric"


class ReleaseRubricVerifier:
    """Judge an episode against a release rubric (see the module docstring)."""

    def __init__(self, definition: dict[str, Any], judge: Judge | None = None) -> None:
        criteria = definition.get("criteria", [])
        if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
            raise VerifierError("release_rubric 'criteria' must be a list of strings")
        expected = definition.get("expected")
        if expected is not None and (
            not isinstance(expected, dict) or not isinstance(expected.get("state", {}), dict)
        ):
            raise VerifierError("release_rubric 'expected' must be an object with 'state'")
        if expected is None and not criteria:
            raise VerifierError("release_rubric needs criteria or an expected replay outcome")
        self.criteria: list[str] = criteria
        self.expected = expected
        self.ignore = frozenset(definition.get("ignore", []))
        self.unverified = str(definition.get("unverified", "the verified chain did not replay"))
        self.judge = judge
        self.masker = MASK_ALL
        if expected is not None:
            clock = expected.get("clock")
            self.masker = Masker.around(clock) if isinstance(clock, str) else MASK_ALL
            self._state = normalise_delta(expected.get("state", {}), self.masker)
            self._facts = [str(f) for f in expected.get("answer_facts", [])]

    def verify(self, episode: Episode) -> Verification:
        delta = state_delta(episode.initial, episode.final, self.ignore, self.masker)
        checks = self._replay_checks(episode, delta)
        details: dict[str, Any] = {"verifier": VERIFIER_TYPE}
        if self.judge is not None and self.criteria:
            rows = self._judged(episode, delta)
            breakdown = rows + [{**row, "weight": 0.0} for row in checks]
            details["judge"] = "llm"
        else:
            note = "not judged: no LLM judge; approximated by the replay checks"
            rows = [
                {"criterion": c, "weight": 0.0, "met": None, "by": "unjudged", "reason": note}
                for c in self.criteria
            ]
            breakdown = checks + rows
            details["judge"] = "replay"
            if self.expected is None:
                details["error"] = f"task is not reproducible: {self.unverified}"
        judged = [r for r in breakdown if r["met"] is not None and r["weight"] > 0]
        total = sum(r["weight"] for r in judged)
        reward = sum(r["weight"] for r in judged if r["met"]) / total if total > 0 else 0.0
        success = bool(judged) and all(r["met"] for r in breakdown if r["met"] is not None)
        return Verification(reward, breakdown, details, success=success)

    def _replay_checks(self, episode: Episode, delta: dict[str, Any]) -> list[dict[str, Any]]:
        if self.expected is None:
            return []
        actual = normalise_delta(delta, self.masker)
        same = actual == self._state
        if same:
            reason = f"same change as the verified chain: {describe_delta(delta, 300)}"
        else:
            want = describe_delta(self.expected.get("state", {}), 300)
            reason = f"expected {want}; got {describe_delta(delta, 300)}"
        rows = [
            {
                "criterion": "The final state shows the verified chain's changes "
                "(ids and timestamps masked, logs ignored).",
                # a read-only task: "nothing changed" pays only with the answer right
                "weight": 1.0 if self._state or self._facts else 0.0,
                "met": same,
                "by": "replay",
                "reason": reason,
            }
        ]
        if self._facts:
            asked = [Expected(f) for f in self._facts]
            key = "competitors:" + repr((episode.instruction, self._facts))
            pool = episode.initial.memo(key, lambda db: pool_for(db, asked, episode.instruction))
            result = check_answer(episode.answer, asked, request=episode.instruction, pool=pool)
            if not self._state and not result.met:
                rows[0]["met"] = False
                rows[0]["reason"] += " (counts once the answer is right)"
            rows.append(
                {
                    "criterion": "The answer mentions: " + "; ".join(self._facts),
                    "weight": 1.0,
                    "met": result.met,
                    "by": "replay",
                    "reason": result.reason,
                }
            )
        return rows

    def _judged(self, episode: Episode, delta: dict[str, Any]) -> list[dict[str, Any]]:
        calls = "\n".join(
            f"- {c.name}({c.arguments}) -> {'ok' if c.ok else 'error'}" for c in episode.calls
        )
        evidence = f"Tool calls:\n{calls or '(none)'}\nState changes: {describe_delta(delta)}"
        verdicts = self.judge.judge(  # type: ignore[union-attr]
            episode.instruction, episode.answer, self.criteria, evidence
        )
        rows = []
        for i, text in enumerate(self.criteria):
            verdict = verdicts[i] if i < len(verdicts) else None
            met = bool(verdict.met) if verdict is not None else False
            reason = str(verdict.reason) if verdict is not None else "no verdict from the judge"
            rows.append(
                {"criterion": text, "weight": 1.0, "met": met, "by": "llm", "reason": reason}
            )
        return rows


def build(definition: dict[str, Any], judge: Judge | None = None) -> ReleaseRubricVerifier:
    """Verifier factory for ``{"type": "release_rubric", ...}``."""
    return ReleaseRubricVerifier(definition, judge)


def expected_outcome(
    initial: Any, final: Any, last_output: Any, ignore: list[str], clock: str
) -> dict[str, Any]:
    """The ``expected`` object of a task from a replay: state change and answer facts."""
    masker = Masker.around(clock)
    return {
        "state": state_delta(initial, final, ignore, masker),
        "answer_facts": answer_facts(last_output, masker),
        "clock": clock,
    }


def install() -> None:
    """Make ``build_verifier`` know ``release_rubric``."""
    from agentworld_gym.verifiers import register_verifier

    register_verifier(VERIFIER_TYPE, build)

"""Verifiers turn an episode into a reward: rubric (criteria) or script (sandboxed code)."""

from __future__ import annotations

from typing import Any

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.base import CallRecord, Episode, Verification, Verifier
from agentworld_gym.verifiers.rubric import Judge, RubricVerifier

__all__ = [
    "CallRecord",
    "Episode",
    "Judge",
    "RubricVerifier",
    "Verification",
    "Verifier",
    "build_verifier",
]


def build_verifier(definition: dict[str, Any], judge: Judge | None = None) -> Verifier:
    """A verifier from a task's ``verifier`` object (``{"type": "rubric" | "script", ...}``)."""
    kind = definition.get("type") if isinstance(definition, dict) else None
    if kind == "rubric":
        return RubricVerifier(definition.get("criteria", []), judge=judge)
    if kind == "script":
        from agentworld_gym.verifiers.script import ScriptVerifier

        return ScriptVerifier(
            definition.get("source", ""),
            timeout_s=float(definition.get("timeout_s", 10.0)),
            memory_mb=int(definition.get("memory_mb", 1024)),
        )
    raise VerifierError(f"unknown verifier type {kind!r}; expected 'rubric' or 'script'")

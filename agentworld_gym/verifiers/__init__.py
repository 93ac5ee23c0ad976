"""Verifiers turn an episode into a reward: rubric (criteria) or script (sandboxed code)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentworld_gym.errors import VerifierError
from agentworld_gym.verifiers.base import CallRecord, Episode, Verification, Verifier, succeeded
from agentworld_gym.verifiers.rubric import Judge, RubricVerifier

__all__ = [
    "CallRecord",
    "Episode",
    "Judge",
    "RubricVerifier",
    "Verification",
    "Verifier",
    "build_verifier",
    "register_verifier",
    "answer_checked",
    "declared_fields",
    "needs_judge",
    "succeeded",
]

VerifierFactory = Callable[[dict[str, Any], Judge | None], Verifier]
_FACTORIES: dict[str, VerifierFactory] = {}


def register_verifier(kind: str, factory: VerifierFactory) -> None:
    """Teach :func:`build_verifier` a new ``verifier.type`` (``factory(definition, judge)``)."""
    _FACTORIES[kind] = factory


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
    factory = _FACTORIES.get(kind) if isinstance(kind, str) else None
    if factory is not None:
        return factory(definition, judge)
    known = ", ".join(repr(k) for k in ["rubric", "script", *sorted(_FACTORIES)])
    raise VerifierError(f"unknown verifier type {kind!r}; expected one of {known}")


def needs_judge(definition: dict[str, Any]) -> bool:
    """Whether a task's verifier has criteria that only an LLM judge can decide (a rubric
    criterion with no machine check, or a release rubric's prose)."""
    kind = definition.get("type") if isinstance(definition, dict) else None
    if kind == "rubric":
        return any(c.get("check") is None for c in definition.get("criteria", []))
    return kind == "release_rubric" and definition.get("expected") is None


def answer_checked(definition: dict[str, Any]) -> bool:
    """Whether a task's rubric checks values in the answer (an answer check's criterion)."""
    from agentworld_gym.verifiers.checks import ANSWER_CHECKS

    if not isinstance(definition, dict) or definition.get("type") != "rubric":
        return False
    return any(
        isinstance(check := c.get("check"), dict) and check.get("type") in ANSWER_CHECKS
        for c in definition.get("criteria", [])
    )


def declared_fields(definition: dict[str, Any]) -> list[str]:
    """The answer fields a task's rubric declares (named values of its ``answer`` checks)."""
    from agentworld_gym.verifiers.checks import answer_fields

    if not isinstance(definition, dict) or definition.get("type") != "rubric":
        return []
    names: list[str] = []
    for c in definition.get("criteria", []):
        check = c.get("check")
        if isinstance(check, dict) and check.get("type") == "answer":
            names += [n for n in answer_fields(check) if n not in names]
    return names

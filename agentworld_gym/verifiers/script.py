"""Script verifier: ``verify(initial_state, final_state, answer)`` run in the sandbox.

The script is untrusted (an LLM may have written it): it runs in a separate process with a
wall-clock timeout, memory and file limits and no network (see :mod:`agentworld_gym.sandbox`).
A script that hangs, crashes, misbehaves or returns something odd gives reward 0 and the reason
in ``info``; it never raises into, or hangs, the caller.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agentworld_gym.errors import VerifierError
from agentworld_gym.jsonsafe import clean_text
from agentworld_gym.sandbox import SandboxLimits, run_function
from agentworld_gym.verifiers.base import Episode, Verification


class ScriptVerifier:
    """Run a verification script over ``(initial_state, final_state, answer)``."""

    def __init__(self, source: str, *, timeout_s: float = 10.0, memory_mb: int = 1024) -> None:
        if not isinstance(source, str) or "def verify" not in source:
            raise VerifierError("a script verifier needs Python source defining verify(...)")
        self.source = source
        self.limits = SandboxLimits(wall_s=timeout_s, cpu_s=timeout_s, memory_mb=memory_mb)

    def verify(self, episode: Episode) -> Verification:
        result = run_function(
            self.source,
            "verify",
            # pre-serialised states: the unchanged initial state is serialised once per env
            [
                orjson.Fragment(episode.initial.snapshot_json()),
                orjson.Fragment(episode.final.snapshot_json()),
                clean_text(episode.answer) if isinstance(episode.answer, str) else "",
            ],
            limits=self.limits,
        )
        details: dict[str, Any] = {"verifier": "script", "isolation": result.isolation}
        if not result.ok:
            details["error"] = f"verification script failed: {result.error}"
            details["error_type"] = result.error_type
            return Verification(0.0, [], details)
        value = result.value
        if isinstance(value, bool):
            reward = float(value)
        elif isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
            reward = float(value)
        else:
            details["error"] = (
                f"verification script returned {value!r:.80}; expected a bool or a number in [0, 1]"
            )
            return Verification(0.0, [], details)
        details["script_result"] = value
        return Verification(reward, [], details)

"""What every verifier sees and returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from agentworld_gym.database import Database


@dataclass(frozen=True)
class CallRecord:
    """One tool call the agent made, as the verifier sees it."""

    name: str
    arguments: Any
    ok: bool
    output: str = ""
    """The result as the agent saw it (JSON text)."""


@dataclass
class Episode:
    """The evidence of one episode: initial and final state, the calls, the answer."""

    initial: Database
    final: Database
    answer: str
    calls: list[CallRecord] = field(default_factory=list)
    instruction: str = ""
    fields: dict[str, Any] = field(default_factory=dict)
    """Named answer values submitted with the answer (see ``answer`` checks' ``name``)."""
    answers: list[str] = field(default_factory=list)
    """The answer to each user turn of a multi-turn task, in order (the last is ``answer``);
    empty for a single-turn task."""


@dataclass
class Verification:
    """A reward in [0, 1], whether the task was done, and why.

    ``reward`` is partial credit (for shaping); ``success`` is the one definition of done:
    every criterion met (a rubric) or a script's full score. Evaluation, the arena and the
    training metrics count ``success``.
    """

    reward: float
    breakdown: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    success: bool | None = None
    """``None``: the same as ``reward == 1``."""

    def __post_init__(self) -> None:
        if self.success is None:
            self.success = self.reward >= 1.0 - 1e-9

    def to_info(self) -> dict[str, Any]:
        return {
            "reward": self.reward,
            "success": self.success,
            "breakdown": self.breakdown,
            **self.details,
        }


class Verifier(Protocol):
    def verify(self, episode: Episode) -> Verification: ...


def succeeded(verification: dict[str, Any] | None, reward: float, threshold: float = 1.0) -> bool:
    """Whether an episode succeeded: its verification's ``success`` (every criterion met);
    with a ``threshold`` below 1, a reward at or above it (a looser bar some reports use)."""
    if threshold < 1.0 - 1e-9:
        return reward >= threshold - 1e-9
    flag = (verification or {}).get("success")
    return bool(flag) if flag is not None else reward >= 1.0 - 1e-9

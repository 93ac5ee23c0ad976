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


@dataclass
class Episode:
    """The evidence of one episode: initial and final state, the calls, the answer."""

    initial: Database
    final: Database
    answer: str
    calls: list[CallRecord] = field(default_factory=list)
    instruction: str = ""


@dataclass
class Verification:
    """A reward in [0, 1] and why: the per-criterion breakdown or the script's outcome."""

    reward: float
    breakdown: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def to_info(self) -> dict[str, Any]:
        return {"reward": self.reward, "breakdown": self.breakdown, **self.details}


class Verifier(Protocol):
    def verify(self, episode: Episode) -> Verification: ...

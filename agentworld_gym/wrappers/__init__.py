"""Wrappers: views of an AgentWorld environment for other kinds of agents.

- :class:`AdmissibleActions` — ``info["admissible_actions"]``, a finite menu of valid tool
  calls built from the schemas and the values seen so far (for small policies and bandits).
- :class:`DiscreteToolActions` — ``Discrete(n)`` actions over that menu.
- :class:`HashedBagOfWords` — a fixed-size ``Box`` observation of the episode's text.
- :func:`make_sb3_env` — all three stacked: what Stable-Baselines3 ``check_env`` accepts.
"""

from __future__ import annotations

from agentworld_gym.wrappers.admissible import AdmissibleActions, ValueMemory
from agentworld_gym.wrappers.numeric import DiscreteToolActions, HashedBagOfWords, make_sb3_env

__all__ = [
    "AdmissibleActions",
    "DiscreteToolActions",
    "HashedBagOfWords",
    "ValueMemory",
    "make_sb3_env",
]

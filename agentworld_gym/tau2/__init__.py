"""τ²-bench domains (retail, airline, telecom) as AgentWorld environments, on tau2's own code.

>>> import gymnasium as gym, agentworld_gym.tau2 as tau2          # doctest: +SKIP
>>> tau2.register("/path/to/tau2-bench")                          # doctest: +SKIP
['AgentWorld/tau2-airline-v0', 'AgentWorld/tau2-retail-v0', 'AgentWorld/tau2-telecom-v0']
>>> env = gym.make("AgentWorld/tau2-retail-v0", user=tau2.Tau2LLMUser(backend))  # doctest: +SKIP

The checkout is imported as it is (:mod:`.checkout`): the domain's tools, database and
evaluators are tau2's (:mod:`.env`, :mod:`.evaluation`); the user simulator is any backend of
the package's LLM interface (:mod:`.users`). ``AGENTWORLD_TAU2=/path/to/tau2-bench`` registers
the domains when this module is imported. ``agentworld import-tau2 PATH`` checks a checkout
and replays every task's gold actions through these environments.
"""

from __future__ import annotations

import os
from pathlib import Path

import gymnasium as gym

from agentworld_gym.tau2.users import Tau2LLMUser, Tau2ScriptedUser

__all__ = ["DOMAINS", "Tau2LLMUser", "Tau2ScriptedUser", "gym_id", "register"]

DOMAINS = ("retail", "airline", "telecom")
"""The domains registered by default (a checkout's other domains can be named)."""


def gym_id(domain: str) -> str:
    """``AgentWorld/tau2-<domain>-v0``."""
    return f"AgentWorld/tau2-{domain}-v0"


def register(
    checkout: str | Path | None = None, domains: tuple[str, ...] | None = None
) -> list[str]:
    """Register a checkout's domains with Gymnasium (lazily: nothing of tau2 is imported).

    Args:
        checkout: the tau2-bench folder (default: ``$AGENTWORLD_TAU2``).
        domains: which domains (default: :data:`DOMAINS` that the checkout has).
    """
    path = checkout or os.environ.get("AGENTWORLD_TAU2")
    if not path:
        return []
    root = Path(path).expanduser().resolve()
    present = {p.parent.name for p in (root / "src" / "tau2" / "domains").glob("*/environment.py")}
    chosen = [d for d in (domains or DOMAINS) if d in present]
    ids = []
    for domain in chosen:
        gym.register(
            id=gym_id(domain),
            entry_point="agentworld_gym.tau2.env:Tau2Env",
            kwargs={"checkout": str(root), "domain": domain},
            disable_env_checker=True,
        )
        ids.append(gym_id(domain))
    return ids


register()

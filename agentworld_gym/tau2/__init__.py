"""τ²-bench domains (retail, airline, telecom) as AgentWorld environments, on tau2's own code.

>>> import gymnasium as gym, agentworld_gym.tau2 as tau2          # doctest: +SKIP
>>> tau2.register("/path/to/tau2-bench")                          # doctest: +SKIP
['AgentWorld/tau2-retail-v0', 'AgentWorld/tau2-airline-v0', 'AgentWorld/tau2-telecom-v0']
>>> env = gym.make("AgentWorld/tau2-retail-v0", user=tau2.Tau2LLMUser(backend))  # doctest: +SKIP

The checkout is imported as it is (:mod:`.checkout`): the domain's tools, database and
evaluators are tau2's (:mod:`.env`, :mod:`.evaluation`); the user simulator is any backend of
the package's LLM interface (:mod:`.users`). With ``AGENTWORLD_TAU2=/path/to/tau2-bench`` set,
``import agentworld_gym`` registers the domains and the ``tau2-<domain>`` evaluation suites
(:mod:`agentworld_gym.benchmarks_ext.tau2`). Registering reads a folder listing, nothing of
tau2 is imported before the first ``gym.make``.
"""

from __future__ import annotations

import os
from pathlib import Path

from agentworld_gym.tau2.users import Tau2LLMUser, Tau2ScriptedUser

__all__ = ["DOMAINS", "Tau2LLMUser", "Tau2ScriptedUser", "checkout_of", "gym_id", "register"]

DOMAINS = ("retail", "airline", "telecom")
"""The domains registered by default (a checkout's other domains can be named)."""

_CHECKOUTS: dict[str, tuple[str, str]] = {}
"""Gymnasium id → (checkout folder, domain) of every registered τ² environment."""


def gym_id(domain: str) -> str:
    """``AgentWorld/tau2-<domain>-v0``."""
    return f"AgentWorld/tau2-{domain}-v0"


def checkout_of(env_id: str) -> tuple[str, str]:
    """The (checkout, domain) a registered τ² environment runs on."""
    from agentworld_gym.errors import RegistrationError

    if env_id not in _CHECKOUTS:
        raise RegistrationError(
            f"{env_id} is not registered: set AGENTWORLD_TAU2 or call agentworld_gym.tau2.register"
        )
    return _CHECKOUTS[env_id]


def register(
    checkout: str | Path | None = None, domains: tuple[str, ...] | None = None
) -> list[str]:
    """Register a checkout's domains with Gymnasium and the package registry.

    Args:
        checkout: the tau2-bench folder (default: ``$AGENTWORLD_TAU2``; neither: nothing).
        domains: which domains (default: those of :data:`DOMAINS` the checkout has).

    Returns:
        The Gymnasium ids registered.
    """
    from agentworld_gym.registry import IndexEntry, register_external

    path = checkout or os.environ.get("AGENTWORLD_TAU2")
    if not path:
        return []
    root = Path(path).expanduser().resolve()
    present = {p.parent.name for p in (root / "src" / "tau2" / "domains").glob("*/environment.py")}
    ids = []
    for domain in [d for d in (domains or DOMAINS) if d in present]:
        entry = IndexEntry(
            id=f"tau2-{domain}",
            version=0,
            name=f"τ²-bench {domain}",
            path="",
            taxonomy={"l1": "tau2-bench", "l2": domain, "l3": ""},
        )
        _CHECKOUTS[entry.gym_id] = (str(root), domain)
        ids.append(
            register_external(
                entry, _loader(str(root), domain), entry_point="agentworld_gym.tau2.env:make_env"
            )
        )
    return ids


def _loader(checkout: str, domain: str):
    def load():
        from agentworld_gym.tau2.spec import build_spec

        return build_spec(checkout, domain)

    return load

"""τ²-bench's domains and their evaluation suites (``tau2-retail``, ``tau2-airline``,
``tau2-telecom``); the environments themselves live in :mod:`agentworld_gym.tau2`.

τ²-bench is not on PyPI: ``AGENTWORLD_TAU2`` names a local checkout, and its domains are
registered from it; a suite's customers are the LLM ``AGENTWORLD_TAU2_USER_MODEL`` names
(:func:`agentworld_gym.tau2.env.default_user`). Missing either, the suites are listed with
what to set.
"""

from __future__ import annotations

import importlib.util
import os

from agentworld_gym.suites import register_suite
from agentworld_gym.tau2 import DOMAINS, gym_id
from agentworld_gym.tau2 import register as register_envs

__all__ = ["register", "requirement"]


def requirement(domain: str, registered: list[str]) -> str | None:
    """What a ``tau2-<domain>`` suite still needs to run here (``None``: nothing)."""
    if importlib.util.find_spec("loguru") is None:
        return "pip install 'agentworld-gym[tau2]' (tau2's light dependencies)"
    if not os.environ.get("AGENTWORLD_TAU2"):
        return (
            "set AGENTWORLD_TAU2 to a tau2-bench checkout (check it: agentworld import-tau2 PATH)"
        )
    if gym_id(domain) not in registered:
        return f"the checkout in AGENTWORLD_TAU2 has no {domain} domain"
    if not os.environ.get("AGENTWORLD_TAU2_USER_MODEL"):
        return "set AGENTWORLD_TAU2_USER_MODEL (and _BASE_URL) to the user simulator's model"
    return None


def register() -> None:
    """Register the checkout's domains (when ``AGENTWORLD_TAU2`` is set) and the suites."""
    registered = register_envs()
    for domain in DOMAINS:
        register_suite(
            f"tau2-{domain}",
            {gym_id(domain): domain},
            description=f"τ²-bench {domain}: tau2's tools, database and evaluators, LLM user",
            requires=requirement(domain, registered),
        )

"""BFCL V4 multi-turn as AgentWorld environments, scored by BFCL's own checker.

The Berkeley Function Calling Leaderboard's multi-turn categories (``base``, ``miss_func``,
``miss_param``, ``long_context``; 200 tasks each) become four held-out environments::

    AgentWorld/bfcl-multi-turn-base-v0          AgentWorld/bfcl-multi-turn-miss-param-v0
    AgentWorld/bfcl-multi-turn-miss-func-v0     AgentWorld/bfcl-multi-turn-long-context-v0

and the suites ``bfcl-multi-turn`` (all four) and ``bfcl-multi-turn-<category>``. They need
the ``bfcl-eval`` package, whose pins (numpy, vllm, ...) conflict with ours; its data, API
classes and checker need none of them, so install it without dependencies::

    pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0

(``make setup`` does). Without it nothing is registered and ``import agentworld_gym`` is
unaffected. See :mod:`agentworld_gym.benchmarks_ext.bfcl.env` for how an episode maps onto
BFCL's inference loop.
"""

from __future__ import annotations

import importlib.util

from agentworld_gym.registry import IndexEntry, register_external
from agentworld_gym.suites import register_suite

__all__ = ["BFCL_VERSION", "CATEGORIES", "INSTALL_HINT", "available", "env_id", "register"]

BFCL_VERSION = "2026.3.23"
"""The ``bfcl-eval`` release these environments were built and checked against."""

CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
"""BFCL V4's multi-turn categories, in its leaderboard's order."""

INSTALL_HINT = (
    "install bfcl-eval without its pinned dependencies: "
    f"pip install --no-deps bfcl-eval=={BFCL_VERSION} mpmath==1.3.0"
)

TASKS_PER_CATEGORY = 200


def available() -> bool:
    """Whether ``bfcl-eval`` and the one dependency its classes use (``mpmath``, for
    MathAPI) are installed, checked without importing them."""
    return all(importlib.util.find_spec(name) is not None for name in ("bfcl_eval", "mpmath"))


def slug(category: str) -> str:
    """``miss_func`` → ``bfcl-multi-turn-miss-func``."""
    return "bfcl-multi-turn-" + category.replace("_", "-")


def env_id(category: str) -> str:
    """The Gymnasium id of a category's environment."""
    return f"AgentWorld/{slug(category)}-v0"


def register() -> None:
    """Register the four environments (when bfcl-eval is installed) and the suites."""
    missing = None if available() else INSTALL_HINT
    if missing is None:
        for category in CATEGORIES:
            entry = IndexEntry(
                id=slug(category),
                version=0,
                name=f"BFCL V4 multi-turn ({category})",
                path="",
                taxonomy={"l1": "BFCL multi-turn", "l2": category, "l3": ""},
                n_tools=0,
                n_tasks=TASKS_PER_CATEGORY,
            )
            register_external(
                entry,
                _loader(category),
                entry_point="agentworld_gym.benchmarks_ext.bfcl.env:make_env",
            )
    categories = {env_id(c): c for c in CATEGORIES}
    register_suite(
        "bfcl-multi-turn",
        categories,
        description="BFCL V4 multi-turn: base, miss_func, miss_param, long_context (800 tasks)",
        split="test",
        requires=missing,
    )
    for category in CATEGORIES:
        register_suite(
            slug(category),
            {env_id(category): category},
            description=f"BFCL V4 multi-turn {category} (200 tasks)",
            split="test",
            requires=missing,
        )


def _loader(category: str):
    def load():
        from agentworld_gym.benchmarks_ext.bfcl.data import build_spec

        return build_spec(category)

    return load

"""Held-out benchmarks as AgentWorld environments (BFCL multi-turn, τ²-bench, ...).

Each module here wraps one external benchmark: its tools, state and, above all, its own
checker, so that an episode's ``success`` is the benchmark's own verdict. A module that
defines ``register()`` has it called by ``import agentworld_gym`` (through
:func:`register_all`): it registers its environments with
:func:`agentworld_gym.registry.register_external` (only when the benchmark's package is
installed) and its evaluation suites with :func:`agentworld_gym.suites.register_suite`.
Keep a module's top level light: the benchmark itself is imported on first ``gym.make``.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil

logger = logging.getLogger(__name__)


def register_all() -> None:
    """Call ``register()`` of every module of this package that has one."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        register = getattr(module, "register", None)
        if callable(register):
            register()

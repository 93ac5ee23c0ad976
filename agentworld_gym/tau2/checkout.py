"""A local τ²-bench checkout, imported as it is: its domains, tasks, tools and evaluators.

τ²-bench is not on PyPI, so the user points us at a checkout (``git clone
sierra-research/tau2-bench``). Its layout::

    src/tau2/environment/       Environment, ToolKitBase, Tool, DB
    src/tau2/evaluator/         DB replay, action, communicate and NL-assertion evaluators
    src/tau2/domains/<d>/       data_model.py, tools.py, environment.py (get_environment, get_tasks)
    data/tau2/domains/<d>/      db.json | db.toml, tasks.json, split_tasks.json, policy.md

The modules are imported from ``src/`` under their own name ``tau2`` — with one difference:
``tau2/__init__.py`` is not run. It imports the whole framework (agents, the orchestrator,
LLM clients such as litellm) while the environment, the domains and the DB/action/communicate
evaluators need only light packages (the ``tau2`` extra). A process holds one checkout.
"""

from __future__ import annotations

import ast
import inspect
import logging
import os
import sys
import types
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError

__all__ = ["Tau2Checkout", "Tau2Domain"]

log = logging.getLogger(__name__)

EXTRA_HINT = "pip install 'agentworld-gym[tau2]'"


@dataclass
class Tau2Domain:
    """One domain of a checkout: its environment factory, tasks and splits.

    ``new_environment()`` is a fresh tau2 ``Environment`` on a private copy of the domain's
    database; it is also the constructor tau2's ``EnvironmentEvaluator`` calls to replay the
    predicted and the gold trajectories.
    """

    name: str
    module: types.ModuleType
    tasks: list[Any]
    splits: dict[str, list[str]]
    _dbs: dict[str, Any] = field(default_factory=dict, repr=False)
    spec: Any = field(default=None, repr=False)
    """The domain as an EnvSpec, once built (:mod:`agentworld_gym.tau2.spec`)."""

    def new_environment(self, **kwargs: Any) -> Any:
        """A fresh environment (deep copies of the loaded databases; kwargs as tau2 passes)."""
        get_environment = self.module.get_environment
        params = inspect.signature(get_environment).parameters
        if not self._dbs:
            env = get_environment(**kwargs)
            for key, kit in (("db", env.tools), ("user_db", env.user_tools)):
                if key in params and kit is not None and kit.db is not None:
                    self._dbs[key] = (type(kit.db), kit.db.model_dump())
            return env
        # validating the dumped records again is the cheapest deep copy (retail: 27 ms,
        # against 230 ms for model_copy(deep=True) and 0.2 s to read db.json)
        copies = {k: cls.model_validate(data) for k, (cls, data) in self._dbs.items()}
        return get_environment(**copies, **kwargs)

    def tasks_in(self, split: str | None) -> list[Any]:
        """The tasks of a split (``None`` or ``"all"``: every task)."""
        if split in (None, "all"):
            return list(self.tasks)
        if split not in self.splits:
            raise ConfigError(
                f"domain {self.name!r} has no split {split!r}; its splits: "
                f"{', '.join(sorted(self.splits)) or '(none)'}, or 'all'"
            )
        wanted = set(self.splits[split])
        return [t for t in self.tasks if t.id in wanted]


class Tau2Checkout:
    """The τ²-bench checkout at ``path`` (made importable on first use)."""

    _active: Tau2Checkout | None = None

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).expanduser().resolve()
        self.src = self.path / "src" / "tau2"
        self.data = self.path / "data"
        missing = [
            p
            for p in (self.src / "environment" / "environment.py", self.data / "tau2" / "domains")
            if not p.exists()
        ]
        if missing:
            raise ConfigError(
                f"{self.path} is not a tau2-bench checkout: missing "
                + ", ".join(str(p.relative_to(self.path)) for p in missing)
            )
        self._domains: dict[str, Tau2Domain] = {}

    @classmethod
    def open(cls, path: str | Path) -> Tau2Checkout:
        """The checkout at ``path``, shared by every env of the process."""
        resolved = Path(path).expanduser().resolve()
        if cls._active is not None and cls._active.path == resolved:
            return cls._active
        checkout = cls(resolved)
        checkout.activate()
        cls._active = checkout
        return checkout

    def domain_names(self) -> list[str]:
        """Domains with code (``src/tau2/domains/<d>/environment.py``) and data."""
        return sorted(
            p.parent.name
            for p in (self.src / "domains").glob("*/environment.py")
            if (self.data / "tau2" / "domains" / p.parent.name).is_dir()
        )

    def activate(self) -> None:
        """Make ``import tau2.<module>`` load this checkout's modules (not its ``__init__``)."""
        current = sys.modules.get("tau2")
        if current is not None:
            paths = [Path(p).resolve() for p in getattr(current, "__path__", [])]
            if self.src not in paths:
                raise ConfigError(
                    f"another tau2 is already imported in this process ({paths or current}); "
                    f"one process can hold one tau2 checkout, asked for {self.path}"
                )
            return
        os.environ["TAU2_DATA_DIR"] = str(self.data)  # tau2.utils.utils reads it at import
        try:
            from loguru import logger
        except ImportError as exc:
            raise ConfigError(f"tau2's modules need its light dependencies: {EXTRA_HINT}") from exc
        logger.disable("tau2")  # its INFO/WARNING lines would flood every episode
        package = types.ModuleType("tau2")
        package.__path__ = [str(self.src)]
        package.__file__ = str(self.src / "__init__.py")
        sys.modules["tau2"] = package
        try:
            import_module("tau2.environment.environment")
        except ImportError as exc:
            del sys.modules["tau2"]
            raise ConfigError(
                f"cannot import tau2's environment from {self.path}: {exc} ({EXTRA_HINT})"
            ) from exc

    def domain(self, name: str) -> Tau2Domain:
        """A domain by name (its tasks loaded once)."""
        if name in self._domains:
            return self._domains[name]
        known = self.domain_names()
        if name not in known:
            import difflib

            close = difflib.get_close_matches(name, known, n=2)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ConfigError(f"{self.path} has no domain {name!r} (it has {known}).{hint}")
        self.activate()
        module = import_module(f"tau2.domains.{name}.environment")
        tasks = _load_tasks(module, name, self.data / "tau2" / "domains" / name)
        splits: dict[str, list[str]] = {}
        if hasattr(module, "get_tasks_split"):
            try:
                splits = dict(module.get_tasks_split() or {})
            except (FileNotFoundError, ValueError):
                splits = {}
        domain = self._domains[name] = Tau2Domain(name, module, tasks, splits)
        return domain

    def user_guidelines(self, use_tools: bool = False) -> str:
        """tau2's global user-simulator guidelines (with tools: the telecom variant)."""
        folder = self.data / "tau2" / "user_simulator"
        name = "simulation_guidelines_tools.md" if use_tools else "simulation_guidelines.md"
        path = folder / name
        return path.read_text() if path.is_file() else ""

    def nl_assertion_prompt(self) -> str:
        """The system prompt of tau2's NL-assertion judge, read from its source.

        The module imports tau2's LLM client (litellm) at import time, so its prompt is taken
        from the source text instead of importing it.
        """
        path = self.src / "evaluator" / "evaluator_nl_assertions.py"
        if not path.is_file():
            raise ConfigError(f"{path} not found: cannot judge NL assertions as tau2 does")
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "system_prompt" for t in node.targets
            ):
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    return node.value.value
        raise ConfigError(f"{path}: no system_prompt string found")


def _load_tasks(module: types.ModuleType, name: str, folder: Path) -> list[Any]:
    """Every task of a domain, as tau2 loads them (``get_tasks(None)``).

    A checkout missing the main task file (a partial copy; telecom's is large) falls back to
    the domain's other task files (``tasks_small.json``, ``tasks_full.json``), with a warning.
    """
    try:
        return list(module.get_tasks(None))
    except FileNotFoundError as exc:
        from tau2.data_model.tasks import Task
        from tau2.utils import load_file

        for fallback in ("tasks_small.json", "tasks_full.json"):
            path = folder / fallback
            if path.is_file():
                data = load_file(path)
                data = data["tasks"] if isinstance(data, dict) else data
                tasks = [Task.model_validate(t) for t in data]
                log.warning("tau2 %s: %s; using %s (%d tasks)", name, exc, fallback, len(tasks))
                return tasks
        raise ConfigError(f"tau2 domain {name!r}: {exc}") from exc

"""The bridge to ``agentworld_gym.synthesis.tasks`` (graph-walk and program task synthesis).

That package is being written alongside this one and its API is not final, so everything
that depends on it lives here, behind :class:`~agentworld_gym.evolution.protocols.TaskSynthesizer`.
The adapter is written against the most likely shape of its entry point:

- a function ``synthesize_tasks(spec, n, seed, **options) -> list[TaskSpec]`` (also accepted
  under the name ``synthesize``), or
- a class ``TaskSynthesizer`` / ``GraphTaskSynthesizer`` whose instances have
  ``synthesize(spec, n, seed, **options)``;

and passes the guidelines as ``guidelines=`` if the callable takes that, else each knob
under the first of its accepted names (:data:`_KNOBS`). As of this writing the package has
walks (``walk.py``, ``WalkConfig``) and task building but no entry point yet, so
``default_synthesizer`` picks the built-in one; once an entry point lands, adapting is a
matter of this module only. :func:`default_synthesizer` falls back to the built-in
:class:`~agentworld_gym.evolution.fallback.FallbackSynthesizer` when the package is absent
or exposes none of these.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from collections.abc import Callable
from typing import Any

from agentworld_gym.evolution.fallback import FallbackSynthesizer
from agentworld_gym.evolution.protocols import Guidelines, TaskSynthesizer
from agentworld_gym.spec import EnvSpec, TaskSpec

logger = logging.getLogger(__name__)

MODULE = "agentworld_gym.synthesis.tasks"
_FUNCTIONS = ("synthesize_tasks", "synthesize")
_CLASSES = ("TaskSynthesizer", "GraphTaskSynthesizer")
_KNOBS: dict[str, tuple[str, ...]] = {
    "walk_length": ("walk_length", "max_length", "max_walk_length"),
    "writes": ("writes", "max_writes"),
    "distractors": ("distractors",),
    "program_share": ("program_share", "program_fraction"),
    "focus_tools": ("focus_tools",),
    "patterns": ("patterns",),
}
"""Guideline knob -> parameter names it is passed under (the first one accepted wins; its
``WalkConfig`` today calls the walk length ``max_length`` and the writes ``max_writes``)."""


class AdapterUnavailable(RuntimeError):
    """The task-synthesis package is missing or has no entry point this adapter knows."""


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


class SynthesisTasksAdapter:
    """``synthesis.tasks`` behind the :class:`TaskSynthesizer` protocol.

    Falls back to ``fallback`` for an environment where the package yields nothing (e.g. it
    only handles some tool kinds) or raises (logged as a warning: a synthesis bug on one
    environment must not end a long run), so the loop always gets tasks where possible.
    Without a ``fallback`` the exception propagates.
    """

    def __init__(
        self, fn: Callable[..., Any], fallback: TaskSynthesizer | None = None, name: str = ""
    ) -> None:
        self.fn = fn
        self.fallback = fallback
        self.name = name or getattr(fn, "__qualname__", "synthesis.tasks")

    @classmethod
    def create(cls, fallback: TaskSynthesizer | None = None) -> SynthesisTasksAdapter:
        try:
            module = importlib.import_module(MODULE)
        except ImportError as exc:
            raise AdapterUnavailable(f"{MODULE} is not importable: {exc}") from exc
        for name in _FUNCTIONS:
            fn = getattr(module, name, None)
            if callable(fn) and not inspect.isclass(fn):
                return cls(fn, fallback, f"{MODULE}.{name}")
        for name in _CLASSES:
            klass = getattr(module, name, None)
            if inspect.isclass(klass):
                try:
                    instance = klass()
                except TypeError as exc:
                    raise AdapterUnavailable(f"{MODULE}.{name}() needs arguments: {exc}") from exc
                if callable(getattr(instance, "synthesize", None)):
                    return cls(instance.synthesize, fallback, f"{MODULE}.{name}")
        raise AdapterUnavailable(f"{MODULE} exposes none of {_FUNCTIONS + _CLASSES}")

    def synthesize(
        self, spec: EnvSpec, n: int, seed: int, guidelines: Guidelines | None = None
    ) -> list[TaskSpec]:
        options: dict[str, Any] = {}
        if guidelines is not None:
            if _accepts(self.fn, "guidelines"):
                options["guidelines"] = guidelines
            else:
                for knob, names in _KNOBS.items():
                    name = next((n for n in names if _accepts(self.fn, n)), None)
                    if name is not None:
                        options[name] = getattr(guidelines, knob)
        try:
            tasks = list(self.fn(spec, n, seed, **options) or [])
        except Exception as exc:  # one env's failure must not end a long run
            if self.fallback is None:
                raise
            logger.warning(
                "%s failed on %s (seed %d): %s: %s; using the fallback synthesizer",
                self.name,
                spec.id,
                seed,
                type(exc).__name__,
                exc,
                exc_info=logger.isEnabledFor(logging.DEBUG),
            )
            tasks = []
        tasks = [t if isinstance(t, TaskSpec) else TaskSpec(**t) for t in tasks]
        if not tasks and self.fallback is not None:
            return self.fallback.synthesize(spec, n, seed, guidelines)
        return tasks


def default_synthesizer() -> TaskSynthesizer:
    """The task-synthesis package when it is usable, else the built-in fallback."""
    fallback = FallbackSynthesizer()
    try:
        return SynthesisTasksAdapter.create(fallback)
    except AdapterUnavailable as exc:
        logger.info("using the built-in fallback task synthesizer (%s)", exc)
        return fallback

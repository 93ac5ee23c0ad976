"""Code-implemented environments: the Agent-World release, imported and run out of process.

* :mod:`.runtime` — the ``"release"`` tool implementation: pooled, isolated worker processes
  over per-episode database copies, mirrored into the episode's ``Database``;
* :mod:`.importer` and :mod:`.layout` — ``agentworld import-release``: the published
  environments as a separate catalog root;
* :mod:`.verifier` and :mod:`.expect` — the ``release_rubric`` verifier (LLM judge, or a
  deterministic replay comparison).

Importing this package registers the ``"release"`` implementation type and the
``release_rubric`` verifier; :func:`register_release_catalog` also registers a catalog root.

Example (the command line does the same: ``agentworld import-release PATH``)::

    >>> import gymnasium as gym
    >>> from agentworld_gym.release import import_release, ImportOptions
    >>> report = import_release("release/", ImportOptions(only=["9900001"]))  # doctest: +SKIP
    >>> env = gym.make("AgentWorld/harbor-tasks-v0")  # doctest: +SKIP

Other processes find the catalog through ``AGENTWORLD_CATALOGS=<root>``; the core imports
:mod:`.runtime` the first time it builds a ``"release"`` tool, so a bare
``import agentworld_gym`` is enough.
"""

from __future__ import annotations

from pathlib import Path

from agentworld_gym.registry import register_catalog
from agentworld_gym.release.importer import (
    EnvReport,
    ImportOptions,
    ImportReport,
    default_catalog_root,
    import_release,
    replay_chain,
)
from agentworld_gym.release.layout import ReleaseFormatError
from agentworld_gym.release.runtime import RuntimeOptions, ToolRuntime, runtime_for
from agentworld_gym.release.verifier import ReleaseRubricVerifier


def register_release_catalog(root: str | Path | None = None) -> list[str]:
    """Register an imported catalog root (default :func:`default_catalog_root`) with Gymnasium."""
    return register_catalog(Path(root) if root is not None else default_catalog_root())


__all__ = [
    "EnvReport",
    "ImportOptions",
    "ImportReport",
    "ReleaseFormatError",
    "ReleaseRubricVerifier",
    "RuntimeOptions",
    "ToolRuntime",
    "default_catalog_root",
    "import_release",
    "register_release_catalog",
    "replay_chain",
    "runtime_for",
]

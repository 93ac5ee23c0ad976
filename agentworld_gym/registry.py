"""Register every catalog environment with Gymnasium, lazily, from a compact index.

A catalog root (``envs_generated/`` by default) holds one folder per environment and
``index.json``::

    {"format_version": 1,
     "envs": [{"id": "notion", "version": 0, "name": "Notion", "path": "notion",
               "taxonomy": {"l1": ..., "l2": ..., "l3": ...}, "n_tools": 19, "n_tasks": 45}]}

Importing the package reads only the index and calls ``gymnasium.register`` once per entry;
an environment's folder is read on its first ``gym.make``. More roots can be added with
:func:`register_catalog` or the ``AGENTWORLD_CATALOGS`` variable (paths separated by ``:``).
"""

from __future__ import annotations

import difflib
import gc
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson

from agentworld_gym.errors import RegistrationError, SpecError
from agentworld_gym.spec import EnvSpec

NAMESPACE = "AgentWorld"
INDEX_FILE = "index.json"
DEFAULT_ROOT = Path(__file__).resolve().parent.parent / "envs_generated"


@dataclass(frozen=True)
class IndexEntry:
    """One environment as the index describes it (enough to list and register it)."""

    id: str
    version: int
    name: str
    path: str
    taxonomy: dict[str, str] = field(default_factory=dict)
    n_tools: int = 0
    n_tasks: int = 0
    root: str = ""

    @property
    def gym_id(self) -> str:
        return f"{NAMESPACE}/{self.id}-v{self.version}"

    @property
    def folder(self) -> Path:
        return Path(self.root) / self.path


_ENTRIES: dict[str, IndexEntry] = {}
_SPECS: dict[str, EnvSpec] = {}
_EXTERNAL: dict[str, tuple[IndexEntry, Callable[[], EnvSpec]]] = {}
"""Held-out environments built in memory (imported benchmarks): gym id → (entry, loader)."""


def default_roots() -> list[Path]:
    """``envs_generated/`` of this checkout, then the roots in ``AGENTWORLD_CATALOGS``."""
    roots = [Path(os.environ.get("AGENTWORLD_ENVS", DEFAULT_ROOT))]
    extra = os.environ.get("AGENTWORLD_CATALOGS", "")
    roots += [Path(p) for p in extra.split(os.pathsep) if p]
    return roots


def read_index(root: str | Path) -> list[IndexEntry]:
    """The entries of ``root/index.json`` (an empty list when there is none)."""
    root = Path(root)
    path = root / INDEX_FILE
    if not path.is_file():
        return []
    data = orjson.loads(path.read_bytes())
    if data.get("format_version") != 1:
        raise SpecError(f"{path}: unsupported index format_version {data.get('format_version')}")
    return [IndexEntry(**{**e, "root": str(root)}) for e in data["envs"]]


def entry_for(spec: EnvSpec, path: str) -> IndexEntry:
    return IndexEntry(
        id=spec.id,
        version=spec.version,
        name=spec.name,
        path=path,
        taxonomy=dict(spec.taxonomy),
        n_tools=len(spec.tools),
        n_tasks=len(spec.tasks),
    )


def write_index(root: str | Path, entries: list[IndexEntry]) -> Path:
    """Write ``index.json`` atomically (a crash leaves the previous index intact)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    rows = []
    for e in sorted(entries, key=lambda e: (e.id, e.version)):
        row = asdict(e)
        row.pop("root")
        rows.append(row)
    payload = orjson.dumps({"format_version": 1, "envs": rows}, option=orjson.OPT_INDENT_2)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".index-", suffix=".json")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only
        os.replace(tmp, root / INDEX_FILE)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return root / INDEX_FILE


def build_index(root: str | Path) -> Path:
    """Scan every ``*/env.json`` under ``root`` and write its index."""
    root = Path(root)
    entries = [
        entry_for(EnvSpec.load(p.parent), p.parent.name) for p in sorted(root.glob("*/env.json"))
    ]
    return write_index(root, entries)


def register_catalog(root: str | Path, *, replace: bool = False) -> list[str]:
    """Register every environment of a catalog root; returns the Gymnasium ids.

    Args:
        root: the catalog folder (with ``index.json``).
        replace: let this root's entries take over ids another root registered (an evolved
            copy of a catalog); otherwise such a clash raises :class:`RegistrationError`.
    """
    ids = []
    for entry in read_index(root):
        gym_id = entry.gym_id
        if gym_id in _ENTRIES and _ENTRIES[gym_id].folder != entry.folder and not replace:
            raise RegistrationError(
                f"{gym_id} is defined by both {_ENTRIES[gym_id].folder} and {entry.folder}"
            )
        _ENTRIES[gym_id] = entry
        _SPECS.pop(gym_id, None)
        if gym_id not in gym.registry:
            gym.register(
                id=gym_id,
                entry_point="agentworld_gym.registry:make_env",
                kwargs={"env_id": gym_id},
                disable_env_checker=True,
            )
        ids.append(gym_id)
    return ids


def register_all() -> None:
    for root in default_roots():
        register_catalog(root)
    from agentworld_gym import benchmarks_ext

    benchmarks_ext.register_all()


def register_external(
    entry: IndexEntry, loader: Callable[[], EnvSpec], entry_point: str | None = None
) -> str:
    """Register a held-out environment whose spec is built in memory on first use.

    Imported benchmarks (BFCL, τ²-bench) register this way: ``gym.make``, :func:`resolve`
    and :func:`load_spec` find them, but :func:`list_envs` does not list them, so a pool of
    "every environment" never trains on a benchmark. Returns the Gymnasium id.

    Args:
        entry: the environment's id, version, name, taxonomy and counts (``root``/``path``
            unused).
        loader: builds the :class:`EnvSpec` (called once, on the first ``load_spec``).
        entry_point: Gymnasium entry point, ``"module:function"`` called as
            ``function(env_id=..., **kwargs)`` (default: :func:`make_env`).
    """
    gym_id = entry.gym_id
    _EXTERNAL[gym_id] = (entry, loader)
    _SPECS.pop(gym_id, None)
    if gym_id not in gym.registry:
        gym.register(
            id=gym_id,
            entry_point=entry_point or "agentworld_gym.registry:make_env",
            kwargs={"env_id": gym_id},
            disable_env_checker=True,
        )
    return gym_id


def resolve(name: str) -> IndexEntry:
    """An entry by Gymnasium id (``AgentWorld/notion-v0``), ``notion-v0`` or ``notion``."""
    entries = {**_ENTRIES, **{k: v[0] for k, v in _EXTERNAL.items()}}
    if name in entries:
        return entries[name]
    full = name if name.startswith(f"{NAMESPACE}/") else f"{NAMESPACE}/{name}"
    if full in entries:
        return entries[full]
    versions = [e for e in entries.values() if e.id == name]
    if versions:
        return max(versions, key=lambda e: e.version)
    known = sorted({e.id for e in entries.values()})
    close = difflib.get_close_matches(name.split("/")[-1].split("-v")[0], known, n=3)
    hint = f" Did you mean {', '.join(close)}?" if close else ""
    raise RegistrationError(f"unknown environment {name!r}.{hint}")


def load_spec(name: str) -> EnvSpec:
    """The EnvSpec of a registered environment (loaded once per process).

    A loaded spec lives as long as the process, so it is moved out of the garbage
    collector's view (``gc.freeze``): otherwise every full collection walks every spec loaded
    so far, and ``gym.make`` over 200 catalog environments stalled up to 141 ms (2.7 ms with
    the freeze). Objects alive at that moment that later become cyclic garbage are not
    reclaimed; spec loads are rare, and that is the price.
    """
    entry = resolve(name)
    spec = _SPECS.get(entry.gym_id)
    if spec is None:
        external = _EXTERNAL.get(entry.gym_id)
        spec = external[1]() if external else EnvSpec.load(entry.folder)
        _SPECS[entry.gym_id] = spec
        gc.freeze()
    return spec


def make_env(env_id: str, **kwargs: Any):
    """Gymnasium entry point of every catalog environment."""
    from agentworld_gym.env import AgentWorldEnv

    return AgentWorldEnv(load_spec(env_id), **kwargs)


def list_envs(category: str | None = None) -> list[IndexEntry]:
    """Registered catalog environments, optionally those whose L1 category contains
    ``category`` (held-out benchmarks, :func:`register_external`, are not listed)."""
    entries = sorted(_ENTRIES.values(), key=lambda e: (e.id, e.version))
    if category:
        needle = category.casefold()
        entries = [e for e in entries if needle in e.taxonomy.get("l1", "").casefold()]
    return entries

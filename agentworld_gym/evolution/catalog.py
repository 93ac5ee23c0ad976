"""Registry regeneration: new environment versions written so that a crash changes nothing.

:func:`commit_versions` never touches an existing folder or the live index until the very
end:

1. every new version is saved under ``<root>/.evolve-staging/<tmp>/<slug>.v<k>`` (a hidden
   folder two levels down, which ``build_index``'s ``*/env.json`` scan never sees);
2. the journal (when given) records the folders about to appear and the index as it was;
3. each staged folder is renamed to ``<root>/<slug>.v<k>`` (atomic on one filesystem);
4. ``index.json`` is rewritten with :func:`~agentworld_gym.registry.write_index` (atomic:
   temp file + ``os.replace``) — the single switch that makes the versions live;
5. the catalog is registered again with Gymnasium.

A crash before step 4 leaves the previous index and every previous folder intact (at worst
unindexed new folders, which :func:`rollback` removes using the journal). Old versions stay
in the index, so ``AgentWorld/<slug>-v0`` keeps working and ``AgentWorld/<slug>`` resolves
to the newest.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import orjson

from agentworld_gym.errors import RegistrationError
from agentworld_gym.registry import (
    IndexEntry,
    entry_for,
    read_index,
    register_catalog,
    write_index,
)
from agentworld_gym.spec import EnvSpec

logger = logging.getLogger(__name__)

STAGING = ".evolve-staging"


def version_folder(slug: str, version: int) -> str:
    """``<slug>.v<version>``: the folder of an evolved version."""
    return f"{slug}.v{version}"


@dataclass
class CommitResult:
    entries: list[IndexEntry]
    """The index after the commit."""
    written: list[str]
    """Folders (relative to the root) that were added."""
    gym_ids: list[str]


def _entry_rows(entries: list[IndexEntry]) -> list[dict]:
    rows = []
    for entry in entries:
        row = dataclasses.asdict(entry)
        row.pop("root")
        rows.append(row)
    return rows


def write_journal(path: Path, index_before: list[IndexEntry], written: list[str]) -> None:
    """What a round is about to change, so an interrupted round can be undone."""
    payload = {"index_before": _entry_rows(index_before), "written": written}
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(orjson.dumps(payload, option=orjson.OPT_INDENT_2))
    os.replace(tmp, path)


def commit_versions(
    root: str | Path, specs: list[EnvSpec], *, journal: str | Path | None = None
) -> CommitResult:
    """Add ``specs`` (new versions) to the catalog at ``root`` (see the module docstring).

    Raises:
        RegistrationError: a version or folder already exists in the index.
    """
    root = Path(root)
    before = read_index(root)
    if not specs:
        return CommitResult(before, [], [])
    indexed = {(e.id, e.version) for e in before}
    paths = {e.path for e in before}
    names = []
    for spec in specs:
        name = version_folder(spec.id, spec.version)
        if (spec.id, spec.version) in indexed or name in paths:
            raise RegistrationError(f"{spec.gym_id} is already in the catalog at {root}")
        names.append(name)
    if journal is not None:
        write_journal(Path(journal), before, names)
    staging_root = root / STAGING
    staging_root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=staging_root, prefix="commit-"))
    try:
        for spec, name in zip(specs, names, strict=True):
            spec.save(staging / name)
        for name in names:
            target = root / name
            if target.exists():  # left by an interrupted commit, never indexed
                shutil.rmtree(target)
            os.replace(staging / name, target)
        new_entries = [entry_for(spec, name) for spec, name in zip(specs, names, strict=True)]
        entries = [*before, *new_entries]
        write_index(root, entries)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        _remove_if_empty(staging_root)
    register(root)
    logger.info("committed %d new version(s) to %s", len(specs), root)
    return CommitResult(read_index(root), names, [e.gym_id for e in new_entries])


def register(root: str | Path) -> list[str]:
    """Register the catalog being evolved with Gymnasium; its entries win every clash.

    Gymnasium's registry is global to the process: an evolved *copy* of a catalog that is
    already registered (``envs_generated/`` at import) shares its ``-v0`` ids. The copy is
    what the loop trains and evaluates on, so its entries take those ids over (same
    content, and its new versions resolve through the same registry).
    """
    return register_catalog(root, replace=True)


def _remove_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass


def rollback(root: str | Path, journal: str | Path) -> bool:
    """Undo an interrupted commit: drop the journal's new folders from the index and disk.

    Only what the journal says this commit added is removed, so entries others added to the
    index meanwhile survive. Returns whether anything had to be undone.
    """
    root, journal = Path(root), Path(journal)
    if not journal.is_file():
        return False
    written = set(orjson.loads(journal.read_bytes()).get("written", []))
    current = read_index(root)
    kept = [e for e in current if e.path not in written]
    changed = len(kept) != len(current)
    if changed:
        write_index(root, kept)
    for name in sorted(written):
        folder = root / name
        if folder.is_dir():
            shutil.rmtree(folder)
            changed = True
    shutil.rmtree(root / STAGING, ignore_errors=True)
    if changed:
        logger.warning("rolled back an interrupted registry commit in %s", root)
    return changed

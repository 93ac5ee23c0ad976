"""Registry regeneration is atomic: an injected crash leaves the previous registry intact."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import gymnasium as gym
import pytest

from agentworld_gym.evolution import catalog
from agentworld_gym.evolution.catalog import STAGING, commit_versions, rollback
from agentworld_gym.evolution.toy_catalog import build_toy_catalog
from agentworld_gym.registry import read_index
from agentworld_gym.spec import EnvSpec


def _tree(root: Path) -> dict[str, str]:
    """Every file under root (relative path -> sha256)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


_PREFIXES = iter(range(10_000))


@pytest.fixture
def cat(tmp_path):
    """A two-env catalog with slugs unique in this process (Gymnasium's registry is global)."""
    root = tmp_path / "catalog"
    prefix = f"cat{next(_PREFIXES)}"
    build_toy_catalog(
        root, {"L1-04 Finance & Markets": 1, "L1-07 Software Development": 1}, prefix=prefix
    )
    return root


def _ids(root: Path) -> list[tuple[str, int]]:
    return [(e.id.split("-", 1)[1], e.version) for e in read_index(root)]


def _next_versions(root: Path) -> list[EnvSpec]:
    specs = []
    for entry in read_index(root):
        spec = EnvSpec.load(entry.folder)
        snapshot = spec.database.snapshot()
        specs.append(dataclasses.replace(spec, version=1, records=snapshot, root=None))
    return specs


class Boom(RuntimeError):
    pass


def _crash_on_call(n: int, real, when=lambda *args: True):
    """``real``, except that its ``n``-th call for which ``when(*args)`` holds raises."""
    calls = {"n": 0}

    def patched(*args, **kwargs):
        if when(*args):
            calls["n"] += 1
            if calls["n"] == n:
                raise Boom(f"injected crash at call {n}")
        return real(*args, **kwargs)

    return patched


@pytest.mark.parametrize("where", ["save", "rename", "index_write", "index_fsync"])
def test_a_crash_mid_commit_leaves_the_previous_registry_intact(cat, monkeypatch, where):
    index_before = (cat / "index.json").read_bytes()
    tree_before = _tree(cat)
    specs = _next_versions(cat)
    if where == "save":  # the second version fails while being written to staging
        monkeypatch.setattr(EnvSpec, "save", _crash_on_call(2, EnvSpec.save))
    elif where == "rename":  # the first folder is renamed into place, the second is not
        moves_folder = lambda src, dst: str(dst).endswith(".v1")  # noqa: E731
        monkeypatch.setattr(os, "replace", _crash_on_call(2, os.replace, moves_folder))
    elif where == "index_write":
        monkeypatch.setattr(catalog, "write_index", _crash_on_call(1, catalog.write_index))
    else:  # inside write_index, after the temp file is written, before it replaces the index
        monkeypatch.setattr(os, "fsync", _crash_on_call(1, os.fsync))
    with pytest.raises(Boom):
        commit_versions(cat, specs, journal=cat.parent / "journal.json")
    monkeypatch.undo()
    assert (cat / "index.json").read_bytes() == index_before
    assert _ids(cat) == [("00", 0), ("01", 0)]
    after = _tree(cat)
    assert {k: v for k, v in after.items() if k in tree_before} == tree_before
    assert not (cat / STAGING).exists()
    new_tops = {k.split("/")[0] for k in after} - {k.split("/")[0] for k in tree_before}
    # at most unindexed version folders, and write_index's own temp file when it crashed
    assert all(t.endswith(".v1") or t.startswith(".index-") for t in new_tops)
    if where == "rename":
        assert len([t for t in new_tops if t.endswith(".v1")]) == 1
    # the journal lets the round undo it; a retry then commits cleanly
    rollback(cat, cat.parent / "journal.json")
    assert not [k for k in _tree(cat) if k.split("/")[0].endswith(".v1")]
    result = commit_versions(cat, specs)
    assert [w.split("-", 1)[1] for w in result.written] == ["00.v1", "01.v1"]
    assert _ids(cat) == [("00", 0), ("00", 1), ("01", 0), ("01", 1)]


@pytest.mark.filterwarnings("ignore:.*is out of date")
def test_commit_registers_new_versions_and_keeps_old_ones(cat):
    specs = _next_versions(cat)
    slug = specs[0].id
    result = commit_versions(cat, specs, journal=cat.parent / "journal.json")
    assert result.gym_ids == [f"AgentWorld/{s.id}-v1" for s in specs]
    assert (cat / f"{slug}.v1" / "env.json").is_file()
    assert EnvSpec.load(cat / f"{slug}.v1").version == 1
    for gid in (f"AgentWorld/{slug}-v0", f"AgentWorld/{slug}-v1"):
        env = gym.make(gid)
        _, info = env.reset(seed=0)
        assert info["env_id"] == gid
    with pytest.raises(Exception, match="already in the catalog"):
        commit_versions(cat, specs)
    assert rollback(cat, cat.parent / "journal.json")
    assert _ids(cat) == [("00", 0), ("01", 0)]
    assert not (cat / f"{slug}.v1").exists()

"""Vector envs over text spaces, and the lazy registry."""

from __future__ import annotations

import json
import subprocess
import sys

import gymnasium as gym
import pytest

from agentworld_gym import registry
from agentworld_gym.errors import ConfigError, RegistrationError
from agentworld_gym.vector import make_vec


@pytest.fixture(scope="module")
def toy_catalog(tmp_path_factory):
    from toy_env import make_spec

    root = tmp_path_factory.mktemp("catalog")
    make_spec().save(root / "toy")
    registry.build_index(root)
    ids = registry.register_catalog(root, replace=True)
    return root, ids


def test_index_registers_lazily_and_resolves_names(toy_catalog):
    root, ids = toy_catalog
    assert ids == ["AgentWorld/toy-v0"]
    index = json.loads((root / "index.json").read_text())
    assert index["envs"][0]["n_tools"] == 5 and index["envs"][0]["n_tasks"] == 3
    assert registry.resolve("toy").gym_id == registry.resolve("toy-v0").gym_id
    with pytest.raises(RegistrationError, match="Did you mean .*toy"):
        registry.resolve("tyo")
    env = gym.make("AgentWorld/toy-v0", split="all")
    obs, info = env.reset(seed=0)
    assert info["env_id"] == "AgentWorld/toy-v0" and isinstance(obs, str)


def test_index_write_is_atomic(tmp_path, monkeypatch):
    entry = registry.IndexEntry(id="a", version=0, name="A", path="a")
    registry.write_index(tmp_path, [entry])
    before = (tmp_path / "index.json").read_bytes()

    def crash(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(registry.os, "replace", crash)
    with pytest.raises(OSError):
        registry.write_index(tmp_path, [entry, registry.IndexEntry("b", 0, "B", "b")])
    assert (tmp_path / "index.json").read_bytes() == before


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_returns_fresh_text_observations(toy_catalog, mode):
    envs = make_vec("AgentWorld/toy-v0", 2, vectorization_mode=mode, split="all")
    try:
        obs, infos = envs.reset(seed=[0, 1], options={"task_id": "close-i1"})
        assert list(obs) == [obs[0]] * 2 and obs[0].startswith("Mark")
        actions = (
            json.dumps({"name": "get_item", "arguments": {"item_id": "i1"}}),
            json.dumps({"name": "get_item", "arguments": {"item_id": "i2"}}),
        )
        obs, rewards, term, trunc, infos = envs.step(actions)
        assert json.loads(obs[0])["id"] == "i1" and json.loads(obs[1])["id"] == "i2"
        obs, rewards, term, trunc, infos = envs.step(("3 points", "7"))
        assert list(term) == [True, True] and rewards[0] > rewards[1]
    finally:
        envs.close()


def test_make_vec_rejects_bad_mode():
    with pytest.raises(ConfigError, match="sync"):
        make_vec("AgentWorld/toy-v0", 2, vectorization_mode="ray")


def test_import_is_light():
    code = (
        "import sys, agentworld_gym; print(sorted(m for m in ('openai', 'torch', 'faker') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_gymnasium_make_vec_async_works_on_our_ids():
    import json

    envs = gym.make_vec("AgentWorld/notion-v0", 2, vectorization_mode="async")
    try:
        obs, _ = envs.reset(seed=0)
        assert len(obs) == 2 and all(isinstance(o, str) and o for o in obs)
        first = tuple(obs)
        call = json.dumps({"name": "API-post-search", "arguments": {"query": "Roadmap"}})
        obs, _, terminated, _, _ = envs.step([call, call])
        assert all(o.startswith('{"object":"list"') for o in obs) and not terminated.any()
        assert tuple(obs) != first  # the observations of now, not the ones read at reset
        _, _, terminated, _, _ = envs.step(["done", "done"])
        assert terminated.all()
    finally:
        envs.close()

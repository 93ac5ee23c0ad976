from __future__ import annotations

from pathlib import Path

import pytest
from toy_env import make_spec

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import build_index


@pytest.fixture
def toy_spec():
    return make_spec()


@pytest.fixture
def toy_env(toy_spec):
    return AgentWorldEnv(toy_spec, split="all")


@pytest.fixture(scope="session")
def toy_catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The toy env as a catalog folder, built once per session."""
    root = tmp_path_factory.mktemp("toy-catalog")
    make_spec().save(root / "toy")
    build_index(root)
    return root

from __future__ import annotations

import pytest
from toy_env import make_spec

from agentworld_gym.env import AgentWorldEnv


@pytest.fixture
def toy_spec():
    return make_spec()


@pytest.fixture
def toy_env(toy_spec):
    return AgentWorldEnv(toy_spec, split="all")

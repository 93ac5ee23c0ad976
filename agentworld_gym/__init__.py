"""agentworld-gym: real-world tool ecosystems as stateful, verifiable Gymnasium environments.

>>> import gymnasium as gym, agentworld_gym
>>> env = gym.make("AgentWorld/notion-v0")

Importing the package registers every environment of the catalog (``envs_generated/`` and the
roots in ``AGENTWORLD_CATALOGS``) with Gymnasium; environments load on first ``make``.
"""

from __future__ import annotations

from agentworld_gym.database import Database
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.errors import (
    AgentWorldError,
    ConfigError,
    RegistrationError,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
)
from agentworld_gym.registry import list_envs, load_spec, register_all, register_catalog
from agentworld_gym.spec import EnvSpec, TaskSpec, ToolSpec
from agentworld_gym.vector import make_vec

__version__ = "0.1.0"

__all__ = [
    "AgentWorldEnv",
    "AgentWorldError",
    "ConfigError",
    "Database",
    "EnvSpec",
    "RegistrationError",
    "TaskSpec",
    "ToolArgumentError",
    "ToolError",
    "ToolExecutionError",
    "ToolNotFound",
    "ToolSpec",
    "list_envs",
    "load_spec",
    "make_vec",
    "register_all",
    "register_catalog",
]

register_all()

"""Vector environments for text spaces.

``gym.make_vec("AgentWorld/notion-v0", 4, vectorization_mode="async")`` works as it is: our
text space gives ``AsyncVectorEnv``'s default ``shared_memory=True`` a manager-held list
(:mod:`agentworld_gym.spaces`). ``make_vec`` here builds the same vector envs with
``shared_memory=False`` (observations through the worker pipes, no manager process) and our
autoreset default.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from agentworld_gym.errors import ConfigError


def make_vec(
    env_id: str,
    num_envs: int,
    *,
    vectorization_mode: str = "sync",
    autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP,
    **env_kwargs: Any,
) -> SyncVectorEnv | AsyncVectorEnv:
    """``num_envs`` copies of an AgentWorld environment in one vector env.

    Args:
        env_id: e.g. ``"AgentWorld/notion-v0"``.
        num_envs: number of sub-environments.
        vectorization_mode: ``"sync"`` (one process) or ``"async"`` (one process per env).
        autoreset_mode: Gymnasium's autoreset mode.
        **env_kwargs: passed to each ``gym.make`` (``split``, ``max_turns``, ...).
    """
    if num_envs < 1:
        raise ConfigError(f"num_envs must be at least 1, got {num_envs}")

    def factory() -> gym.Env:
        import agentworld_gym  # noqa: F401  (registers the catalog in worker processes)

        return gym.make(env_id, **env_kwargs)

    fns = [factory] * num_envs
    if vectorization_mode == "sync":
        return SyncVectorEnv(fns, autoreset_mode=autoreset_mode)
    if vectorization_mode == "async":
        return AsyncVectorEnv(fns, shared_memory=False, autoreset_mode=autoreset_mode)
    raise ConfigError(f"vectorization_mode must be 'sync' or 'async', got {vectorization_mode!r}")

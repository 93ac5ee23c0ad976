"""Bridges to other libraries and harnesses; each imports its library only when used.

- :mod:`~agentworld_gym.integrations.rollout` — the episode loop every integration shares
  (policies are ``policy(messages, tools) -> action``), :class:`GoldPolicy`, trajectories.
- :mod:`~agentworld_gym.integrations.openai_eval` — evaluate any OpenAI-compatible server
  (``agentworld eval``).
- :mod:`~agentworld_gym.integrations.trl_env` — TRL ``GRPOTrainer(environment_factory=...)``.
- :mod:`~agentworld_gym.integrations.mcp_server` — an environment as an MCP server
  (``agentworld serve-mcp``).
- :mod:`~agentworld_gym.integrations.ray_rollout` — parallel rollouts on Ray actors.
- :mod:`~agentworld_gym.integrations.engine_episode` — one episode pushed by an RL engine, the
  core of the three engine adapters below.
- :mod:`~agentworld_gym.integrations.verl_agent_loop` — a verl agent loop and verl task files.
- :mod:`~agentworld_gym.integrations.skyrl_env` — a ``skyrl_gym`` text environment.
- :mod:`~agentworld_gym.integrations.verifiers_env` — a verifiers ``MultiTurnEnv``
  (``load_environment``).

Stable-Baselines3 needs no bridge, only spaces: see :mod:`agentworld_gym.wrappers`.
"""

from __future__ import annotations

from agentworld_gym.integrations.rollout import (
    GoldPolicy,
    Policy,
    TaskRef,
    Trajectory,
    backend_policy,
    run_episode,
    run_with_retries,
)

__all__ = [
    "GoldPolicy",
    "Policy",
    "TaskRef",
    "Trajectory",
    "backend_policy",
    "run_episode",
    "run_with_retries",
]

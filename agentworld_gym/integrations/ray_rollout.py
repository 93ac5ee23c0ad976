"""Parallel rollouts on Ray actors, across processes and machines (local Ray by default).

Each worker is a Ray actor that loads the environments once and runs whole episodes with
:func:`~agentworld_gym.integrations.rollout.run_episode`; the driver hands out tasks and gets
:class:`~agentworld_gym.integrations.rollout.Trajectory` objects back, in task order.

The policy is either

- a picklable ``policy(messages, tools) -> action`` callable (shipped to the workers once per
  :meth:`RayRolloutPool.run`; closures are fine, Ray pickles with cloudpickle), or
- an :class:`~agentworld_gym.llm.LLMConfig`: each worker builds its own backend once (e.g. an
  OpenAI-compatible client to a vLLM server) and reuses it for every episode.

>>> from agentworld_gym.integrations import GoldPolicy, TaskRef
>>> from agentworld_gym.registry import load_spec
>>> with RayRolloutPool(["notion"], num_workers=2) as pool:  # doctest: +SKIP
...     trajectories = pool.run(GoldPolicy(load_spec("notion")),
...                             [TaskRef("AgentWorld/notion-v0", "notion-r01")] * 4)

Catalogs outside the default root reach the workers through ``AGENTWORLD_CATALOGS`` (set in
the driver, it is forwarded to the actors' environment).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.integrations.rollout import Policy, TaskRef, Trajectory, run_with_retries
from agentworld_gym.llm.base import LLMConfig

_FORWARDED_ENV = ("AGENTWORLD_CATALOGS", "AGENTWORLD_ENVS", "OPENAI_API_KEY")


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError("RayRolloutPool needs Ray: pip install agentworld-gym[ray]") from exc
    return ray


class RolloutWorker:
    """What runs inside each actor: environments loaded once, a backend per LLM config."""

    def __init__(self, env_ids: list[str], max_turns: int | None = None) -> None:
        import agentworld_gym  # noqa: F401  (registers the catalog in the worker process)
        from agentworld_gym.registry import load_spec, resolve

        self.specs = {resolve(e).gym_id: load_spec(e) for e in env_ids}
        self.max_turns = max_turns
        self._policies: dict[str, Policy] = {}

    def _policy(self, policy: Policy | LLMConfig) -> Policy:
        if not isinstance(policy, LLMConfig):
            return policy
        key = repr(policy)
        if key not in self._policies:
            from agentworld_gym.integrations.rollout import backend_policy
            from agentworld_gym.llm import make_backend

            self._policies[key] = backend_policy(make_backend(policy))
        return self._policies[key]

    def run(self, policy: Policy | LLMConfig, ref: TaskRef, retries: int = 0) -> Trajectory:
        from agentworld_gym.env import AgentWorldEnv
        from agentworld_gym.registry import resolve

        spec = self.specs.get(ref.env_id) or self.specs[resolve(ref.env_id).gym_id]
        return run_with_retries(
            lambda: AgentWorldEnv(spec, split="all", max_turns=self.max_turns),
            ref,
            self._policy(policy),
            retries=retries,
        )

    def ping(self) -> int:
        return os.getpid()


class RayRolloutPool:
    """``num_workers`` Ray actors that run episodes of ``env_ids`` in parallel.

    Args:
        env_ids: environments the workers load up front (names or Gymnasium ids).
        num_workers: actors; each reserves ``num_cpus_per_worker`` CPUs.
        max_turns: turn budget of every episode (default: each environment's own).
        num_cpus_per_worker: Ray resources per actor (fractions allowed: episodes mostly wait
            on the model server).
        address: Ray cluster to join (``"auto"``, ``"ray://host:10001"``); ``None`` starts or
            reuses a local Ray.
        **ray_init: extra ``ray.init`` keywords when this pool starts Ray itself.
    """

    def __init__(
        self,
        env_ids: Iterable[str],
        num_workers: int = 2,
        *,
        max_turns: int | None = None,
        num_cpus_per_worker: float = 1.0,
        address: str | None = None,
        **ray_init: Any,
    ) -> None:
        if num_workers < 1:
            raise ConfigError(f"num_workers must be at least 1, got {num_workers}")
        ray = _import_ray()
        self._started_ray = False
        if not ray.is_initialized():
            ray.init(address=address, **ray_init)
            self._started_ray = True
        env_vars = {k: os.environ[k] for k in _FORWARDED_ENV if k in os.environ}
        actor = ray.remote(RolloutWorker).options(
            num_cpus=num_cpus_per_worker,
            runtime_env={"env_vars": env_vars} if env_vars else None,
        )
        self.env_ids = list(env_ids)
        self._workers = [actor.remote(self.env_ids, max_turns) for _ in range(num_workers)]
        ray.get([w.ping.remote() for w in self._workers])  # fail here, not mid-run

    @property
    def num_workers(self) -> int:
        return len(self._workers)

    def run(
        self,
        policy: Policy | LLMConfig,
        tasks: Iterable[TaskRef | tuple[str, str] | tuple[str, str, int]],
        *,
        retries: int = 0,
    ) -> list[Trajectory]:
        """Run one episode per task on the workers; trajectories come back in task order.

        Args:
            policy: a picklable policy callable, or an ``LLMConfig`` each worker builds once.
            tasks: ``TaskRef`` or ``(env_id, task_id[, seed])``; repeat a task for a group.
            retries: whole-episode retries when the policy raises (then ``error`` is set).
        """
        ray = _import_ray()
        from ray.util import ActorPool

        refs = [t if isinstance(t, TaskRef) else TaskRef(*t) for t in tasks]
        shared = ray.put(policy)
        pool = ActorPool(self._workers)
        return list(pool.map(lambda w, ref: w.run.remote(shared, ref, retries), refs))

    def close(self) -> None:
        """Stop the actors (and Ray, when this pool started it)."""
        ray = _import_ray()
        for worker in self._workers:
            ray.kill(worker)
        self._workers = []
        if self._started_ray:
            ray.shutdown()

    def __enter__(self) -> RayRolloutPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

"""GRPO rollouts on a Ray actor pool, across processes and nodes.

The trainer's in-process rollouts (:func:`~algorithms.grpo.rollout.run_episodes`) moved into
Ray actors: each :class:`EpisodeWorker` builds the policy from the same
:class:`~algorithms.models.ModelConfig` (its own in-process transformers generator) and the
same task pool, plays whole GRPO groups with token-exact bookkeeping, and returns
:class:`~algorithms.grpo.rollout.Trajectory` objects with the sampler's log-probabilities.
After every update the trainer pushes its weights (trainable tensors only: the LoRA adapters,
or every weight in full fine-tuning) through the object store with one ``ray.put``; each
worker loads them before its next episodes.

This is the same actor pattern as :class:`agentworld_gym.integrations.ray_rollout.RayRolloutPool`
(which runs chat-level policies for evaluation) grown into the trainer: token-level
generation, whole groups per worker, and weight sync. Actors are spread over the cluster's
nodes (``SPREAD`` scheduling); ``address="auto"`` joins a cluster started with ``ray start``.
Workers import ``algorithms`` from this checkout (its folder goes onto their ``PYTHONPATH``):
on a multi-node cluster the checkout must be at the same path on every node.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RemoteRolloutConfig:
    """Where GRPO's episodes run (the ``algo.remote`` node)."""

    workers: int = 0
    """Ray actors playing episodes; 0 = rollouts in the trainer's own process(es)."""
    address: str | None = None
    """Ray cluster to join (``auto`` = the one ``ray start`` runs here); ``None`` = start or
    reuse a local Ray."""
    cpus_per_worker: float = 1.0
    """Ray CPUs reserved per actor."""
    gpus_per_worker: float = 0.0
    """Ray GPUs per actor (generation on a GPU of the worker's node)."""
    threads_per_worker: int = 1
    """torch threads inside each actor."""


class EpisodeWorker:
    """What runs inside one actor: the policy, its generator and the task pool, built once."""

    def __init__(self, model_config: Any, pool_config: Any, threads: int = 1) -> None:
        import torch

        from algorithms.models import load_policy
        from algorithms.pool import TaskPool

        torch.set_num_threads(max(1, threads))
        self.policy = load_policy(model_config)
        self.pool = TaskPool(pool_config)
        self.version = -1

    def load_weights(self, state: dict[str, Any], version: int) -> int:
        """Copy the trainer's tensors in (names as in the trainer's model); returns the
        version now served."""
        import torch

        params = dict(self.policy.model.named_parameters())
        missing = sorted(set(state) - set(params))
        if missing:
            raise ConfigError(f"weights for parameters this worker lacks: {missing[:3]}")
        with torch.no_grad():
            for name, value in state.items():
                params[name].copy_(value.to(params[name].device, params[name].dtype))
        self.policy.generator.sync_weights(self.policy.model)
        self.version = version
        return version

    def run(self, tasks: list[Any], split: str, config: Any, seed: int) -> list[Any]:
        """Play one episode per entry of ``tasks`` (see :func:`run_episodes`)."""
        from algorithms.grpo.rollout import run_episodes

        return run_episodes(self.policy.generator, self.pool, tasks, split, config, seed)

    def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class RayEpisodeRunner:
    """``config.workers`` :class:`EpisodeWorker` actors spread over a Ray cluster.

    Args:
        model_config: the policy's :class:`~algorithms.models.ModelConfig` (each worker builds
            the same architecture; the weights come from :meth:`sync`).
        pool_config: the trainer pool's :class:`~algorithms.pool.EnvPoolConfig`.
        config: how many workers, where, with what resources.
    """

    def __init__(self, model_config: Any, pool_config: Any, config: RemoteRolloutConfig) -> None:
        if config.workers < 1:
            raise ConfigError(f"algo.remote.workers must be >= 1, got {config.workers}")
        try:
            import ray
        except ImportError as exc:
            raise ConfigError("Ray rollouts need Ray: pip install agentworld-gym[ray]") from exc
        self._started_ray = False
        path = os.pathsep.join(p for p in (str(REPO_ROOT), os.environ.get("PYTHONPATH")) if p)
        env_vars = {"PYTHONPATH": path}
        for key in ("AGENTWORLD_CATALOGS", "AGENTWORLD_ENVS"):
            if key in os.environ:
                env_vars[key] = os.environ[key]
        if not ray.is_initialized():
            ray.init(address=config.address, runtime_env={"env_vars": env_vars})
            self._started_ray = True
        actor = ray.remote(EpisodeWorker).options(
            num_cpus=config.cpus_per_worker,
            num_gpus=config.gpus_per_worker,
            scheduling_strategy="SPREAD",
            runtime_env={"env_vars": env_vars},
        )
        self.workers = [
            actor.remote(model_config, pool_config, config.threads_per_worker)
            for _ in range(config.workers)
        ]
        self.nodes = ray.get([w.node.remote() for w in self.workers])  # fail here, not mid-run
        self.version = 0

    def sync(self, state: dict[str, Any]) -> None:
        """Send the trainer's current weights to every worker (one object-store copy)."""
        import ray

        self.version += 1
        ref = ray.put(state)
        ray.get([w.load_weights.remote(ref, self.version) for w in self.workers])

    def run(
        self, tasks: list[Any], group_size: int, split: str, config: Any, seed: int
    ) -> list[Any]:
        """Play ``tasks`` (each repeated ``group_size`` times, groups contiguous) on the
        workers, whole groups per worker, round-robin; trajectories in task order."""
        import ray

        n = len(self.workers)
        shares = [tasks[i::n] for i in range(n)]
        calls = [
            (i, w.run.remote(_repeat(share, group_size), split, config, seed + i * 100_003))
            for i, (w, share) in enumerate(zip(self.workers, shares, strict=True))
            if share
        ]
        results = dict(zip([i for i, _ in calls], ray.get([c for _, c in calls]), strict=True))
        out: list[Any] = []
        for g in range(len(tasks)):
            worker, k = g % n, g // n
            out.extend(results[worker][k * group_size : (k + 1) * group_size])
        return out

    def close(self) -> None:
        import ray

        for worker in self.workers:
            ray.kill(worker)
        self.workers = []
        if self._started_ray:
            ray.shutdown()


def _repeat(tasks: list[Any], group_size: int) -> list[Any]:
    return [t for t in tasks for _ in range(group_size)]


class LocalCluster:
    """A Ray cluster of ``nodes`` nodes on this machine (``ray start --head`` plus
    ``ray start --address`` for each further node), with this process connected as its driver;
    for tests and benchmarks of multi-node rollouts. Each node is one ``ray start --block``
    process; :meth:`stop` ends exactly those (never ``ray stop``, which would stop every Ray on
    the machine).

    >>> with LocalCluster(nodes=2, cpus_per_node=1) as cluster:  # doctest: +SKIP
    ...     runner = RayEpisodeRunner(model, pool, RemoteRolloutConfig(2, cluster.address))
    """

    def __init__(
        self, nodes: int = 2, cpus_per_node: int = 1, port: int | None = None, timeout_s: int = 180
    ) -> None:
        import shutil
        import socket
        import sys
        import tempfile
        import time

        import ray

        ray_bin = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")
        if ray_bin is None:
            raise ConfigError("LocalCluster needs the ray CLI: pip install agentworld-gym[ray]")
        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        self.temp_dir = tempfile.mkdtemp(prefix="awray-")
        self.procs: list[Any] = []
        # `ray start --head` turns token authentication on unless told otherwise; the nodes
        # get this process's mode so that the driver can connect
        self.env = {**os.environ, "RAY_AUTH_MODE": os.environ.get("RAY_AUTH_MODE", "disabled")}
        common = ["--block", f"--num-cpus={cpus_per_node}", "--disable-usage-stats"]
        head = [ray_bin, "start", "--head", f"--port={port}", "--include-dashboard=false"]
        deadline = time.monotonic() + timeout_s
        try:
            self._spawn([*head, f"--temp-dir={self.temp_dir}", *common])
            self._wait(lambda: _port_open(port), deadline)
            for _ in range(nodes - 1):
                self._spawn([ray_bin, "start", f"--address={self.address}", *common])
            ray.init(address=self.address, logging_level="ERROR", log_to_driver=False)
            self._wait(lambda: sum(n["Alive"] for n in ray.nodes()) >= nodes, deadline)
        except BaseException:
            self.stop()
            raise
        self.nodes = nodes

    def _spawn(self, cmd: list[str]) -> None:
        import subprocess

        self.procs.append(
            subprocess.Popen(
                cmd,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )

    def _wait(self, ready: Any, deadline: float) -> None:
        import time

        while not ready():
            if any(p.poll() is not None for p in self.procs):
                raise ConfigError("a `ray start` of the local cluster exited early")
            if time.monotonic() > deadline:
                raise ConfigError(f"the local Ray cluster at {self.address} did not come up")
            time.sleep(1)

    def stop(self) -> None:
        """Disconnect, then end the node processes this object started (newest first)."""
        import shutil
        import signal
        import subprocess

        import ray

        if ray.is_initialized():
            ray.shutdown()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=60)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self.procs = []
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> LocalCluster:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def _port_open(port: int) -> bool:
    import socket

    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0

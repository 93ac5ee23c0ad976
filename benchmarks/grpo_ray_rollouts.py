"""GRPO rollouts on Ray workers across two Ray nodes on this machine: episodes/s for 1, 2, 4
workers against the same batch played in one process.

    python benchmarks/grpo_ray_rollouts.py                     # tiny model, notion, 2 nodes
    python benchmarks/grpo_ray_rollouts.py --workers 1 2 --rounds 1 --tasks 4   # quick

The cluster is started here (``ray start --head`` plus ``ray start --address``, see
:class:`algorithms.grpo.remote.LocalCluster`) and stopped at the end. Each worker is a Ray
actor with its own copy of the policy (:class:`algorithms.grpo.remote.EpisodeWorker`), loaded
with the trainer's weights through the object store; a batch is ``tasks × group`` episodes,
whole groups per worker. Each timed batch starts with the weight sync a GRPO step does after
its update (for Ray: the tensors sent to every worker). The first batch on each pool is a
warm-up and is not timed; the one-process baseline is timed before and after the Ray runs
(the median of both). The
machine's load is printed beside the table: on a machine with fewer free cores than workers,
the workers share cores and the speed-up cannot be linear.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent)]
# Ray gives each 1-CPU actor OMP_NUM_THREADS=1; the one-process baseline gets the same
os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from algorithms.distributed import LogprobModel, full_state_dict  # noqa: E402
from algorithms.grpo.remote import LocalCluster, RayEpisodeRunner, RemoteRolloutConfig  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig, run_episodes  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--cpus-per-node", type=int, default=2)
    parser.add_argument("--env", default="notion")
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--tasks", type=int, default=8, help="groups per batch")
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=2, help="timed batches per setting")
    args = parser.parse_args()
    torch.set_num_threads(1)

    model_config = ModelConfig(name=args.model, lora=False, dtype="float32")
    pool_config = EnvPoolConfig(envs=[args.env], train_split="all")
    rollout = RolloutConfig(
        max_turns=args.max_turns, max_new_tokens=args.max_new_tokens, max_episode_tokens=8192
    )
    policy = load_policy(model_config)
    pool = TaskPool(pool_config)
    tasks = [pool.tasks("all")[i % len(pool.tasks("all"))] for i in range(args.tasks)]
    episodes = args.tasks * args.group
    rows = []

    def local() -> None:
        policy.generator.sync_weights(policy.model)  # as after an update: caches dropped
        run_episodes(
            policy.generator, pool, [t for t in tasks for _ in range(args.group)], "all", rollout
        )

    before = timed(local, args.rounds)
    state = full_state_dict(LogprobModel(policy.model), trainable_only=True)
    with LocalCluster(nodes=args.nodes, cpus_per_node=args.cpus_per_node) as cluster:
        for n in args.workers:
            config = RemoteRolloutConfig(workers=n, address=cluster.address, cpus_per_worker=1)
            runner = RayEpisodeRunner(model_config, pool_config, config)
            try:
                runner.sync(state)
                secs = timed(
                    lambda r=runner: r.run(tasks, args.group, "all", rollout, 0), args.rounds
                )
                rows.append((f"Ray, {n} worker(s)", len(set(runner.nodes)), secs, ""))
            finally:
                runner.close()
    # the one-process baseline is timed before and after the cluster (the load drifts)
    rows.insert(0, ("in process (no Ray)", 1, before + timed(local, args.rounds), ""))
    pool.close()
    base = statistics.median(rows[0][2])
    print(
        f"\n{episodes} episodes per batch ({args.tasks} groups × {args.group}), {args.env}, "
        f"model {args.model}, {args.nodes} Ray nodes × {args.cpus_per_node} CPUs; "
        f"cores: {os.cpu_count()}, load: {' '.join(f'{x:.1f}' for x in os.getloadavg())}\n"
    )
    print("| rollouts | nodes used | episodes/s (median) | speed-up vs in process |")
    print("|---|---|---|---|")
    for name, nodes, secs, _ in rows:
        med = statistics.median(secs)
        print(f"| {name} | {nodes} | {episodes / med:.1f} | {base / med:.2f}x |")


def timed(fn, rounds: int) -> list[float]:
    """Wall seconds of ``rounds`` calls after one untimed warm-up call."""
    fn()
    out = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


if __name__ == "__main__":
    main()

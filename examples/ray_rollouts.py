"""Parallel rollouts on Ray actors: the same episodes, spread over processes (or machines).

``RayRolloutPool(env_ids, num_workers).run(policy, tasks)`` runs one episode per task on the
workers and returns trajectories in task order. The policy is a picklable
``policy(messages, tools) -> action`` callable, or an ``LLMConfig`` that every worker turns into
its own client (e.g. to a vLLM server)::

    pool.run(LLMConfig(model="Qwen/Qwen3-8B", base_url="http://gpu-box:8000/v1"), tasks)

This script uses the gold policy, so it runs offline and every episode should score 1.0::

    pip install agentworld-gym[ray]
    python examples/ray_rollouts.py --workers 2 --group 4
"""

from __future__ import annotations

import argparse
import time

from agentworld_gym.integrations import GoldPolicy, TaskRef
from agentworld_gym.integrations.ray_rollout import RayRolloutPool
from agentworld_gym.registry import load_spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="notion")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--group", type=int, default=4, help="episodes per task (a GRPO group)")
    parser.add_argument("--address", help="Ray cluster address (default: local Ray)")
    args = parser.parse_args()
    spec = load_spec(args.env)
    tasks = [TaskRef(spec.gym_id, t.id, seed=i) for t in spec.tasks for i in range(args.group)]
    with RayRolloutPool([args.env], args.workers, address=args.address) as pool:
        start = time.perf_counter()
        trajectories = pool.run(GoldPolicy(spec), tasks)
        elapsed = time.perf_counter() - start
    mean = sum(t.reward for t in trajectories) / len(trajectories)
    rate = len(trajectories) / elapsed
    print(f"{len(trajectories)} episodes on {args.workers} workers in {elapsed:.2f}s")
    print(f"{rate:.0f} episodes/s; mean reward {mean:.3f}")


if __name__ == "__main__":
    main()

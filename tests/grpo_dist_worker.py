"""Run under ``torchrun --nproc_per_node 2`` by ``tests/test_grpo_distributed.py`` (gloo, CPU).

One launch does every multi-rank scenario, so the suite pays for process start-up once:

- ``update-<strategy>-<aggregation>.pt``: one GRPO update of the global batch in ``--data``
  (each rank takes its round-robin share of the groups), DDP for each loss aggregation, FSDP2
  for one, and DDP with LoRA and the KL term (``update-ddp-lora.pt``); the test compares with
  the one-process update of the same batch.
- ``run-<strategy>/``: one full step with a checkpoint (written by 2 ranks), then the next step
  uninterrupted (``next-<strategy>.pt``) and the same next step resumed from the checkpoint on
  2 ranks by a fresh trainer (``resumed-<strategy>.pt``); the test resumes it on 1 rank.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from pathlib import Path

import torch

torch.set_num_threads(1)
sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

import agentworld_gym  # noqa: E402
from algorithms import distributed  # noqa: E402
from algorithms.distributed import Dist, Strategy  # noqa: E402
from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.grpo.objective import LossAggregation  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402

MODEL_SEED = 7


def tiny(seed: int = MODEL_SEED, lora: bool = False):
    torch.manual_seed(seed)  # LoRA adapters are drawn from the global RNG
    return load_policy(ModelConfig(name="tiny", lora=lora, lora_r=4, dtype="float32", seed=seed))


def toy_pool(root: str) -> TaskPool:
    agentworld_gym.register_catalog(Path(root), replace=True)
    return TaskPool(EnvPoolConfig(catalogs=[root], envs=["toy"], train_split="test"))


def update_config(aggregation: LossAggregation, beta: float = 0.0) -> GRPOConfig:
    """The update under test: micro-batches of 3 rows, so gradients accumulate on every rank."""
    return GRPOConfig(
        beta=beta,
        tasks_per_step=4,
        group_size=4,
        lr=1e-2,
        micro_batch_size=3,
        loss_aggregation=aggregation,
        rollout=RolloutConfig(max_turns=2, max_new_tokens=5, max_episode_tokens=4000),
        checkpoint_every=1,
    )


def run_config() -> GRPOConfig:
    """Full steps (rollouts included) with two sampling shards: the same episodes on 1 or 2
    ranks."""
    return GRPOConfig(
        steps=1,
        tasks_per_step=4,
        group_size=4,
        lr=1e-2,
        micro_batch_size=3,
        rollout_shards=2,
        rollout=RolloutConfig(max_turns=2, max_new_tokens=5, max_episode_tokens=4000),
        checkpoint_every=1,
    )


def shard(data: dict, rank: int, world: int, group_size: int) -> tuple[list, torch.Tensor]:
    """This rank's groups of the global batch: groups ``rank, rank + world, ...``."""
    n_groups = len(data["trajs"]) // group_size
    rows = [g * group_size + j for g in range(rank, n_groups, world) for j in range(group_size)]
    return [data["trajs"][i] for i in rows], data["advantages"][rows]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    out = Path(args.out)
    data = pickle.loads(Path(args.data).read_bytes())
    base = distributed.init()
    pool = toy_pool(data["catalog"])

    def save(name: str, trainer: GRPOTrainer, metrics: dict) -> None:
        state = distributed.full_state_dict(trainer.module, trainable_only=True)
        if base.is_main:
            torch.save({"state": state, "metrics": metrics}, out / name)

    cases = [(Strategy.ddp, agg) for agg in LossAggregation] + [
        (Strategy.fsdp, LossAggregation.token)
    ]
    for strategy, aggregation in cases:
        dist = Dist(base.rank, base.world_size, base.local_rank, strategy)
        config = update_config(aggregation)
        trainer = GRPOTrainer(tiny(), pool, config, dist=dist)
        trajs, advantages = shard(data, dist.rank, dist.world_size, config.group_size)
        metrics = trainer.update(trajs, advantages)
        save(f"update-{strategy.value}-{aggregation.value}.pt", trainer, metrics)
    # LoRA adapters with the KL term (the reference is the model with its adapters off)
    dist = Dist(base.rank, base.world_size, base.local_rank, Strategy.ddp)
    trainer = GRPOTrainer(
        tiny(lora=True), pool, update_config(LossAggregation.token, 0.1), dist=dist
    )
    trajs, advantages = shard(data, dist.rank, dist.world_size, 4)
    save("update-ddp-lora.pt", trainer, trainer.update(trajs, advantages))

    for strategy in (Strategy.ddp, Strategy.fsdp):
        dist = Dist(base.rank, base.world_size, base.local_rank, strategy)
        run_dir = out / f"run-{strategy.value}"
        trainer = GRPOTrainer(tiny(), pool, run_config(), run_dir=run_dir, dist=dist)
        trainer.train(steps=1, resume=False)  # step 1, checkpoint written by both ranks
        save(f"next-{strategy.value}.pt", trainer, trainer.step())
    for strategy in (Strategy.ddp, Strategy.fsdp):
        dist = Dist(base.rank, base.world_size, base.local_rank, strategy)
        run_dir = out / f"run-{strategy.value}"
        resumed = GRPOTrainer(tiny(seed=99), pool, run_config(), run_dir=run_dir, dist=dist)
        if not resumed.resume():
            raise SystemExit("no checkpoint to resume from")
        save(f"resumed-{strategy.value}.pt", resumed, resumed.step())
    base.barrier()  # both ranks done before either leaves the group
    distributed.shutdown()


if __name__ == "__main__":
    main()

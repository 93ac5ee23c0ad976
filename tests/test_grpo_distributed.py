"""GRPO data-parallel on 2 CPU processes (``torchrun``, gloo): the update of a global batch
equals the one-process update for each loss aggregation (DDP, and FSDP2 for one), and a
checkpoint written by 2 ranks resumes on 1 rank and on 2 ranks to the same next step.

One ``torchrun`` launch (``tests/grpo_dist_worker.py``) runs every multi-rank scenario; the
tests here run the one-process side and compare.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)
torch.set_num_threads(1)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from grpo_dist_worker import (  # noqa: E402
    run_config,
    shard,
    tiny,
    toy_pool,
    update_config,
)

from algorithms.distributed import Dist  # noqa: E402
from algorithms.grpo.objective import LossAggregation, group_advantages  # noqa: E402
from algorithms.grpo.rollout import run_episodes  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402

ATOL = 1e-5


@pytest.fixture(scope="module")
def batch(toy_catalog):
    """A global batch of 4 groups × 4 episodes of the tiny model on the toy env (varied
    lengths), with seeded random advantages (the update is exact for any advantages; group
    advantages of this batch would be mostly 0)."""
    pool = toy_pool(str(toy_catalog))
    config = update_config(LossAggregation.token)
    tasks = pool.tasks("test")
    groups = [tasks[g % len(tasks)] for g in range(config.tasks_per_step)]
    episodes = [t for t in groups for _ in range(config.group_size)]
    trajs = run_episodes(tiny().generator, pool, episodes, "test", config.rollout, seed=11)
    assert len({t.policy_tokens for t in trajs}) > 1
    noise = torch.randn(len(trajs), generator=torch.Generator().manual_seed(0))
    return {
        "trajs": trajs,
        "advantages": group_advantages(noise, config.group_size),
        "catalog": str(toy_catalog),
    }


@pytest.fixture(scope="module")
def two_ranks(batch, tmp_path_factory):
    """What 2 ranks wrote (``torchrun --nproc_per_node 2``, gloo)."""
    out = tmp_path_factory.mktemp("two-ranks")
    data = out / "batch.pkl"
    data.write_bytes(pickle.dumps(batch))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(HERE.parent)}
    cmd = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node",
        "2",
        str(HERE / "grpo_dist_worker.py"),
        "--data",
        str(data),
        "--out",
        str(out),
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    ranks = [line for line in done.stderr.splitlines() if line.startswith("[rank")]
    assert done.returncode == 0, "\n".join(ranks[-40:]) + done.stderr[-3000:]
    return out


def one_process_update(
    batch, aggregation: LossAggregation, lora: bool = False, beta: float = 0.0
) -> tuple[dict, dict]:
    config = update_config(aggregation, beta)
    trainer = GRPOTrainer(tiny(lora=lora), toy_pool(batch["catalog"]), config)
    metrics = trainer.update(batch["trajs"], batch["advantages"])
    params = {n: p.detach() for n, p in trainer.policy.model.named_parameters()}
    return params, metrics


FSDP_ATOL = 1e-4
"""FSDP's reduce-scatter sums gradients in another order than one process does; Adam turns
a round-off difference on a near-zero gradient into up to a step's worth (lr 1e-2), so its
parameters agree to 1% of a step, not to 1e-5 (a wrong normaliser moves every parameter by
far more)."""


def assert_same(params: dict, saved: dict, atol: float = ATOL) -> None:
    assert params.keys() == saved.keys()
    for name, value in params.items():
        assert torch.allclose(value, saved[name], atol=atol, rtol=0), name


@pytest.mark.parametrize(
    "strategy, aggregation",
    [("ddp", agg) for agg in LossAggregation] + [("fsdp", LossAggregation.token)],
)
def test_two_rank_update_equals_one_process_update(batch, two_ranks, strategy, aggregation):
    params, metrics = one_process_update(batch, aggregation)
    saved = torch.load(two_ranks / f"update-{strategy}-{aggregation.value}.pt")
    initial = {n: p.detach() for n, p in tiny().model.named_parameters()}
    moved = max(float((params[n] - initial[n]).abs().max()) for n in params)
    assert moved > 1e-3  # the update did something, so equality is not trivial
    assert_same(params, saved["state"], FSDP_ATOL if strategy == "fsdp" else ATOL)
    for key in ("loss/total", "loss/policy", "loss/entropy", "loss/grad_norm"):
        assert saved["metrics"][key] == pytest.approx(metrics[key], abs=ATOL), key


def test_two_rank_lora_update_with_kl_equals_one_process_update(batch, two_ranks):
    params, metrics = one_process_update(batch, LossAggregation.token, lora=True, beta=0.1)
    saved = torch.load(two_ranks / "update-ddp-lora.pt")
    trainable = {n: p for n, p in params.items() if n in saved["state"]}
    assert trainable and all("lora_" in n for n in trainable)
    assert_same(trainable, saved["state"])
    for key in ("loss/total", "loss/kl_ref", "loss/grad_norm"):
        assert saved["metrics"][key] == pytest.approx(metrics[key], abs=ATOL), key


def test_aggregations_differ_on_this_batch(batch):
    """The batch has unequal lengths, so the three normalisers give three different updates
    (each equality above tests its own normaliser)."""
    updates = [one_process_update(batch, agg)[0] for agg in LossAggregation]
    for a, b in [(0, 1), (0, 2), (1, 2)]:
        diff = max(float((updates[a][n] - updates[b][n]).abs().max()) for n in updates[a])
        assert diff > 1e-4


def resume_on_one_rank(batch, run_dir: Path) -> tuple[dict, dict]:
    trainer = GRPOTrainer(tiny(seed=99), toy_pool(batch["catalog"]), run_config(), run_dir=run_dir)
    assert trainer.resume() and trainer.step_idx == 1
    metrics = trainer.step()
    return {n: p.detach() for n, p in trainer.policy.model.named_parameters()}, metrics


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_rank_checkpoint_resumes_on_one_rank(batch, two_ranks, strategy):
    params, metrics = resume_on_one_rank(batch, two_ranks / f"run-{strategy}")
    uninterrupted = torch.load(two_ranks / f"next-{strategy}.pt")
    assert_same(params, uninterrupted["state"])
    for key in ("reward/mean", "rollout/response_tokens", "rollout/sequence_tokens"):
        assert metrics[key] == uninterrupted["metrics"][key], key
    assert metrics["loss/total"] == pytest.approx(uninterrupted["metrics"]["loss/total"], abs=ATOL)


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_rank_checkpoint_resumes_on_two_ranks(two_ranks, strategy):
    resumed = torch.load(two_ranks / f"resumed-{strategy}.pt")
    uninterrupted = torch.load(two_ranks / f"next-{strategy}.pt")
    assert_same(resumed["state"], uninterrupted["state"])
    assert resumed["metrics"]["reward/mean"] == uninterrupted["metrics"]["reward/mean"]


def test_shards_must_divide_among_ranks(batch):
    config = run_config()
    config.rollout_shards = 3
    trainer = GRPOTrainer(tiny(), toy_pool(batch["catalog"]), config, dist=Dist())
    trainer.dist = Dist(rank=0, world_size=2)  # as if under torchrun, without a process group
    with pytest.raises(Exception, match="multiple of the number of ranks"):
        trainer._rollouts(trainer.pool.tasks("test")[:1])


def test_shard_deals_whole_groups(batch):
    trajs, adv = shard(batch, rank=1, world=2, group_size=4)
    assert [t.task for t in trajs] == [batch["trajs"][i].task for i in (4, 5, 6, 7, 12, 13, 14, 15)]
    assert torch.equal(adv, batch["advantages"][[4, 5, 6, 7, 12, 13, 14, 15]])


TINY_RUN = [
    "model=tiny",
    "threads=1",
    "logger=disabled",
    "logger.progress=false",
    "warm_start.epochs=0.3",
    "algo.tasks_per_step=2",
    "algo.group_size=2",
    "algo.rollout_shards=2",
    "algo.rollout.max_turns=1",
    "algo.rollout.max_new_tokens=4",
    "eval.max_tasks=2",
    "eval.max_turns=1",
    "eval.max_new_tokens=4",
    "eval.extra_envs=[]",
]


@pytest.mark.skipif(
    os.environ.get("AGENTWORLD_TORCHRUN_E2E") != "1",
    reason="two more launches of the whole entry point (~1 min): AGENTWORLD_TORCHRUN_E2E=1",
)
def test_train_entry_point_unchanged_under_torchrun_then_resumed_in_one_process(tmp_path):
    """``experiments/train.py`` under ``torchrun --nproc_per_node 2`` (warm start, evaluation
    and logging on rank 0, GRPO on both), then the same folder resumed by a plain one-process
    run for one more step."""
    pytest.importorskip("hydra")
    script = str(HERE.parent / "experiments" / "train.py")
    env = {**os.environ, "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1"}
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node"]
    args = [*TINY_RUN, f"hydra.run.dir={tmp_path}"]
    done = subprocess.run(
        [*launch, "2", script, *args, "algo.steps=1"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert (tmp_path / "checkpoints" / "grpo-000001").is_dir()
    state = torch.load(tmp_path / "checkpoints" / "grpo-000001" / "state.pt", weights_only=False)
    assert state["extra"] == {"world_size": 2, "layout": "ddp"}
    done = subprocess.run(
        [sys.executable, script, *args, "algo.steps=2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "resumed GRPO from" in done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if r.get("phase") == "grpo"] == [1, 2]


@pytest.mark.parametrize("name, strategy, ranks", [("gpu_1x8", "ddp", 8), ("gpu_2x8", "fsdp", 16)])
def test_multi_gpu_configs_compose(name, strategy, ranks):
    pytest.importorskip("hydra")
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from algorithms.pipeline import TrainConfig, register_configs

    register_configs()
    with initialize_config_dir(config_dir=str(HERE.parent / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_object(compose(config_name=name))
    assert isinstance(cfg, TrainConfig) and cfg.distributed.strategy.value == strategy
    # every rank plays whole groups, and the episodes do not depend on the number of ranks
    assert cfg.algo.tasks_per_step >= ranks and cfg.algo.rollout_shards % ranks == 0

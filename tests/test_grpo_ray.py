"""GRPO with its rollouts on Ray actors across two Ray nodes started on this machine
(``ray start --head`` and ``ray start --address``, started and stopped here).

Opt-in (``AGENTWORLD_RAY_CLUSTER=1``): bringing up two Ray nodes and two actors that each load
torch and transformers takes about a minute on a busy 2-core machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if os.environ.get("AGENTWORLD_RAY_CLUSTER") != "1":
    pytest.skip(
        "a two-node Ray cluster (~1 min): AGENTWORLD_RAY_CLUSTER=1", allow_module_level=True
    )
pytest.importorskip("ray")
torch = pytest.importorskip("torch")
torch.set_num_threads(1)
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from grpo_dist_worker import tiny, toy_pool  # noqa: E402

from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.grpo.remote import LocalCluster, RemoteRolloutConfig  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    # the toy env's tools are Python in tests/toy_env.py: the workers import them from here
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), old) if p)
    try:
        with LocalCluster(nodes=2, cpus_per_node=1) as running:
            yield running
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old


def config(**overrides) -> GRPOConfig:
    values = dict(
        steps=2,
        tasks_per_step=4,
        group_size=4,
        lr=1e-2,
        micro_batch_size=4,
        rollout_shards=2,
        rollout=RolloutConfig(max_turns=2, max_new_tokens=5, max_episode_tokens=4000),
    )
    return GRPOConfig(**{**values, **overrides})


def test_rollouts_on_both_nodes_with_the_updated_weights(cluster, toy_catalog):
    pool = toy_pool(str(toy_catalog))
    remote = RemoteRolloutConfig(workers=2, address=cluster.address)
    trainer = GRPOTrainer(tiny(), pool, config(remote=remote))
    try:
        assert len(set(trainer.runner.nodes)) == 2  # one worker on each node
        before = {n: p.detach().clone() for n, p in trainer.policy.model.named_parameters()}
        history = trainer.train(resume=False)
        after = {n: p.detach() for n, p in trainer.policy.model.named_parameters()}
        assert max(float((after[n] - before[n]).abs().max()) for n in before) > 1e-3
        # the workers sampled step 2 from the updated weights: their log-probabilities are the
        # trainer's (a stale copy would be off by the update)
        assert all(m["rollout/logprob_gap"] < 1e-4 for m in history)
        assert trainer.runner.version == 3  # the initial weights, then one sync per update
    finally:
        trainer.close()
    # the same run in one process, sampling shard by shard as the two workers did
    local = GRPOTrainer(tiny(), pool, config()).train(resume=False)
    for key in ("reward/mean", "rollout/response_tokens", "rollout/sequence_tokens"):
        assert [m[key] for m in history] == [m[key] for m in local], key

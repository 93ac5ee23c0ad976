"""GRPO end to end on a tiny random model (no downloads): bookkeeping, exactness, learning,
resume."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)  # tiny models: one thread, no stalls on a busy machine
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import agentworld_gym  # noqa: E402
from algorithms.grpo.config import GRPOConfig  # noqa: E402
from algorithms.grpo.logprobs import make_micro_batches, token_logprobs  # noqa: E402
from algorithms.grpo.rollout import RolloutConfig, run_episodes  # noqa: E402
from algorithms.grpo.trainer import GRPOTrainer  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402


def toy_pool(root: Path, train_split: str = "train") -> TaskPool:
    """A pool over the toy catalog at ``root``, which takes the toy id over from other roots."""
    agentworld_gym.register_catalog(root, replace=True)
    return TaskPool(EnvPoolConfig(catalogs=[str(root)], envs=["toy"], train_split=train_split))


def tiny(seed: int = 0, lora: bool = False):
    return load_policy(ModelConfig(name="tiny", lora=lora, dtype="float32", seed=seed, lora_r=4))


def test_rollout_trains_on_exactly_the_sampled_tokens(toy_catalog):
    policy, pool = tiny(), toy_pool(toy_catalog)
    tasks = pool.tasks("all")
    config = RolloutConfig(max_turns=3, max_new_tokens=6, max_episode_tokens=4000)
    trajs = run_episodes(
        policy.generator, pool, [t for t in tasks for _ in range(2)], "all", config
    )
    fmt = policy.generator.chat_format
    for traj in trajs:
        assert len(traj.token_ids) == len(traj.mask) == len(traj.sample_logprobs)
        prompt = fmt.prompt_ids(traj.messages[:2], pool_tools(pool))
        assert traj.token_ids[: len(prompt)] == prompt and not any(traj.mask[: len(prompt)])
        assert 1 <= traj.turns <= 3 and traj.end in {"answer", "max_turns", "token_budget"}
    # the training forward (shared prefix, policy positions only) reproduces the sampler
    batches = make_micro_batches(
        [t.token_ids for t in trajs],
        [t.mask for t in trajs],
        4,
        sample_logprobs=[t.sample_logprobs for t in trajs],
    )
    with torch.no_grad():
        for mb in batches:
            logp, _ = token_logprobs(policy.model, mb)
            mask = mb.target_mask.bool()
            assert mask.sum() > 0
            assert torch.allclose(logp[mask], mb.sample_logprobs[mask], atol=1e-4)


def pool_tools(pool: TaskPool):
    env = pool.acquire("AgentWorld/toy-v0", "all")
    _, info = env.reset(options={"task_id": "close-i1"})
    pool.release(env, "AgentWorld/toy-v0", "all")
    return info["tools"]


def test_shared_prefix_forward_equals_full_forward_with_gradients():
    policy = tiny(seed=3)
    prefix = list(range(4, 30))
    seqs = [prefix + [5, 6, 7, 8, 9], prefix + [9, 8], prefix + [7, 7, 7, 7, 7, 7, 7]]
    masks = [[0] * len(prefix) + [1] * (len(s) - len(prefix)) for s in seqs]
    masks[0][-2] = 0  # a tool token inside the response is never trained on
    results = []
    for share in (True, False):
        policy.model.zero_grad()
        (mb,) = make_micro_batches(seqs, masks, 8, share_prefix=share)
        assert (mb.prefix.numel() > 0) == share
        logp, _ = token_logprobs(policy.model, mb)
        logp.sum().backward()
        grads = [p.grad.clone() for p in policy.model.parameters() if p.grad is not None]
        picked = logp[mb.target_mask.bool()]
        results.append((picked.detach(), grads))
    (a, ga), (b, gb) = results
    assert a.numel() == sum(sum(m) for m in masks) and torch.allclose(a, b, atol=1e-5)
    assert all(torch.allclose(x, y, atol=1e-5) for x, y in zip(ga, gb, strict=True))


def grpo_config(**overrides) -> GRPOConfig:
    values = dict(
        steps=20,
        tasks_per_step=2,
        group_size=8,
        lr=1e-2,
        micro_batch_size=16,
        rollout=RolloutConfig(max_turns=1, max_new_tokens=3, temperature=1.0),
    )
    return GRPOConfig(**{**values, **overrides})


def test_grpo_raises_mean_reward_on_a_tiny_task(toy_catalog):
    # "How many items are open?" scores 0.5 for any answer and 1.0 when it contains "2"
    policy, pool = tiny(seed=0), toy_pool(toy_catalog, train_split="test")
    trainer = GRPOTrainer(policy, pool, grpo_config())
    history = trainer.train(resume=False)
    first = sum(m["reward/mean"] for m in history[:5]) / 5
    last = sum(m["reward/mean"] for m in history[-5:]) / 5
    assert last > first + 0.2, (first, last)  # seeded: 0.52 -> 1.0
    assert all(m["rollout/logprob_gap"] < 1e-3 for m in history)


def test_resume_repeats_the_uninterrupted_run(tmp_path, toy_catalog):
    pool = toy_pool(toy_catalog, train_split="test")
    config = grpo_config(steps=3, checkpoint_every=1, lr=1e-2)
    full = GRPOTrainer(tiny(seed=1), pool, config, run_dir=tmp_path / "a").train(resume=False)
    GRPOTrainer(tiny(seed=1), pool, config, run_dir=tmp_path / "b").train(steps=2, resume=False)
    resumed = GRPOTrainer(tiny(seed=1), pool, config, run_dir=tmp_path / "b")
    rest = resumed.train()
    assert resumed.step_idx == 3 and len(rest) == 1
    assert rest[0]["reward/mean"] == full[2]["reward/mean"]
    assert rest[0]["loss/policy"] == pytest.approx(full[2]["loss/policy"], abs=1e-6)


def test_lora_kl_reference_and_dynamic_sampling(toy_catalog):
    policy, pool = tiny(seed=2, lora=True), toy_pool(toy_catalog, train_split="test")
    assert policy.is_lora
    trainer = GRPOTrainer(policy, pool, grpo_config(steps=3, beta=0.1, dynamic_sampling=True))
    history = trainer.train(resume=False)
    assert trainer.reference is None  # adapters off = reference, no second copy
    updated = [m for m in history if "loss/kl_ref" in m]
    assert all(m["loss/kl_ref"] >= 0 for m in updated)
    assert all(0.0 <= m["rollout/groups_kept"] <= 1.0 for m in history)


def test_reward_gate_trains_on_no_reward_without_a_successful_call(toy_catalog):
    # rewards that differ within each group, none earned with a successful call (the toy
    # question pays for an answer alone): reported as they are, but nothing to learn from
    from algorithms.grpo.rollout import Trajectory

    policy, pool = tiny(seed=0), toy_pool(toy_catalog, train_split="test")
    config = grpo_config(steps=1, dynamic_sampling=True, reward_needs_ok_call=True)
    trainer = GRPOTrainer(policy, pool, config)
    task = pool.tasks("test")[0]
    rewards = [0.5, 1.0, 0.0, 0.5, 0.5, 0.0, 1.0, 0.5] * config.tasks_per_step
    trajs = [
        Trajectory(task, [1, 2, 3], [0, 1, 1], [0.0] * 3, reward=r, turns=1, end="answer")
        for r in rewards
    ]
    trainer._rollouts = lambda tasks: (trajs, trajs)
    step = trainer.step()
    assert step["reward/std"] > 0 and step["reward/without_ok_call"] > 0.5
    assert step["rollout/groups_kept"] == 0.0 and step["reward/advantage_abs"] == 0.0
    assert "loss/policy" not in step  # no update
    trajs[0].ok_tool_calls = 1  # one rewarded episode with a successful call: its group learns
    assert trainer.step()["rollout/groups_kept"] == 1 / config.tasks_per_step


def test_merging_warm_start_adapters_keeps_the_function_and_resets_the_reference():
    from algorithms.models import merge_adapters

    policy = tiny(seed=5, lora=True)
    with torch.no_grad():
        for name, p in policy.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.3)  # a "trained" adapter
    ids = torch.tensor([[4, 5, 6, 7, 8]])
    with torch.no_grad():
        before = policy.model(ids).logits
        merged = merge_adapters(policy)
        after = merged.model(ids).logits
        with merged.model.disable_adapter():
            reference = merged.model(ids).logits
    assert merged.is_lora and merged.generator.model is merged.model
    assert torch.allclose(before, after, atol=1e-5) and torch.allclose(before, reference, atol=1e-5)


class ShiftedGenerator:
    """The policy's own generator reporting log-probabilities 0.5 lower: a sampler slightly
    off the trained policy (as vLLM or bf16 kernels are), with the same samples."""

    def __init__(self, inner):
        self.inner = inner
        self.chat_format = inner.chat_format
        self.pad_token_id = inner.pad_token_id

    def generate(self, prompts, sampling, tools=None):
        import dataclasses

        out = self.inner.generate(prompts, sampling, tools)
        return [dataclasses.replace(g, logprobs=[lp - 0.5 for lp in g.logprobs]) for g in out]

    def sync_weights(self, model):
        self.inner.sync_weights(model)


@pytest.mark.parametrize("cap, weight", [(2.0, math.exp(0.5)), (1.2, 1.2), (0.0, None)])
def test_generator_gap_is_logged_and_truncated_is_applied(toy_catalog, cap, weight):
    pool = toy_pool(toy_catalog, train_split="test")
    config = grpo_config(steps=1, tis_cap=cap)
    plain = GRPOTrainer(tiny(seed=4), pool, config).train(resume=False)[0]
    policy = tiny(seed=4)
    shifted = GRPOTrainer(policy, pool, config, generator=ShiftedGenerator(policy.generator))
    metrics = shifted.train(resume=False)[0]
    assert plain["rollout/logprob_gap"] < 1e-3
    assert metrics["rollout/logprob_gap"] == pytest.approx(0.5, abs=1e-3)
    assert plain["loss/grad_norm"] > 1e-3
    if weight is None:  # correction off: the gap is logged, the gradient is the uncorrected one
        assert "rollout/is_weight_mean" not in metrics
        assert metrics["loss/grad_norm"] == pytest.approx(plain["loss/grad_norm"], rel=1e-4)
        return
    assert metrics["rollout/is_weight_mean"] == pytest.approx(weight, rel=1e-3)
    assert metrics["rollout/is_truncated_frac"] == (1.0 if weight == cap else 0.0)
    # every token has the same weight here, so the policy gradient is scaled by it
    assert metrics["loss/grad_norm"] == pytest.approx(plain["loss/grad_norm"] * weight, rel=1e-3)


class RecordingGenerator:
    """The tiny generator, recording the tools each generate call was given."""

    def __init__(self, inner):
        self.inner, self.chat_format, self.seen = inner, inner.chat_format, []

    def generate(self, prompts, sampling, tools=None):
        self.seen.append(tools)
        return self.inner.generate(prompts, sampling, tools)


@pytest.mark.parametrize("constrain", [True, False])
def test_rollouts_hold_calls_to_each_episodes_tools(toy_catalog, constrain):
    """constrain_calls hands every row its episode's tools (the grammar's input); off, none."""
    policy, pool = tiny(), toy_pool(toy_catalog)
    recorder = RecordingGenerator(policy.generator)
    config = RolloutConfig(max_turns=2, max_new_tokens=4, constrain_calls=constrain)
    run_episodes(recorder, pool, pool.tasks("all")[:3], "all", config)
    assert recorder.seen
    for tools in recorder.seen:
        if constrain:
            assert tools is not None and all(t == pool_tools(pool) for t in tools)
        else:
            assert tools is None

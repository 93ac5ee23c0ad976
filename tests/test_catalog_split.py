"""The catalog rule of the main job: computed pools that never overlap, held-out parts that
training never sees, nested training pools, and the held-out report's statistics."""

from __future__ import annotations

import dataclasses

import pytest

import agentworld_gym
from agentworld_gym.suites import bootstrap_interval
from algorithms.catalog_split import CatalogRule, Part, fitting_tasks, split_catalog, tool_chars
from algorithms.evaluate import EvalResult
from algorithms.grpo.rollout import Trajectory, rollout_metrics
from algorithms.heldout import markdown_table, report
from algorithms.pool import EnvPoolConfig, TaskPool, TaskRef

RULE = CatalogRule(enabled=True)


@pytest.fixture(scope="module")
def split():
    return split_catalog(RULE)


def test_parts_are_disjoint_and_follow_the_rule(split):
    train, held, cat = set(split.train), set(split.heldout_envs), set(split.heldout_category)
    assert train and held and not (train & held or train & cat or held & cat)
    for env_id in train | held | cat:
        spec = agentworld_gym.load_spec(env_id)
        assert len(spec.tools) <= RULE.max_tools and tool_chars(spec) <= RULE.max_tool_chars
        tasks = fitting_tasks(spec, RULE)
        assert len(tasks) >= RULE.min_tasks
        assert all(len(t.gold["calls"]) <= RULE.max_gold_calls for t in tasks)
    if split.category is not None:
        categories = {agentworld_gym.load_spec(e).taxonomy.get("l1") for e in cat}
        assert categories == {split.category}
        assert all(agentworld_gym.load_spec(e).taxonomy.get("l1") != split.category for e in train)


def test_split_is_deterministic_and_training_pools_nest(split):
    assert split_catalog(RULE) == split
    small = split_catalog(dataclasses.replace(RULE, max_train_envs=2))
    assert small.train == split.train[:2] and small.heldout_envs == split.heldout_envs
    other = split_catalog(dataclasses.replace(RULE, seed=1))
    assert (other.heldout_envs, other.category) != (split.heldout_envs, split.category)


def test_pool_parts_hold_only_fitting_tasks(split):
    config = EnvPoolConfig(rule=RULE)
    train = TaskPool(config)
    held = TaskPool(
        dataclasses.replace(config, rule=dataclasses.replace(RULE, part=Part.heldout_envs))
    )
    assert train.env_ids == split.train and held.env_ids == split.heldout_envs
    assert {t.env_id for t in train.tasks("train")} <= set(split.train)
    assert len(held.tasks("all")) == sum(split.tasks[e] for e in split.heldout_envs)


def test_hacking_guard_counts_reward_without_a_successful_call():
    ref = TaskRef("e", "t")
    trajs = [
        Trajectory(ref, reward=0.4, tool_calls=1, ok_tool_calls=0),  # rewarded, no ok call
        Trajectory(ref, reward=1.0, tool_calls=2, ok_tool_calls=2),
        Trajectory(ref, reward=0.0),
        Trajectory(ref, reward=0.0, tool_calls=1, ok_tool_calls=1),
    ]
    assert rollout_metrics(trajs)["reward/without_ok_call"] == 0.25
    trajs[3].verification = {"reward": 0.0, "unpaid": "the answer is paid only for what ..."}
    assert rollout_metrics(trajs)["reward/unpaid"] == 0.25


def _result(successes: list[float]) -> EvalResult:
    n = len(successes)
    return EvalResult(sum(successes) / n, 0.0, n, 1.0, {"e": {}}, episode_success=successes)


def test_report_pairs_models_on_the_same_episodes():
    base = _result([0.0] * 50)
    trained = _result([1.0] * 10 + [0.0] * 40)
    rep = report({"base": {"held-out envs": base}, "trained": {"held-out envs": trained}})
    row = rep["held-out envs"]
    assert row["base"]["ci95"] == (0.0, 0.0)
    low, high = row["trained"]["ci95"]
    assert 0.05 < low < 0.2 < high < 0.35
    assert row["diff"]["trained-base"]["mean"] == pytest.approx(0.2)
    assert "| held-out envs | 50 (1) | 0.0% [0.0%, 0.0%] | 20.0%" in markdown_table(rep)
    # paired: identical outcomes differ by exactly zero, however noisy each one is
    assert bootstrap_interval([1.0, 0.0] * 20, [1.0, 0.0] * 20) == (0.0, 0.0)


def test_sets_share_rollout_batches_and_come_back_apart():
    import torch

    from algorithms.evaluate import EvalConfig
    from algorithms.heldout import eval_sets, evaluate_sets
    from algorithms.models import ModelConfig, load_policy

    torch.manual_seed(0)
    policy = load_policy(ModelConfig(name="tiny", dtype="float32", lora=False))
    config = EvalConfig(max_tasks=2, max_turns=1, max_new_tokens=3, batch_size=64)
    sets = eval_sets(TaskPool(EnvPoolConfig(rule=RULE)), config)
    results = evaluate_sets(policy.generator, sets)
    assert list(results) == [s.name for s in sets] and len(sets) == 3
    for s in sets:
        assert results[s.name].episodes == 2
        assert set(results[s.name].per_env) <= set(s.pool.env_ids)


def test_eval_parts_choose_the_sets_and_a_wrong_name_says_which_exist():
    from agentworld_gym.errors import ConfigError
    from algorithms.evaluate import EvalConfig
    from algorithms.heldout import close_sets, eval_sets

    pool = TaskPool(EnvPoolConfig(rule=RULE))
    sets = eval_sets(pool, EvalConfig(parts=["heldout_envs"]))
    try:
        assert [s.name for s in sets] == ["held-out envs"]
        assert set(sets[0].pool.env_ids) == set(split_catalog(RULE).heldout_envs)
    finally:
        close_sets(sets)
    with pytest.raises(ConfigError, match="heldout_category"):
        eval_sets(pool, EvalConfig(parts=["heldout"]))
    pool.close()


def test_gold_nll_scores_each_gold_trajectory_and_the_report_shows_it():
    import math

    import torch

    from algorithms.evaluate import EvalConfig
    from algorithms.heldout import close_sets, eval_sets, evaluate_sets, gold_nll
    from algorithms.models import ModelConfig, load_policy

    torch.manual_seed(0)
    policy = load_policy(ModelConfig(name="tiny", dtype="float32", lora=False))
    pool = TaskPool(EnvPoolConfig(rule=RULE))
    config = EvalConfig(
        max_tasks=3, max_turns=1, max_new_tokens=2, parts=["heldout_envs"], gold_nll=True
    )
    sets = eval_sets(pool, config)
    try:
        losses = gold_nll(policy.generator, sets[0])
        assert len(losses) == 3 and all(math.isfinite(x) and x > 0 for x in losses)
        # the shared system prompt is run once per environment: the same losses as one full
        # forward per trajectory
        from algorithms.evaluate import select_tasks
        from algorithms.sft import encode_gold

        fmt, s = policy.generator.chat_format, sets[0]
        examples = encode_gold(fmt, s.pool, s.config.split, 1 << 30, select_tasks(s.pool, s.config))
        for example, loss in zip(examples, losses, strict=True):
            with torch.no_grad():
                logits = policy.model(input_ids=torch.tensor([example.token_ids])).logits[0, :-1]
            logp = torch.log_softmax(logits.float(), -1)
            picked = logp.gather(1, torch.tensor(example.token_ids[1:])[:, None])[:, 0]
            full = float(-picked[torch.tensor(example.mask[1:], dtype=torch.bool)].mean())
            assert loss == pytest.approx(full, abs=1e-4)
        # a random model is near uniform over its vocabulary; loss is per assistant token
        vocab = policy.model.config.vocab_size
        assert all(abs(x - math.log(vocab)) < 0.5 * math.log(vocab) for x in losses)
        result = evaluate_sets(policy.generator, sets)["held-out envs"]
        assert result.episode_gold_nll == losses and result.gold_nll == sum(losses) / 3
        rep = report({"base": {"held-out envs": result}}, resamples=200)
        assert rep["held-out envs"]["base"]["gold_nll"] == result.gold_nll
        assert "Gold-trajectory loss" in markdown_table(rep)
    finally:
        close_sets(sets)
        pool.close()

"""SFT warm start on gold trajectories: masking and learning, on a tiny random model."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)  # tiny models: one thread, no stalls on a busy machine
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


import agentworld_gym  # noqa: E402
from algorithms.models import ModelConfig, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402
from algorithms.sft import (  # noqa: E402
    Example,
    SFTConfig,
    answer_stop_probs,
    call_start_tokens,
    gold_budget,
    gold_examples,
    run_sft,
)


@pytest.fixture
def toy_pool(toy_catalog: Path) -> TaskPool:
    """A fresh pool over the toy catalog, which takes the toy id over from other roots."""
    agentworld_gym.register_catalog(toy_catalog, replace=True)
    return TaskPool(EnvPoolConfig(catalogs=[str(toy_catalog)], envs=["toy"], train_split="all"))


def test_gold_examples_mask_only_assistant_turns(toy_pool):
    policy = load_policy(ModelConfig(name="tiny", lora=False, dtype="float32"))
    examples = gold_examples(policy, toy_pool, "all", max_tokens=10_000)
    assert {e.task_id for e in examples} == {"close-i1", "count-open", "script-new"}
    tok = policy.tokenizer
    for e in examples:
        trained = tok.decode([t for t, m in zip(e.token_ids, e.mask, strict=True) if m])
        assert "<|im_end|>" in tok.convert_ids_to_tokens(
            [t for t, m in zip(e.token_ids, e.mask, strict=True) if m]
        )
        assert "tool_call" in trained or e.task_id == "none"
        # system, user and tool-result text is never a target
        first = e.mask.index(1)
        assert tok.convert_ids_to_tokens(e.token_ids[first - 2 : first]) == [
            "<|im_start|>",
            "<unk>",
        ]


def test_sft_lowers_the_loss(tmp_path, toy_pool):
    policy = load_policy(ModelConfig(name="tiny", lora=False, dtype="float32"))
    config = SFTConfig(epochs=8, lr=2e-2, batch_size=3, micro_batch_size=3, warmup_steps=0)
    from algorithms.tracking import LoggerConfig, Tracker, WandbMode

    tracker = Tracker(LoggerConfig(wandb=WandbMode.disabled, progress=False), tmp_path)
    run_sft(policy, toy_pool, config, tracker, run_dir=tmp_path)
    losses = [r["sft/loss"] for r in tracker.rows]
    assert len(losses) == 8 and losses[-1] < 0.6 * losses[0], losses  # seeded: 3.66 -> ~1.9
    assert (tmp_path / "checkpoints").is_dir()


def test_example_turns_are_the_assistant_spans():
    e = Example("env", "task", list(range(9)), [0, 0, 1, 1, 0, 1, 0, 1, 1])
    assert e.turns() == [(2, 4), (5, 6), (7, 9)]
    budget = gold_budget([e, Example("env", "t2", [0, 1], [0, 1])])
    assert (budget.most_turns, budget.longest_turn, budget.longest_episode) == (3, 2, 9)
    assert budget.problems("eval", 3, 2, 9) == []
    assert budget.problems("eval", 2, 1, 8) == [
        "eval.max_turns=2 is fewer than the 3 turns the longest gold episode takes",
        "eval.max_new_tokens=1 cuts 2 of 4 gold turns (the longest has 2 tokens)",
        "eval.max_episode_tokens=8 is below the longest gold episode (9 tokens)",
    ]


def _one_step(toy_pool, tmp_path, **overrides):
    from algorithms.tracking import LoggerConfig, Tracker, WandbMode

    torch.manual_seed(0)
    policy = load_policy(ModelConfig(name="tiny", lora=False, dtype="float32"))
    config = SFTConfig(steps=1, lr=1e-2, batch_size=3, micro_batch_size=3, warmup_steps=0)
    tracker = Tracker(LoggerConfig(wandb=WandbMode.disabled, progress=False), tmp_path)
    run_sft(policy, toy_pool, dataclasses.replace(config, **overrides), tracker)
    return tracker.rows[0], policy


def test_sft_logs_the_turn_decisions_and_can_weight_them(tmp_path, toy_pool):
    plain, _ = _one_step(toy_pool, tmp_path / "a")
    weighted, _ = _one_step(toy_pool, tmp_path / "b", turn_start_weight=5.0)
    # the probabilities are of the same untrained model before its first update
    for key in ("sft/turn_start_p", "sft/answer_start_p", "sft/answer_stop_p"):
        assert 0.0 < plain[key] < 1.0
        assert weighted[key] == pytest.approx(plain[key])
    assert plain["sft/answer_start_p"] != plain["sft/turn_start_p"]
    # the weighted loss leans towards the (hard) turn-start tokens: a larger mean
    assert weighted["sft/loss"] > plain["sft/loss"]


def test_answer_stop_p_is_one_minus_the_call_opening_probability(toy_pool):
    """``sft/answer_stop_p`` is the decision to answer, not the answer's first word: at the
    position before each final answer, one minus the probability of every token that opens a
    gold call, the same as a plain forward pass of the whole trajectory gives."""
    from algorithms.grpo.logprobs import make_micro_batches, token_logprobs, token_logprobs_probed

    torch.manual_seed(0)
    policy = load_policy(ModelConfig(name="tiny", lora=False, dtype="float32"))
    examples = gold_examples(policy, toy_pool, "all", max_tokens=10_000)
    calls = call_start_tokens(examples)
    tok = policy.tokenizer
    assert calls and all(
        tok.decode(e.token_ids[s : s + 3]).startswith("<")
        for e in examples
        for s, _ in e.turns()[:-1]
    ), tok.convert_ids_to_tokens(calls)
    asked = [e for e in examples if len(e.turns()) >= 2]
    assert asked
    (mb,) = make_micro_batches([e.token_ids for e in asked], [e.mask for e in asked], 8, True)
    model = policy.model.eval()
    with torch.no_grad():
        logp, call_p = token_logprobs_probed(model, mb, calls)
        plain, _ = token_logprobs(model, mb)
    assert torch.allclose(logp, plain)
    stops = answer_stop_probs(call_p, mb, [asked[r] for r in mb.rows], calls)
    expected, first_word = [], []
    for r in mb.rows:
        e, answer = asked[r], asked[r].turns()[-1][0]
        with torch.no_grad():
            probs = model(torch.tensor([e.token_ids])).logits[0].float().softmax(-1)
        expected.append(1.0 - float(probs[answer - 1, calls].sum()))
        first_word.append(float(probs[answer - 1, e.token_ids[answer]]))
    assert stops == pytest.approx(expected, abs=1e-4)
    # not the probability of the answer's first word (``sft/answer_start_p``)
    assert all(0.0 < p < 1.0 for p in stops) and first_word != pytest.approx(stops, abs=1e-3)

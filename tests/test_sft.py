"""SFT warm start on gold trajectories: masking and learning, on a tiny random model."""

from __future__ import annotations

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
from algorithms.sft import SFTConfig, gold_examples, run_sft  # noqa: E402


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

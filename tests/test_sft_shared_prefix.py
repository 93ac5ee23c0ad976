"""SFT's shared-prefix pass is exact: the same weighted loss, probes and gradients of every
trainable parameter as running each row whole, on a tiny random model (float32)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
torch.set_num_threads(1)  # tiny models: one thread, no stalls on a busy machine
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentworld_gym  # noqa: E402
from algorithms.grpo.logprobs import hidden_states  # noqa: E402
from algorithms.models import ModelConfig, Policy, load_policy  # noqa: E402
from algorithms.pool import EnvPoolConfig, TaskPool  # noqa: E402
from algorithms.sft import (  # noqa: E402
    Example,
    SFTConfig,
    backward_step,
    micro_batch_loss,
    prefix_tokens_saved,
    run_sft,
    sft_micro_batches,
)

PREFIX = 80  # a "system prompt" all rows share
CALLS = [1, 2]  # "call-opening" token ids: probed only, no answer here opens with one


def tiny(lora: bool, last: int | None = None) -> Policy:
    torch.manual_seed(0)  # LoRA adapters are drawn from the global RNG
    policy = load_policy(
        ModelConfig(
            name="tiny", lora=lora, lora_r=4, lora_last_layers=last, dtype="float32", seed=4
        )
    )
    if lora:  # peft starts B at zero: make the adapters matter
        with torch.no_grad():
            for name, p in policy.model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.05)
    return policy


def example(task: str, ids: list[int], turns: list[tuple[int, int]]) -> Example:
    mask = [0] * len(ids)
    for start, end in turns:
        mask[start:end] = [1] * (end - start)
    return Example("env", task, ids, mask)


def rows() -> list[Example]:
    """Three rows over one 80-token prefix, suffixes of 16, 31 and 9 tokens. Row ``a``'s
    first target is token 80, right after the common prefix (rows ``a`` and ``b`` differ at
    80): the shared prefix must stop at 79 so that the logit predicting it is computed."""
    gen = torch.Generator().manual_seed(1)
    prefix = torch.randint(4, 40, (PREFIX,), generator=gen).tolist()
    a = [*prefix, 7, 20, 21, 22, 23, 5, 9, 11, 30, 31, 32, 33, 34, 35, 36, 3]
    b = [*prefix, 12, *torch.randint(4, 40, (29,), generator=gen).tolist(), 3]
    c = [*a[: PREFIX + 5], 14, 15, 16, 3]  # shares row a's first target and more
    return [
        example("a", a, [(PREFIX, PREFIX + 5), (PREFIX + 8, len(a))]),
        example("b", b, [(PREFIX + 10, PREFIX + 14), (PREFIX + 20, len(b))]),
        example("c", c, [(PREFIX, PREFIX + 2), (PREFIX + 6, len(c))]),
    ]


def step(policy: Policy, batch: list[Example], share: bool) -> dict[str, object]:
    """One step's loss, probes and gradients as :func:`run_sft` computes them."""
    config = SFTConfig(share_prefix=share, turn_start_weight=5.0, micro_batch_size=8)
    micro, weights = sft_micro_batches(batch, config, pad_id=0)
    policy.model.zero_grad(set_to_none=True)
    policy.model.train()
    loss_sum, starts, answers, stops = backward_step(policy.model, batch, micro, weights, CALLS)
    grads = {
        name: p.grad.clone()
        for name, p in policy.model.named_parameters()
        if p.requires_grad and p.grad is not None
    }
    trainable = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    return {
        "loss": torch.tensor(loss_sum),
        "probs": torch.tensor([*starts, *answers, *stops]),
        "grads": grads,
        "trainable": trainable,
        "micro": micro,
    }


def assert_same(shared: dict, plain: dict) -> None:
    assert torch.allclose(shared["loss"], plain["loss"], rtol=1e-5, atol=1e-6)
    assert torch.allclose(shared["probs"], plain["probs"], rtol=1e-4, atol=1e-6)
    assert set(shared["grads"]) == set(plain["grads"]) == set(plain["trainable"])
    for name, grad in plain["grads"].items():
        assert torch.allclose(shared["grads"][name], grad, rtol=1e-4, atol=1e-6), name
        assert grad.abs().sum() > 0, name  # every trainable parameter gets a gradient


@pytest.mark.parametrize(
    ("lora", "last"),
    [(False, None), (True, None), (True, 1)],
    ids=["full", "lora", "lora-top-layer"],
)
def test_shared_prefix_loss_and_gradients_equal_the_plain_path(lora, last):
    policy, batch = tiny(lora, last), rows()
    shared, plain = step(policy, batch, True), step(policy, batch, False)
    (mb,) = shared["micro"]
    assert mb.prefix.numel() == PREFIX - 1  # one short of the common prefix: the boundary
    assert all(m.prefix.numel() == 0 for m in plain["micro"])
    assert prefix_tokens_saved(shared["micro"]) == (PREFIX - 1) * 2
    assert prefix_tokens_saved(plain["micro"]) == 0
    assert len(shared["probs"]) == 6 + 3 + 3  # every turn start, each answer, each stop
    assert_same(shared, plain)


def test_prefix_stops_before_the_first_target_of_identical_prompts():
    # the rows agree well past their first target: the prefix still ends one token before it
    policy, batch = tiny(lora=True), rows()
    batch = [batch[0], batch[2]]  # a and c share 85 tokens; targets from token 80
    shared, plain = step(policy, batch, True), step(policy, batch, False)
    (mb,) = shared["micro"]
    assert mb.prefix.numel() == PREFIX - 1
    assert_same(shared, plain)


def test_rows_without_a_long_common_prefix_are_not_shared():
    # rows that share under half of their prompt are different environments: each goes in
    # its own micro-batch (its prompt alone is its "prefix"); rows sharing nothing before
    # their first target run whole (the plain path, prefix empty)
    policy, batch = tiny(lora=True), rows()
    other = example("x", [33, 34, *batch[1].token_ids[2:]], [(3, 6), (20, 40)])
    mixed = [batch[0], other]
    shared, plain = step(policy, mixed, True), step(policy, mixed, False)
    assert sorted(len(mb.rows) for mb in shared["micro"]) == [1, 1]
    assert prefix_tokens_saved(shared["micro"]) == 0
    assert_same(shared, plain)
    # a first target at token 1 leaves no prefix to share
    short = [example("p", [5, 6, 7, 8], [(1, 4)]), example("q", [5, 9, 7, 3], [(1, 4)])]
    shared, plain = step(policy, short, True), step(policy, short, False)
    assert [(len(mb.rows), mb.prefix.numel()) for mb in shared["micro"]] == [(2, 0)]
    assert_same(shared, plain)


def test_empty_prefix_runs_the_plain_forward():
    policy = tiny(lora=False)
    micro, _ = sft_micro_batches(rows(), SFTConfig(share_prefix=False), pad_id=0)
    (mb,) = micro
    decoder = policy.model.get_decoder()
    with torch.no_grad():
        plain = decoder(input_ids=mb.suffix, attention_mask=mb.attention).last_hidden_state
        ours = hidden_states(policy.model, mb)
    real = mb.attention.bool()
    assert torch.equal(ours[real], plain[real])


def test_run_sft_steps_are_the_same_with_and_without_sharing(tmp_path, toy_catalog):
    agentworld_gym.register_catalog(toy_catalog, replace=True)
    pool = TaskPool(EnvPoolConfig(catalogs=[str(toy_catalog)], envs=["toy"], train_split="all"))
    from algorithms.tracking import LoggerConfig, Tracker, WandbMode

    runs = []
    for share in (True, False):
        policy = tiny(lora=True, last=1)
        config = SFTConfig(
            steps=2, lr=1e-2, batch_size=3, micro_batch_size=3, warmup_steps=0,
            turn_start_weight=5.0, share_prefix=share,
        )  # fmt: skip
        logs = LoggerConfig(wandb=WandbMode.disabled, progress=False)
        tracker = Tracker(logs, tmp_path / str(share))
        run_sft(policy, pool, config, tracker)
        params = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
        runs.append((tracker.rows, params))
    (shared, shared_params), (plain, plain_params) = runs
    assert all(r["sft/prefix_tokens_saved"] > 0 for r in shared)
    assert all(r["sft/prefix_tokens_saved"] == 0 for r in plain)
    for a, b in zip(shared, plain, strict=True):
        for key in ("sft/loss", "sft/grad_norm", "sft/turn_start_p", "sft/answer_stop_p"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-6), key
    for name, value in plain_params.items():
        assert torch.allclose(shared_params[name], value, rtol=1e-4, atol=1e-6), name


def test_no_call_tokens_to_probe():
    # gold episodes that only answer have no call-opening token: nothing to probe, same loss
    policy, batch = tiny(lora=True), rows()
    micro, weights = sft_micro_batches(batch, SFTConfig(), pad_id=0)
    (mb,), (weight,) = micro, weights
    probed, _, _ = micro_batch_loss(policy.model, mb, weight, 10.0, CALLS)
    loss, _, call_p = micro_batch_loss(policy.model, mb, weight, 10.0, [])
    assert torch.allclose(loss, probed) and not call_p.any()

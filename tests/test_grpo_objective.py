"""The GRPO objective against hand-computed values: advantages, clipping, masking, KL."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from algorithms.grpo.objective import (  # noqa: E402
    LossAggregation,
    aggregate,
    clipped_policy_loss,
    gated_rewards,
    group_advantages,
    informative_groups,
    k3_kl,
    truncated_is_weights,
)


def test_gated_rewards_zero_episodes_without_a_successful_call():
    rewards = torch.tensor([0.5, 1.0, 0.0, 0.25])
    gated = gated_rewards(rewards, torch.tensor([0, 1, 0, 3]))
    assert gated.tolist() == [0.0, 1.0, 0.0, 0.25]
    assert rewards.tolist() == [0.5, 1.0, 0.0, 0.25]  # not in place


def test_group_advantages_mean_centred_and_std_normalised():
    rewards = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5])
    adv = group_advantages(rewards, 4)
    std = torch.tensor([1.0, 0.0, 0.0, 0.0]).std().item()  # unbiased: sqrt(0.25) = 0.5
    assert std == pytest.approx(0.5)
    expected = [
        0.75 / (0.5 + 1e-4),
        -0.25 / (0.5 + 1e-4),
        -0.25 / (0.5 + 1e-4),
        -0.25 / (0.5 + 1e-4),
    ]
    assert adv[:4].tolist() == pytest.approx(expected)
    assert adv[4:].tolist() == [0.0, 0.0, 0.0, 0.0]  # all-equal group: no signal


def test_dr_grpo_advantages_skip_std():
    adv = group_advantages(torch.tensor([2.0, 0.0, 1.0, 1.0]), 2, scale_by_std=False)
    assert adv.tolist() == [1.0, -1.0, 0.0, 0.0]


def test_group_advantages_rejects_ragged_batches():
    with pytest.raises(ValueError, match="num_groups"):
        group_advantages(torch.zeros(5), 2)


def test_informative_groups_drop_equal_rewards():
    keep = informative_groups(torch.tensor([1.0, 1.0, 0.0, 1.0, 0.0, 0.0]), 2)
    assert keep.tolist() == [False, True, False]


def test_k3_kl_hand_values():
    logp = torch.tensor([math.log(0.5), math.log(0.25)])
    ref = torch.tensor([math.log(0.25), math.log(0.25)])
    # delta = ref - logp = [-ln 2, 0] -> exp(-ln2) + ln2 - 1 = 0.5 + 0.6931 - 1
    assert k3_kl(logp, ref).tolist() == pytest.approx([0.5 + math.log(2) - 1, 0.0])


def test_aggregations_on_masked_tokens():
    per_token = torch.tensor([[1.0, 2.0, 3.0], [4.0, 100.0, 100.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    assert aggregate(per_token, mask, LossAggregation.token).item() == pytest.approx(10 / 4)
    assert aggregate(per_token, mask, LossAggregation.sequence).item() == pytest.approx((2 + 4) / 2)
    constant = aggregate(per_token, mask, LossAggregation.constant, max_tokens=5)
    assert constant.item() == pytest.approx(10 / (2 * 5))
    # micro-batches normalised by the whole batch add up to the full-batch value
    halves = sum(
        aggregate(per_token[i : i + 1], mask[i : i + 1], LossAggregation.token, batch_tokens=4)
        for i in range(2)
    )
    assert halves.item() == pytest.approx(10 / 4)


def test_clipped_loss_hand_computed_with_asymmetric_clip():
    # one trajectory, A = +1 for row 0 and A = -1 for row 1; old logp = 0
    ratio = torch.tensor([[1.5, 0.9, 1.1], [0.5, 1.1, 2.0]])
    logp = ratio.log().requires_grad_(True)
    old = torch.zeros_like(logp)
    adv = torch.tensor([1.0, -1.0])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])  # last token of row 1 is a tool token
    loss, m = clipped_policy_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    # row 0 (A=+1): max(-r, -clip(r, .8, 1.28)) = [-1.28, -0.9, -1.1]
    # row 1 (A=-1): max(r, clip(r, .8, 1.28)) = [0.8, 1.1]   (2.0 is masked out)
    expected = (-1.28 - 0.9 - 1.1 + 0.8 + 1.1) / 5
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert m["loss/clip_frac_high"] == pytest.approx(1 / 5)
    assert m["loss/clip_frac_low"] == pytest.approx(1 / 5)
    loss.backward()
    # clipped tokens get no gradient; the masked token gets none either
    assert logp.grad[0, 0].item() == 0.0 and logp.grad[1, 0].item() == 0.0
    assert logp.grad[1, 2].item() == 0.0
    assert logp.grad[0, 1].item() == pytest.approx(-0.9 / 5)


def test_ratio_one_gives_plain_policy_gradient():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    loss, m = clipped_policy_loss(logp, logp.detach(), torch.tensor([2.0]), torch.ones(1, 2))
    assert loss.item() == pytest.approx(-2.0)
    loss.backward()
    assert logp.grad.tolist() == [[-1.0, -1.0]]  # d(-A * r)/dlogp = -A * r / n_tokens
    assert m["loss/approx_kl_old"] == pytest.approx(0.0)


def test_kl_term_is_added_with_beta():
    logp = torch.tensor([[math.log(0.5)]], requires_grad=True)
    ref = torch.tensor([[math.log(0.25)]])
    loss, m = clipped_policy_loss(
        logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 1), ref_logprobs=ref, beta=0.1
    )
    assert m["loss/kl_ref"] == pytest.approx(0.5 + math.log(2) - 1)
    assert loss.item() == pytest.approx(0.1 * (0.5 + math.log(2) - 1))
    with pytest.raises(ValueError, match="ref_logprobs"):
        clipped_policy_loss(logp, logp.detach(), torch.tensor([0.0]), torch.ones(1, 1), beta=0.1)


def test_truncated_is_weights_hand_values():
    trainer = torch.tensor([[-1.0, -1.0, -2.0, -0.5]])
    sampler = torch.tensor([[-1.0, -2.0, -1.0, float("nan")]])
    known = torch.tensor([[1, 1, 1, 1]])
    w = truncated_is_weights(trainer, sampler, known, cap=2.0)
    # exp(0) = 1; exp(1) = 2.72 -> cap 2; exp(-1) = 0.37; unknown (NaN) -> 1
    assert torch.allclose(w, torch.tensor([[1.0, 2.0, math.exp(-1.0), 1.0]]))
    unknown = truncated_is_weights(trainer, sampler, torch.zeros_like(known), cap=2.0)
    assert torch.equal(unknown, torch.ones_like(trainer))


def test_is_weights_scale_each_tokens_policy_term():
    logp = torch.tensor([[-1.0, -1.0]], requires_grad=True)
    mask = torch.tensor([[1, 1]])
    adv = torch.tensor([1.0])
    plain, _ = clipped_policy_loss(logp, logp.detach(), adv, mask)
    weighted, _ = clipped_policy_loss(
        logp, logp.detach(), adv, mask, is_weights=torch.tensor([[2.0, 0.5]])
    )
    assert float(plain.detach()) == pytest.approx(-1.0)  # -A * ratio, ratio = 1, token mean
    assert float(weighted.detach()) == pytest.approx(-(2.0 + 0.5) / 2)
    (grad,) = torch.autograd.grad(weighted, logp)
    assert torch.allclose(grad, torch.tensor([[-1.0, -0.25]]))  # d/dlogp of -w * exp(0) / 2

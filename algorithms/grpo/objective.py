"""The GRPO objective as small pure functions on tensors (no model, no environment).

Shapes: ``N`` trajectories (``num_groups × group_size``, grouped contiguously), ``T`` tokens.
Every per-token tensor is ``(N, T)`` and ``mask`` marks the policy's own tokens (1) against
prompt, tool-result and padding tokens (0).
"""

from __future__ import annotations

from enum import StrEnum

import torch


class LossAggregation(StrEnum):
    """How per-token losses become one number."""

    token = "token"
    """DAPO: sum over every policy token of the batch / their count (long answers weigh more)."""
    sequence = "sequence"
    """Original GRPO: mean over each trajectory's tokens, then mean over trajectories."""
    constant = "constant"
    """Dr. GRPO: sum over tokens / (trajectories × a fixed ``max_tokens``): no length bias."""


def gated_rewards(rewards: torch.Tensor, ok_calls: torch.Tensor) -> torch.Tensor:
    """``rewards`` with 0 where an episode made no successful tool call (``ok_calls == 0``).

    >>> gated_rewards(torch.tensor([0.5, 1.0, 0.2]), torch.tensor([0, 2, 1]))
    tensor([0.0000, 1.0000, 0.2000])
    """
    return torch.where(ok_calls > 0, rewards, torch.zeros_like(rewards))


def group_advantages(
    rewards: torch.Tensor, group_size: int, scale_by_std: bool = True, eps: float = 1e-4
) -> torch.Tensor:
    """Group-relative advantages ``A_i = (r_i - mean(r_group)) / (std(r_group) + eps)``.

    ``scale_by_std=False`` is Dr. GRPO's ``A_i = r_i - mean(r_group)``. ``std`` is the unbiased
    sample standard deviation (as in TRL). Groups whose rewards are all equal get 0.

    >>> group_advantages(torch.tensor([1.0, 0.0, 0.0, 0.0]), 4, scale_by_std=False)
    tensor([ 0.7500, -0.2500, -0.2500, -0.2500])
    """
    if rewards.ndim != 1 or rewards.numel() % group_size:
        raise ValueError(
            f"expected rewards of shape (num_groups * {group_size},), got {tuple(rewards.shape)}"
        )
    grouped = rewards.view(-1, group_size)  # (G, S)
    centred = grouped - grouped.mean(dim=1, keepdim=True)
    if scale_by_std and group_size > 1:
        centred = centred / (grouped.std(dim=1, keepdim=True) + eps)
    return centred.reshape(-1)


def informative_groups(rewards: torch.Tensor, group_size: int, tol: float = 1e-6) -> torch.Tensor:
    """``(num_groups,)`` bool: groups whose rewards are not all equal (DAPO dynamic sampling
    keeps only these: the others have zero advantage and teach nothing)."""
    grouped = rewards.view(-1, group_size)
    return (grouped.max(dim=1).values - grouped.min(dim=1).values) > tol


def k3_kl(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token estimator of KL(π‖π_ref): ``exp(ref - logp) - (ref - logp) - 1`` (≥ 0,
    unbiased, low variance; Schulman's k3)."""
    delta = ref_logprobs - logprobs
    return torch.exp(delta) - delta - 1.0


def aggregate(
    per_token: torch.Tensor,
    mask: torch.Tensor,
    mode: LossAggregation,
    batch_tokens: float | None = None,
    batch_sequences: float | None = None,
    max_tokens: int | None = None,
) -> torch.Tensor:
    """Reduce ``(N, T)`` per-token values to a scalar, over the policy tokens only.

    For gradient accumulation pass the *whole* batch's ``batch_tokens`` (policy tokens) or
    ``batch_sequences``: then the micro-batch results add up to the full-batch value.
    """
    mask = mask.to(per_token.dtype)
    total = per_token * mask
    if mode is LossAggregation.token:
        return total.sum() / (batch_tokens if batch_tokens is not None else mask.sum().clamp(min=1))
    if mode is LossAggregation.sequence:
        per_seq = total.sum(dim=1) / mask.sum(dim=1).clamp(min=1)
        return per_seq.sum() / (batch_sequences or per_token.shape[0])
    if mode is LossAggregation.constant:
        length = max_tokens or per_token.shape[1]
        return total.sum() / ((batch_sequences or per_token.shape[0]) * length)
    raise ValueError(f"unknown aggregation {mode!r}")


def truncated_is_weights(
    trainer_logprobs: torch.Tensor,
    sampler_logprobs: torch.Tensor,
    known: torch.Tensor,
    cap: float,
) -> torch.Tensor:
    """Truncated importance-sampling weights ``w = min(exp(logp_train - logp_sample), cap)``.

    The generator (vLLM, another process, bf16 kernels) samples from a policy slightly
    different from the one the trainer scores; the policy gradient is then off-policy. Each
    token's loss is weighted by ``w`` (TIS, as in verl's and TRL's correction): ``w = 1`` when
    the two agree, bounded by ``cap`` so that a rare large gap cannot dominate the update.
    Where the sampler's log-probability is unknown (``known`` is 0) the weight is 1.

    >>> truncated_is_weights(torch.tensor([[0.0, -1.0]]), torch.tensor([[-1.0, -1.0]]),
    ...                      torch.tensor([[1, 1]]), cap=2.0)
    tensor([[2., 1.]])
    """
    known = known.bool() & torch.isfinite(sampler_logprobs)
    delta = torch.where(
        known, trainer_logprobs - sampler_logprobs, torch.zeros_like(trainer_logprobs)
    )
    return torch.clamp(torch.exp(delta), max=cap).detach()


def clipped_policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    eps_low: float = 0.2,
    eps_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None,
    beta: float = 0.0,
    aggregation: LossAggregation = LossAggregation.token,
    batch_tokens: float | None = None,
    batch_sequences: float | None = None,
    max_tokens: int | None = None,
    is_weights: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped surrogate with DAPO's asymmetric clip and an optional k3 KL penalty.

    Per token ``t`` of trajectory ``i``, with ``ρ = exp(logp - old_logp)``::

        pg_loss1 = -A_i · ρ
        pg_loss2 = -A_i · clip(ρ, 1 - eps_low, 1 + eps_high)
        loss_t   = max(pg_loss1, pg_loss2) + β · k3(logp, ref_logp)

    aggregated over the policy tokens by ``aggregation``; with ``is_weights`` (``(N, T)``, see
    :func:`truncated_is_weights`) the policy term of each token is multiplied by its weight.

    Args:
        logprobs: ``(N, T)`` log π_θ of the taken tokens (with grad).
        old_logprobs: ``(N, T)`` log π_old (the policy that sampled; no grad).
        advantages: ``(N,)`` one advantage per trajectory, shared by its tokens.
        mask: ``(N, T)`` 1 on the policy's own tokens.
        ref_logprobs: ``(N, T)`` log π_ref, needed when ``beta > 0``.

    Returns:
        ``(loss, metrics)``: the loss to backpropagate and per-token means under ``loss/``
        (over this call's policy tokens, whatever the aggregation).
    """
    mask_f = mask.to(logprobs.dtype)
    n_tokens = mask_f.sum().clamp(min=1)
    log_ratio = logprobs - old_logprobs
    ratio = torch.exp(log_ratio)  # (N, T)
    adv = advantages[:, None].to(logprobs.dtype)  # (N, 1)
    pg_loss1 = -adv * ratio
    pg_loss2 = -adv * torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    per_token = torch.maximum(pg_loss1, pg_loss2)
    if is_weights is not None:
        per_token = per_token * is_weights
    pg_loss = aggregate(per_token, mask, aggregation, batch_tokens, batch_sequences, max_tokens)
    loss = pg_loss
    with torch.no_grad():
        clipped_low = (ratio < 1.0 - eps_low) & (adv < 0)
        clipped_high = (ratio > 1.0 + eps_high) & (adv > 0)
        metrics = {
            "loss/policy": float((per_token * mask_f).sum() / n_tokens),
            "loss/clip_frac_low": float((clipped_low * mask_f).sum() / n_tokens),
            "loss/clip_frac_high": float((clipped_high * mask_f).sum() / n_tokens),
            "loss/approx_kl_old": float((((ratio - 1) - log_ratio) * mask_f).sum() / n_tokens),
            "loss/ratio_mean": float((ratio * mask_f).sum() / n_tokens),
        }
    if beta > 0:
        if ref_logprobs is None:
            raise ValueError("beta > 0 needs ref_logprobs")
        kl = k3_kl(logprobs, ref_logprobs)
        kl_loss = aggregate(kl, mask, aggregation, batch_tokens, batch_sequences, max_tokens)
        loss = loss + beta * kl_loss
        metrics["loss/kl_ref"] = float((kl.detach() * mask_f).sum() / n_tokens)
    return loss, metrics

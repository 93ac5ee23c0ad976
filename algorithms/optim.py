"""Optimizer and learning-rate schedule, shared by GRPO and SFT."""

from __future__ import annotations

import torch


def make_optimizer(
    params: list[torch.nn.Parameter], lr: float, weight_decay: float = 0.0
) -> torch.optim.Optimizer:
    """AdamW, fused where the device and dtypes allow it (CPU included since torch 2.4)."""
    try:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def lr_at(step: int, base_lr: float, warmup_steps: int) -> float:
    """Linear warmup to ``base_lr`` over ``warmup_steps``, then constant.

    >>> [lr_at(s, 1.0, 4) for s in range(6)]
    [0.25, 0.5, 0.75, 1.0, 1.0, 1.0]
    """
    if warmup_steps <= 0:
        return base_lr
    return base_lr * min(1.0, (step + 1) / warmup_steps)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr

"""GRPO's configuration (the Hydra ``algo=grpo`` option): one dataclass, a docstring per field."""

from __future__ import annotations

from dataclasses import dataclass, field

from agentworld_gym.errors import ConfigError
from algorithms.grpo.objective import LossAggregation
from algorithms.grpo.remote import RemoteRolloutConfig
from algorithms.grpo.rollout import RolloutConfig


@dataclass
class GRPOConfig:
    """Multi-turn GRPO: what to sample, how to score it, how to update."""

    name: str = "grpo"
    """Which algorithm this node configures (set by the option file; do not change)."""
    steps: int = 20
    """Policy updates (each: one batch of rollouts, then one optimizer step per iteration)."""
    tasks_per_step: int = 4
    """Groups per batch: distinct tasks drawn from the pool."""
    group_size: int = 4
    """Episodes per task; advantages are relative within a group."""
    lr: float = 5e-5
    """AdamW learning rate (LoRA adapters tolerate ~10x the full fine-tuning rate)."""
    warmup_steps: int = 0
    """Linear learning-rate warmup over this many updates."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm; 0 disables it."""
    scale_rewards_by_std: bool = True
    """Divide group-centred rewards by the group's std; False is Dr. GRPO (mean-centred only)."""
    eps_low: float = 0.2
    """Lower clip: the ratio may fall to ``1 - eps_low``."""
    eps_high: float = 0.28
    """Upper clip (DAPO clip-higher): the ratio may rise to ``1 + eps_high``."""
    beta: float = 0.0
    """KL(π‖π_ref) coefficient with the k3 estimator; 0 disables the term and the reference."""
    loss_aggregation: LossAggregation = LossAggregation.token
    """``token`` (DAPO), ``sequence`` (original GRPO) or ``constant`` (Dr. GRPO)."""
    reward_needs_ok_call: bool = False
    """Train on reward 0 for episodes without one successful tool call (where every task needs
    one, as every catalog task does). Rubrics' answer-only criteria otherwise pay a guess: on
    a catalog task "There are 2 counts." with no call earned 1/6, and in one step of a CPU run
    7 of 32 rollouts got reward that way. ``reward/without_ok_call`` still reports the
    environment's reward, before this gate."""
    dynamic_sampling: bool = False
    """Drop groups whose rewards are all equal (zero advantage) before the update (DAPO)."""
    num_iterations: int = 1
    """Optimizer steps per batch of rollouts (μ); above 1 the clipped ratio matters."""
    micro_batch_size: int = 8
    """Trajectories per forward/backward pass; gradients accumulate over the batch."""
    share_prefix: bool = True
    """Run each micro-batch's common prefix once (exact; much faster for GRPO groups)."""
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    """Episode budgets and sampling."""
    rollout_shards: int = 0
    """Sampling batches per step, each a share of the groups with its own seed; 0 = one per
    rank. Fixed (to a multiple of the number of ranks), a run samples the same episodes on any
    number of ranks, so a checkpoint resumes on M ranks exactly as on N."""
    tis_cap: float = 2.0
    """Truncated importance sampling: each token's policy loss is weighted by
    ``min(π_train / π_sample, tis_cap)`` where the generator reported its log-probabilities
    (vLLM, Ray workers, bf16 kernels sample from a slightly different policy than the trainer
    scores); 0 disables the correction. The gap is logged either way (``rollout/logprob_gap``)."""
    remote: RemoteRolloutConfig = field(default_factory=RemoteRolloutConfig)
    """Rollouts on a Ray actor pool (``remote.workers > 0``) instead of in this process."""
    checkpoint_every: int = 10
    """Save a resumable checkpoint every this many updates (and at the end); 0 = only at the end."""
    keep_checkpoints: int = 2
    """How many recent checkpoints to keep."""
    seed: int = 0
    """Seeds the task order and the samplers; with it, a resumed run repeats a fresh one."""

    def __post_init__(self) -> None:
        if self.group_size < 2:
            raise ConfigError(
                f"algo.group_size must be >= 2 for group advantages, got {self.group_size}"
            )
        if self.tasks_per_step < 1 or self.steps < 0:
            raise ConfigError("algo.tasks_per_step must be >= 1 and algo.steps >= 0")
        if not 0 <= self.eps_low < 1 or self.eps_high < 0:
            raise ConfigError(
                f"algo.eps_low must be in [0, 1) and eps_high >= 0, "
                f"got {self.eps_low}, {self.eps_high}"
            )
        if self.beta < 0:
            raise ConfigError(f"algo.beta must be >= 0, got {self.beta}")
        if self.rollout_shards < 0:
            raise ConfigError(f"algo.rollout_shards must be >= 0, got {self.rollout_shards}")
        if self.tis_cap < 0 or (0 < self.tis_cap < 1):
            raise ConfigError(f"algo.tis_cap must be 0 (off) or >= 1, got {self.tis_cap}")
        if self.micro_batch_size < 1 or self.num_iterations < 1:
            raise ConfigError("algo.micro_batch_size and algo.num_iterations must be >= 1")

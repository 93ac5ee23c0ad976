"""The GRPO loop, in one fixed order per step:

    sample tasks → rollouts (G episodes per task) → group advantages → [dynamic sampling]
    → per micro-batch: log-probs, ratio, clipped loss (+ β·KL) → backward → clip → step → log

Everything a resumed run needs is in the checkpoint or is a pure function of ``(seed, step)``
(the tasks drawn and the sampler seeds), so a resumed run repeats what a fresh run would do.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from pathlib import Path
from typing import Any

import torch

from algorithms import checkpoint
from algorithms.grpo.config import GRPOConfig
from algorithms.grpo.logprobs import MicroBatch, make_micro_batches, token_logprobs
from algorithms.grpo.objective import (
    clipped_policy_loss,
    group_advantages,
    informative_groups,
)
from algorithms.grpo.rollout import Trajectory, rollout_metrics, run_episodes
from algorithms.models import Policy
from algorithms.optim import lr_at, make_optimizer, set_lr
from algorithms.pool import TaskPool
from algorithms.tracking import Tracker

logger = logging.getLogger(__name__)

PHASE = "grpo"


class GRPOTrainer:
    """Multi-turn GRPO on a task pool.

    Args:
        policy: the model to train, with its generator (transformers in process, or a
            vLLM generator whose weights are synced after each update).
        pool: where tasks come from (``config`` of the pool says which split).
        config: the algorithm's settings.
        tracker: where metrics go.
        run_dir: checkpoints are written under ``run_dir/checkpoints``.
        generator: rollouts' generator; default ``policy.generator``.
    """

    def __init__(
        self,
        policy: Policy,
        pool: TaskPool,
        config: GRPOConfig,
        tracker: Tracker | None = None,
        run_dir: Path | None = None,
        generator: Any = None,
    ) -> None:
        self.policy = policy
        self.pool = pool
        self.config = config
        self.tracker = tracker
        self.run_dir = Path(run_dir) if run_dir else None
        self.generator = generator or policy.generator
        self.generator.chat_format.check_prefix_preserving()
        self.params = policy.trainable_parameters()
        self.optimizer = make_optimizer(self.params, config.lr, config.weight_decay)
        self.reference = None
        if config.beta > 0 and not policy.is_lora:
            self.reference = policy.reference()
        self.step_idx = 0

    # -- the loop ---------------------------------------------------------------------------
    def train(self, steps: int | None = None, resume: bool = True) -> list[dict[str, float]]:
        """Run updates up to ``steps`` in total (default ``config.steps``), resuming from the
        latest checkpoint in ``run_dir`` when there is one."""
        total = self.config.steps if steps is None else steps
        if resume and self.run_dir is not None:
            self.resume()
        history = []
        bar = self.tracker.progress(total, "GRPO", self.step_idx) if self.tracker else None
        while self.step_idx < total:
            metrics = self.step()
            history.append(metrics)
            if self.tracker:
                self.tracker.log({"phase": PHASE, **metrics}, step=self.step_idx)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(
                    reward=f"{metrics['reward/mean']:.3f}",
                    no_call_reward=f"{metrics['reward/without_ok_call']:.2f}",
                )
            every = self.config.checkpoint_every
            if self.run_dir and (self.step_idx == total or (every and self.step_idx % every == 0)):
                self.save()
        if bar is not None:
            bar.close()
        return history

    def step(self) -> dict[str, float]:
        """One update: rollouts of a fresh batch of task groups, then the policy step."""
        cfg = self.config
        t0 = time.perf_counter()
        rng = random.Random(f"{cfg.seed}:{self.step_idx}")
        tasks = self.pool.sample(cfg.tasks_per_step, rng)
        episodes = [task for task in tasks for _ in range(cfg.group_size)]
        trajs = run_episodes(
            self.generator,
            self.pool,
            episodes,
            self.pool.config.train_split,
            cfg.rollout,
            seed=cfg.seed * 1_000_003 + self.step_idx * 1_009,
        )
        t_rollout = time.perf_counter() - t0
        rewards = torch.tensor([t.reward for t in trajs], dtype=torch.float32)
        advantages = group_advantages(rewards, cfg.group_size, cfg.scale_rewards_by_std)
        keep_group = torch.ones(len(tasks), dtype=torch.bool)
        if cfg.dynamic_sampling:
            keep_group = informative_groups(rewards, cfg.group_size)
        keep = [i for i in range(len(trajs)) if keep_group[i // cfg.group_size]]
        metrics = rollout_metrics(trajs)
        metrics["rollout/groups_kept"] = float(keep_group.float().mean())
        metrics["reward/advantage_abs"] = float(advantages.abs().mean())
        set_lr(self.optimizer, lr_at(self.step_idx, cfg.lr, cfg.warmup_steps))
        t1 = time.perf_counter()
        if keep:
            metrics.update(self.update([trajs[i] for i in keep], advantages[keep]))
        self.generator.sync_weights(self.policy.model)
        t_update = time.perf_counter() - t1
        self.step_idx += 1
        n_tokens = sum(len(t.token_ids) for t in trajs)
        metrics.update(
            {
                "perf/step_s": time.perf_counter() - t0,
                "perf/rollout_s": t_rollout,
                "perf/update_s": t_update,
                "perf/generated_tokens_per_s": sum(t.policy_tokens for t in trajs) / t_rollout,
                "perf/train_tokens_per_s": n_tokens / t_update if keep else 0.0,
                "perf/lr": self.optimizer.param_groups[0]["lr"],
            }
        )
        return metrics

    def update(self, trajs: list[Trajectory], advantages: torch.Tensor) -> dict[str, float]:
        """Gradient steps on a batch of trajectories with their advantages ``(N,)``."""
        cfg = self.config
        model = self.policy.model
        device = next(model.parameters()).device
        batches = make_micro_batches(
            [t.token_ids for t in trajs],
            [t.mask for t in trajs],
            cfg.micro_batch_size,
            cfg.share_prefix,
            pad_id=self.generator.pad_token_id if hasattr(self.generator, "pad_token_id") else 0,
            sample_logprobs=[t.sample_logprobs for t in trajs],
        )
        batches = [_to(mb, device) for mb in batches]
        batch_tokens = float(sum(mb.policy_tokens for mb in batches))
        norm = {
            "batch_tokens": batch_tokens,
            "batch_sequences": float(len(trajs)),
            "max_tokens": cfg.rollout.max_new_tokens * cfg.rollout.max_turns,
        }
        temperature = cfg.rollout.temperature if cfg.rollout.temperature > 0 else 1.0
        model.train()
        old: list[torch.Tensor | None] = [None] * len(batches)
        if cfg.num_iterations > 1:
            with torch.no_grad():
                old = [token_logprobs(model, mb, temperature)[0] for mb in batches]
        ref = (
            [self._reference_logprobs(mb, temperature) for mb in batches] if cfg.beta > 0 else None
        )
        totals: dict[str, float] = {}
        for iteration in range(cfg.num_iterations):
            for k, mb in enumerate(batches):
                first = iteration == 0
                logp, entropy = token_logprobs(model, mb, temperature, with_entropy=first)
                old_logp = logp.detach() if old[k] is None else old[k]
                loss, m = clipped_policy_loss(
                    logp,
                    old_logp,
                    advantages[mb.rows].to(device),
                    mb.target_mask,
                    cfg.eps_low,
                    cfg.eps_high,
                    ref_logprobs=ref[k] if ref is not None else None,
                    beta=cfg.beta,
                    aggregation=cfg.loss_aggregation,
                    **norm,
                )
                loss.backward()
                share = mb.policy_tokens / max(batch_tokens, 1.0) / cfg.num_iterations
                totals["loss/total"] = (
                    totals.get("loss/total", 0.0) + float(loss.detach()) / cfg.num_iterations
                )
                for key, value in m.items():
                    totals[key] = totals.get(key, 0.0) + value * share
                if first:
                    mask = mb.target_mask.bool()
                    totals["loss/entropy"] = totals.get("loss/entropy", 0.0) + float(
                        entropy[mask.cpu()].sum()
                    ) / max(batch_tokens, 1.0)
                    if mb.sample_logprobs.abs().sum() > 0:
                        gap = (logp.detach() - mb.sample_logprobs).abs()[mask].sum()
                        totals["rollout/logprob_gap"] = totals.get(
                            "rollout/logprob_gap", 0.0
                        ) + float(gap) / max(batch_tokens, 1.0)
            grad_norm = self._clip()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            totals["loss/grad_norm"] = (
                totals.get("loss/grad_norm", 0.0) + grad_norm / cfg.num_iterations
            )
        model.eval()
        totals["perf/micro_batches"] = float(len(batches))
        totals["perf/shared_prefix_tokens"] = float(sum(mb.prefix.numel() for mb in batches))
        return totals

    def _reference_logprobs(self, mb: MicroBatch, temperature: float) -> torch.Tensor:
        """log π_ref: the adapters switched off (LoRA) or the frozen copy (full fine-tuning)."""
        with torch.no_grad():
            if self.reference is not None:
                return token_logprobs(self.reference, mb, temperature)[0]
            with self.policy.model.disable_adapter():
                return token_logprobs(self.policy.model, mb, temperature)[0]

    def _clip(self) -> float:
        if self.config.max_grad_norm > 0:
            return float(torch.nn.utils.clip_grad_norm_(self.params, self.config.max_grad_norm))
        norms = [p.grad.norm() for p in self.params if p.grad is not None]
        return float(torch.linalg.vector_norm(torch.stack(norms))) if norms else 0.0

    # -- checkpoints ------------------------------------------------------------------------
    def save(self) -> Path | None:
        if self.run_dir is None:
            return None
        return checkpoint.save(
            self.run_dir,
            PHASE,
            self.step_idx,
            self.policy.model,
            self.optimizer,
            dataclasses.asdict(self.config),
            keep=self.config.keep_checkpoints,
        )

    def resume(self) -> bool:
        """Continue from the newest checkpoint in ``run_dir``; False when there is none."""
        path = checkpoint.latest(self.run_dir, PHASE) if self.run_dir else None
        if path is None:
            return False
        state = checkpoint.load(path, self.policy.model, self.optimizer)
        self.step_idx = int(state["step"])
        self.generator.sync_weights(self.policy.model)
        logger.info("resumed GRPO from %s (step %d)", path, self.step_idx)
        return True


def _to(mb: MicroBatch, device: torch.device) -> MicroBatch:
    if device.type == "cpu":
        return mb
    fields = {f.name: getattr(mb, f.name) for f in dataclasses.fields(mb)}
    return MicroBatch(**{k: v.to(device) if torch.is_tensor(v) else v for k, v in fields.items()})

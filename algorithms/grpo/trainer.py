"""The GRPO loop, in one fixed order per step:

    sample tasks → rollouts (G episodes per task) → [reward gate] → group advantages
    → [dynamic sampling]
    → per micro-batch: log-probs, ratio, clipped loss (+ β·KL) → backward → clip → step → log

Everything a resumed run needs is in the checkpoint or is a pure function of ``(seed, step)``
(the tasks drawn and the sampler seeds), so a resumed run repeats what a fresh run would do.

Under ``torchrun`` (:mod:`algorithms.distributed`) every rank draws the same tasks, plays its
share of the groups (whole groups, so advantages stay per group), and the loss normalisers are
all-reduced before the first backward: the update equals the one-process update of the whole
batch. Checkpoints hold full tensors, written by rank 0, so they resume on any number of ranks.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import random
import time
from pathlib import Path
from typing import Any

import torch

from agentworld_gym.errors import ConfigError
from algorithms import checkpoint, distributed
from algorithms.distributed import Dist, Strategy
from algorithms.grpo.config import GRPOConfig
from algorithms.grpo.logprobs import MicroBatch, make_micro_batches, token_logprobs
from algorithms.grpo.objective import (
    clipped_policy_loss,
    gated_rewards,
    group_advantages,
    informative_groups,
    truncated_is_weights,
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
        dist: this process's place in a ``torchrun`` job (default: one process).
        runner: where episodes run instead of ``generator`` (default: a
            :class:`~algorithms.grpo.remote.RayEpisodeRunner` when ``config.remote.workers``).
    """

    def __init__(
        self,
        policy: Policy,
        pool: TaskPool,
        config: GRPOConfig,
        tracker: Tracker | None = None,
        run_dir: Path | None = None,
        generator: Any = None,
        dist: Dist | None = None,
        runner: Any = None,
    ) -> None:
        self.policy = policy
        self.pool = pool
        self.config = config
        self.dist = dist or Dist()
        self.tracker = tracker if self.dist.is_main else None
        self.run_dir = Path(run_dir) if run_dir else None
        self.generator = generator or policy.generator
        self.generator.chat_format.check_prefix_preserving()
        if self.dist.enabled and config.tasks_per_step < self.dist.world_size:
            raise ConfigError(
                f"algo.tasks_per_step ({config.tasks_per_step}) must be at least the number of "
                f"ranks ({self.dist.world_size}): each rank plays whole groups"
            )
        self.reference = None
        if config.beta > 0 and not policy.is_lora:
            self.reference = policy.reference()
        # FSDP shards the model in place: generation keeps a full replica, refreshed after
        # each update; otherwise the generator shares the trained model's tensors.
        self.gen_model = policy.model
        if self.dist.enabled and self.dist.strategy is Strategy.fsdp:
            self.gen_model = copy.deepcopy(policy.model).eval()
            self.generator.sync_weights(self.gen_model)
        self.module = distributed.wrap(policy.model, self.dist)
        self.params = [p for p in self.module.parameters() if p.requires_grad]
        self.optimizer = make_optimizer(self.params, config.lr, config.weight_decay)
        self.runner = runner
        self.remote = runner is not None or config.remote.workers > 0
        if runner is None and config.remote.workers > 0 and self.dist.is_main:
            from algorithms.grpo.remote import RayEpisodeRunner

            self.runner = RayEpisodeRunner(policy.config, pool.config, config.remote)
        self._sync_generators()
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
        trajs, everyone = self._rollouts(tasks)
        t_rollout = time.perf_counter() - t0
        rewards = torch.tensor([t.reward for t in trajs], dtype=torch.float32)
        if cfg.reward_needs_ok_call:
            ok_calls = torch.tensor([t.ok_tool_calls for t in trajs])
            rewards = gated_rewards(rewards, ok_calls)
        advantages = group_advantages(rewards, cfg.group_size, cfg.scale_rewards_by_std)
        keep_group = torch.ones(len(trajs) // cfg.group_size, dtype=torch.bool)
        if cfg.dynamic_sampling:
            keep_group = informative_groups(rewards, cfg.group_size)
        keep = [i for i in range(len(trajs)) if keep_group[i // cfg.group_size]]
        metrics = rollout_metrics(everyone)
        kept, groups, adv_abs = self.dist.all_reduce_sum(
            [float(keep_group.sum()), float(len(keep_group)), float(advantages.abs().sum())]
        )
        metrics["rollout/groups_kept"] = kept / max(groups, 1.0)
        metrics["reward/advantage_abs"] = adv_abs / max(len(everyone), 1)
        set_lr(self.optimizer, lr_at(self.step_idx, cfg.lr, cfg.warmup_steps))
        t1 = time.perf_counter()
        any_kept = self.dist.all_reduce_sum([float(len(keep))])[0] > 0
        if any_kept:
            metrics.update(self.update([trajs[i] for i in keep], advantages[keep]))
        self._sync_generators()
        t_update = time.perf_counter() - t1
        self.step_idx += 1
        n_tokens = sum(len(t.token_ids) for t in everyone)
        metrics.update(
            {
                "perf/step_s": time.perf_counter() - t0,
                "perf/rollout_s": t_rollout,
                "perf/update_s": t_update,
                "perf/generated_tokens_per_s": sum(t.policy_tokens for t in everyone) / t_rollout,
                "perf/train_tokens_per_s": n_tokens / t_update if any_kept else 0.0,
                "perf/lr": self.optimizer.param_groups[0]["lr"],
            }
        )
        return metrics

    def _rollouts(self, tasks: list[Any]) -> tuple[list[Trajectory], list[Trajectory]]:
        """``(this rank's trajectories, everyone's)``, whole groups, contiguous.

        The groups are dealt into ``rollout_shards`` sampling batches (``tasks[s::shards]``,
        seeded by ``s``); rank ``r`` plays shards ``r, r + world_size, ...``. The episodes of
        a step therefore depend on the number of shards, not on the number of ranks.
        """
        cfg, dist = self.config, self.dist
        seed = cfg.seed * 1_000_003 + self.step_idx * 1_009
        split = self.pool.config.train_split
        if self.remote:
            everyone = None
            if dist.is_main:
                everyone = self.runner.run(tasks, cfg.group_size, split, cfg.rollout, seed)
            everyone = dist.broadcast_object(everyone)
            groups = [
                everyone[g * cfg.group_size : (g + 1) * cfg.group_size] for g in range(len(tasks))
            ]
            return [t for group in dist.shard(groups) for t in group], everyone
        shards = cfg.rollout_shards or dist.world_size
        if shards % dist.world_size:
            raise ConfigError(
                f"algo.rollout_shards ({shards}) must be a multiple of the number of ranks "
                f"({dist.world_size})"
            )
        trajs = []
        for shard in range(dist.rank, shards, dist.world_size):
            mine = [task for task in tasks[shard::shards] for _ in range(cfg.group_size)]
            if mine:
                trajs += run_episodes(
                    self.generator, self.pool, mine, split, cfg.rollout, seed + shard * 100_003
                )
        if not dist.enabled:
            return trajs, trajs
        slim = [dataclasses.replace(t, messages=[], sample_logprobs=[]) for t in trajs]
        return trajs, [t for part in dist.gather_objects(slim) for t in part]

    def _sync_generators(self) -> None:
        """The trained weights reach every generator: the in-process one (shared tensors, or
        the FSDP replica refreshed) and the Ray workers (trainable tensors sent)."""
        if self.gen_model is not self.policy.model:
            self.gen_model.load_state_dict(distributed.full_state_dict(self.module))
        self.generator.sync_weights(self.gen_model)
        if self.remote:
            state = distributed.full_state_dict(self.module, trainable_only=True)
            if self.runner is not None:
                self.runner.sync(state)

    def update(self, trajs: list[Trajectory], advantages: torch.Tensor) -> dict[str, float]:
        """Gradient steps on a batch of trajectories with their advantages ``(N,)``.

        Under ``torchrun`` these are this rank's trajectories; the normalisers (policy tokens,
        sequences) are the whole batch's, and every rank runs the same number of forward
        passes (padding with zero-weight ones), as DDP's and FSDP's collectives require.
        """
        cfg, dist = self.config, self.dist
        device = next(self.policy.model.parameters()).device
        # FSDP2 frees a block's gathered weights after its first backward, so a block may run
        # only once per forward: no shared-prefix pass (it calls every block twice)
        fsdp = self.dist.enabled and self.dist.strategy is Strategy.fsdp
        batches = make_micro_batches(
            [t.token_ids for t in trajs],
            [t.mask for t in trajs],
            cfg.micro_batch_size,
            cfg.share_prefix and not fsdp,
            pad_id=getattr(self.generator, "pad_token_id", 0) or 0,
            sample_logprobs=[t.sample_logprobs for t in trajs],
        )
        batches = [_to(mb, device) for mb in batches]
        batch_tokens, batch_sequences = dist.all_reduce_sum(
            [float(sum(mb.policy_tokens for mb in batches)), float(len(trajs))]
        )
        passes = dist.all_reduce_max(len(batches))
        norm = {
            "batch_tokens": batch_tokens,
            "batch_sequences": batch_sequences,
            "max_tokens": cfg.rollout.max_new_tokens * cfg.rollout.max_turns,
        }
        temperature = cfg.rollout.temperature if cfg.rollout.temperature > 0 else 1.0
        model = self.module
        model.train()
        old: list[torch.Tensor | None] = [None] * passes
        if cfg.num_iterations > 1:
            with torch.no_grad():
                old = [self._logprobs(batches, k, temperature)[0] for k in range(passes)]
        ref = None
        if cfg.beta > 0:
            ref = [self._reference_logprobs(batches, k, temperature) for k in range(passes)]
        totals = dict.fromkeys(_SUMMED_METRICS + (("loss/kl_ref",) if cfg.beta > 0 else ()), 0.0)
        scale = float(dist.world_size)  # DDP and FSDP average gradients over ranks
        grad_norm_sum = 0.0
        for iteration in range(cfg.num_iterations):
            first = iteration == 0
            for k in range(passes):
                with distributed.accumulate(model, sync=k == passes - 1):
                    logp, entropy = self._logprobs(batches, k, temperature, first)
                    if k >= len(batches):  # padding: a pass with no weight, so ranks agree
                        (logp.sum() * 0.0).backward()
                        continue
                    mb = batches[k]
                    old_logp = logp.detach() if old[k] is None else old[k]
                    known = mb.target_mask * _rows_with_logprobs(mb)
                    weights = None
                    if cfg.tis_cap > 0 and bool(known.any()):
                        weights = truncated_is_weights(
                            old_logp, mb.sample_logprobs, known, cfg.tis_cap
                        )
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
                        is_weights=weights,
                        **norm,
                    )
                    (loss * scale).backward()
                share = mb.policy_tokens / max(batch_tokens, 1.0) / cfg.num_iterations
                totals["loss/total"] += float(loss.detach()) / cfg.num_iterations
                for key, value in m.items():
                    totals[key] += value * share
                if first:
                    self._rollout_gap(totals, mb, logp.detach(), known, entropy, batch_tokens)
            grad_norm_sum += self._clip()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
        model.eval()
        keys = sorted(totals)
        totals = dict(zip(keys, dist.all_reduce_sum([totals[k] for k in keys]), strict=True))
        for key in ("rollout/is_weight_mean", "rollout/is_truncated_frac"):
            if totals["rollout/is_tokens"] > 0:
                totals[key] = totals[key] / totals["rollout/is_tokens"]
            else:
                del totals[key]  # no sampler log-probabilities: no correction was applied
        totals["loss/grad_norm"] = grad_norm_sum / cfg.num_iterations
        totals["perf/micro_batches"] = float(passes)
        totals["perf/shared_prefix_tokens"] = float(sum(mb.prefix.numel() for mb in batches))
        return totals

    def _rollout_gap(
        self,
        totals: dict[str, float],
        mb: MicroBatch,
        logp: torch.Tensor,
        known: torch.Tensor,
        entropy: torch.Tensor | None,
        batch_tokens: float,
    ) -> None:
        """Entropy, the generator/trainer log-prob gap and the IS weights' statistics (sums;
        the caller normalises after the all-reduce)."""
        mask = mb.target_mask.bool()
        if entropy is not None:
            totals["loss/entropy"] += float(entropy[mask.cpu()].sum()) / max(batch_tokens, 1.0)
        seen = known.bool() & torch.isfinite(mb.sample_logprobs)
        if not bool(seen.any()):
            return
        gap = (logp - mb.sample_logprobs).abs()[seen].sum()
        totals["rollout/logprob_gap"] += float(gap) / max(batch_tokens, 1.0)
        if self.config.tis_cap > 0:
            w = truncated_is_weights(logp, mb.sample_logprobs, known, self.config.tis_cap)[seen]
            totals["rollout/is_tokens"] += float(seen.sum())
            totals["rollout/is_weight_mean"] += float(w.sum())
            totals["rollout/is_truncated_frac"] += float((w >= self.config.tis_cap).sum())

    def _logprobs(
        self, batches: list[MicroBatch], k: int, temperature: float, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """The training forward of micro-batch ``k`` (a padding batch past the end)."""
        mb = batches[k] if k < len(batches) else self._padding_batch()
        return self.module(mb, temperature, with_entropy=with_entropy)

    def _padding_batch(self) -> MicroBatch:
        device = next(self.policy.model.parameters()).device
        ids = torch.zeros((1, 2), dtype=torch.long, device=device)
        one = torch.tensor([[1, 0]], device=device)
        return MicroBatch([], ids[0, :0], ids, torch.ones_like(ids), ids, one, one.float() * 0)

    def _reference_logprobs(
        self, batches: list[MicroBatch], k: int, temperature: float
    ) -> torch.Tensor:
        """log π_ref: the adapters switched off (LoRA) or the frozen copy (full fine-tuning)."""
        with torch.no_grad():
            if self.reference is not None:
                mb = batches[k] if k < len(batches) else self._padding_batch()
                return token_logprobs(self.reference, mb, temperature)[0]
            with self.policy.model.disable_adapter():
                return self._logprobs(batches, k, temperature)[0]

    def _clip(self) -> float:
        """Clip by the global norm (across ranks and shards); returns the norm before."""
        limit = self.config.max_grad_norm if self.config.max_grad_norm > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
        return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)

    # -- checkpoints ------------------------------------------------------------------------
    def save(self) -> Path | None:
        """Write a checkpoint of full tensors (rank 0 writes; a collective under FSDP)."""
        if self.run_dir is None:
            return None
        trainable = distributed.full_state_dict(self.module, trainable_only=True)
        optimizer_state = distributed.full_optimizer_state(self.module, self.optimizer)
        path = None
        if self.dist.is_main:
            path = checkpoint.save(
                self.run_dir,
                PHASE,
                self.step_idx,
                self.gen_model,
                self.optimizer,
                dataclasses.asdict(self.config),
                extra={"world_size": self.dist.world_size, "layout": self._layout()},
                keep=self.config.keep_checkpoints,
                trainable=trainable,
                optimizer_state=optimizer_state,
            )
        self.dist.barrier()
        return path

    def resume(self) -> bool:
        """Continue from the newest checkpoint in ``run_dir``; False when there is none. A
        checkpoint written by N ranks resumes on any number of ranks, DDP or FSDP."""
        path = checkpoint.latest(self.run_dir, PHASE) if self.run_dir else None
        if path is None:
            return False
        state = checkpoint.read(path)
        distributed.load_full_state(
            self.module,
            self.optimizer,
            state["trainable"],
            state["optimizer"],
            saved_by_fsdp=state.get("extra", {}).get("layout") == Strategy.fsdp.value,
        )
        checkpoint.set_rng_state(state["rng"])
        self.step_idx = int(state["step"])
        self._sync_generators()
        logger.info("resumed GRPO from %s (step %d)", path, self.step_idx)
        return True

    def _layout(self) -> str:
        return self.dist.strategy.value if self.dist.enabled else "single"

    def close(self) -> None:
        """Stop the Ray workers, if any."""
        if self.runner is not None and hasattr(self.runner, "close"):
            self.runner.close()
            self.runner = None


_SUMMED_METRICS = (
    "loss/total",
    "loss/policy",
    "loss/clip_frac_low",
    "loss/clip_frac_high",
    "loss/approx_kl_old",
    "loss/ratio_mean",
    "loss/entropy",
    "rollout/logprob_gap",
    "rollout/is_tokens",
    "rollout/is_weight_mean",
    "rollout/is_truncated_frac",
)
"""Update metrics that are sums over this rank's micro-batches (all-reduced at the end)."""


def _rows_with_logprobs(mb: MicroBatch) -> torch.Tensor:
    """``(B, 1)`` 1 for rows whose sampler reported log-probabilities (any nonzero on the
    policy tokens); the in-process transformers generator without them reports zeros."""
    mask = mb.target_mask.bool()
    reported = torch.nan_to_num(mb.sample_logprobs, nan=1.0).abs() * mask
    return (reported.sum(dim=1, keepdim=True) > 0).long()


def _to(mb: MicroBatch, device: torch.device) -> MicroBatch:
    if device.type == "cpu":
        return mb
    fields = {f.name: getattr(mb, f.name) for f in dataclasses.fields(mb)}
    return MicroBatch(**{k: v.to(device) if torch.is_tensor(v) else v for k, v in fields.items()})

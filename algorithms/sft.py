"""Supervised warm start on gold trajectories (``algo=sft``, or ``warm_start`` before GRPO).

The gold solution of every training task (``agentworld_gym.replay.gold_trajectory``: the
OpenAI chat of its tool chain and answer, kept only when it replays to reward 1.0) is encoded
exactly as a rollout would be (:meth:`~agentworld_gym.llm.chat_format.ChatFormat.encode_chat`)
and trained with cross-entropy on the assistant's tokens only — the same masking as GRPO.
Small models make almost no valid tool calls before this; afterwards RL has signal.

The mean per-token loss hides what decides an episode: most target tokens are JSON scaffolding
and identifiers copied from the prompt, learnt within a few steps, while the first token of
each assistant turn -- call a tool or answer -- is one token in a hundred. Each step therefore
also logs the teacher-forced probability of the gold first token of every turn
(``sft/turn_start_p``) and of the final answer's turn (``sft/answer_start_p``), and the
decision itself at the answer: ``sft/answer_stop_p``, one minus the probability of any token
that opens a tool call (:func:`answer_stop_probs`). The two answer numbers differ: every call
opens with the same ``<``, but an answer opens with one word among many ("Its", "Done", "I",
a field name), so ``answer_start_p`` stays low on a model that answers when it should
(after one epoch on the catalog pool: 0.41 against 0.99 on 24 training trajectories; README).
:func:`gold_budget` says how many turns and tokens per turn the gold episodes need, so rollout
budgets never cut them.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from agentworld_gym.llm.chat_format import ChatFormat
from agentworld_gym.llm.hardware import refresh_threads
from agentworld_gym.registry import load_spec
from agentworld_gym.replay import gold_trajectory
from algorithms import checkpoint
from algorithms.grpo.logprobs import (
    MicroBatch,
    make_micro_batches,
    token_logprobs,
    token_logprobs_probed,
)
from algorithms.models import Policy
from algorithms.optim import lr_at, make_optimizer, set_lr
from algorithms.pool import TaskPool, TaskRef
from algorithms.tracking import Tracker

logger = logging.getLogger(__name__)

PHASE = "sft"


@dataclass
class SFTConfig:
    """Supervised fine-tuning on gold trajectories (``algo=sft`` and ``warm_start``)."""

    name: str = "sft"
    """Which algorithm this node configures (set by the option file; do not change)."""
    enabled: bool = True
    """Run this phase (``warm_start.enabled=false`` goes straight to GRPO)."""
    epochs: float = 2.0
    """Passes over the gold trajectories (fractions allowed)."""
    steps: int | None = None
    """Optimizer steps in all, overriding ``epochs`` (equal compute across pools of
    different sizes, as in ``experiments/scaling.py``)."""
    lr: float = 2e-4
    """AdamW learning rate."""
    warmup_steps: int = 2
    """Linear warmup over this many optimizer steps."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    batch_size: int = 8
    """Trajectories per optimizer step."""
    micro_batch_size: int = 8
    """Trajectories per forward/backward pass (gradients accumulate up to ``batch_size``)."""
    turn_start_weight: float = 1.0
    """Loss weight of the first token of each assistant turn (call a tool, or answer) against
    1 for every other target token. The turn's first token decides the episode but is about
    one target token in a hundred; a weight above 1 makes the mean loss see it."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm; 0 disables it."""
    max_tokens: int = 4096
    """Skip gold trajectories longer than this many tokens."""
    max_examples: int | None = None
    """Use at most this many gold trajectories, a seeded sample across the pool's
    environments (``None`` = all)."""
    share_prefix: bool = True
    """Run each micro-batch's common prefix once (batch 1, with gradients) and only the
    rows' suffixes batched over its key/value cache: the same loss and gradients as running
    every row whole (:func:`~algorithms.grpo.logprobs.hidden_states`), and ~2.5x less CPU
    time per micro-batch of 8 gold episodes of one environment (a ~1,000-token tool prompt;
    ``benchmarks/sft_prefix.py``). The prefix stops one token before the first target, so
    every target's logit is computed in the suffix pass; ``sft/prefix_tokens_saved`` counts
    the prefix tokens not recomputed."""
    group_by_env: bool = False
    """Fill each batch from one environment (environments and their examples in a seeded
    order): its micro-batches then share the system prompt with the tool schemas, computed
    once. On CPU with ~1k-token tool prompts this cuts an SFT step's compute several times."""
    checkpoint_every: int = 0
    """Save a resumable checkpoint every this many optimizer steps; 0 = only at the end."""
    seed: int = 0
    """Shuffling seed."""


@dataclass
class Example:
    """One encoded gold trajectory."""

    env_id: str
    task_id: str
    token_ids: list[int]
    mask: list[int]

    def turns(self) -> list[tuple[int, int]]:
        """``(start, end)`` token spans of the assistant turns (end exclusive)."""
        spans, start = [], None
        for i, m in enumerate([*self.mask, 0]):
            if m and start is None:
                start = i
            elif not m and start is not None:
                spans.append((start, i))
                start = None
        return spans


@dataclass
class GoldBudget:
    """What the gold episodes of a pool need from a rollout's budgets."""

    examples: int
    """Gold trajectories measured."""
    most_turns: int
    """Assistant turns of the longest gold episode (its tool calls plus the answer)."""
    longest_turn: int
    """Tokens of the longest gold assistant turn, end-of-turn token included."""
    longest_episode: int
    """Tokens of the longest gold episode, prompt included."""
    turn_lengths: list[int] = field(default_factory=list, repr=False)
    """Every gold turn's length (to count how many a budget would cut)."""

    def problems(
        self, name: str, max_turns: int, max_new_tokens: int, max_episode_tokens: int
    ) -> list[str]:
        """What in the budgets ``name.max_turns/max_new_tokens/max_episode_tokens`` would
        cut gold episodes (empty when they all fit).

        >>> b = GoldBudget(3, most_turns=3, longest_turn=115, longest_episode=1900,
        ...                turn_lengths=[40, 90, 115])
        >>> b.problems("eval", 3, 96, 2048)
        ['eval.max_new_tokens=96 cuts 1 of 3 gold turns (the longest has 115 tokens)']
        """
        out = []
        if max_turns < self.most_turns:
            out.append(
                f"{name}.max_turns={max_turns} is fewer than the {self.most_turns} turns the "
                "longest gold episode takes"
            )
        cut = sum(n > max_new_tokens for n in self.turn_lengths)
        if cut:
            out.append(
                f"{name}.max_new_tokens={max_new_tokens} cuts {cut} of "
                f"{len(self.turn_lengths)} gold turns (the longest has {self.longest_turn} "
                "tokens)"
            )
        if max_episode_tokens < self.longest_episode:
            out.append(
                f"{name}.max_episode_tokens={max_episode_tokens} is below the longest gold "
                f"episode ({self.longest_episode} tokens)"
            )
        return out


def gold_budget(examples: list[Example]) -> GoldBudget:
    """The turns and tokens the gold episodes take (see :class:`GoldBudget`)."""
    lengths = [end - start for e in examples for start, end in e.turns()]
    return GoldBudget(
        examples=len(examples),
        most_turns=max((len(e.turns()) for e in examples), default=0),
        longest_turn=max(lengths, default=0),
        longest_episode=max((len(e.token_ids) for e in examples), default=0),
        turn_lengths=lengths,
    )


def gold_examples(policy: Policy, pool: TaskPool, split: str, max_tokens: int) -> list[Example]:
    """Encode the gold trajectory of every ``split`` task of the pool that replays to 1.0."""
    return encode_gold(policy.generator.chat_format, pool, split, max_tokens)


def encode_gold(
    fmt: ChatFormat,
    pool: TaskPool,
    split: str,
    max_tokens: int,
    tasks: list[TaskRef] | None = None,
) -> list[Example]:
    """:func:`gold_examples` with only a chat format (a tokenizer, no model); ``tasks``
    (default: the whole split) chooses which."""
    examples = []
    for task in pool.tasks(split) if tasks is None else tasks:
        env = pool.acquire(task.env_id, split)
        try:
            _, info = env.reset(options={"task_id": task.task_id})
            chat = gold_trajectory(env.unwrapped, load_spec(task.env_id).task(task.task_id))
        finally:
            pool.release(env, task.env_id, split)
        if chat is None:
            continue
        ids, mask = fmt.encode_chat(chat, info["tools"])
        if len(ids) <= max_tokens:
            examples.append(Example(task.env_id, task.task_id, ids, mask))
    return examples


def run_sft(
    policy: Policy,
    pool: TaskPool,
    config: SFTConfig,
    tracker: Tracker | None = None,
    run_dir: Path | None = None,
) -> dict[str, float]:
    """Train on the pool's gold trajectories; returns the last step's metrics."""
    examples = gold_examples(policy, pool, pool.config.train_split, config.max_tokens)
    if config.max_examples is not None and len(examples) > config.max_examples:
        keep = random.Random(f"{config.seed}:sample").sample(
            range(len(examples)), config.max_examples
        )
        examples = [examples[i] for i in sorted(keep)]
    if not examples:
        logger.warning("SFT: no gold trajectory replays to 1.0 in the pool; skipping")
        return {}
    model = policy.model
    params = policy.trainable_parameters()
    optimizer = make_optimizer(params, config.lr, config.weight_decay)
    steps_per_epoch = len(_epoch_batches(examples, 0, config))
    total = config.steps or max(1, round(config.epochs * steps_per_epoch))
    step = 0
    if run_dir is not None and (path := checkpoint.latest(run_dir, PHASE)) is not None:
        step = int(checkpoint.load(path, model, optimizer)["step"])
        logger.info("resumed SFT from %s (step %d)", path, step)
    calls = call_start_tokens(examples)
    bar = tracker.progress(total, "SFT", step) if tracker else None
    metrics: dict[str, float] = {}
    while step < total:
        refresh_threads()
        t0 = time.perf_counter()
        batch = _batch(examples, step, config)
        micro, weights = sft_micro_batches(batch, config, policy.generator.pad_token_id)
        set_lr(optimizer, lr_at(step, config.lr, config.warmup_steps))
        model.train()
        loss_sum, starts, answers, stops = backward_step(model, batch, micro, weights, calls)
        grad_norm = _clip(params, config.max_grad_norm)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        model.eval()
        step += 1
        elapsed = time.perf_counter() - t0
        metrics = {
            "phase": PHASE,
            "sft/loss": loss_sum,
            "sft/perplexity": float(torch.exp(torch.tensor(loss_sum))),
            "sft/grad_norm": grad_norm,
            "sft/turn_start_p": sum(starts) / max(1, len(starts)),
            "sft/answer_start_p": sum(answers) / max(1, len(answers)),
            "sft/answer_stop_p": sum(stops) / max(1, len(stops)),
            "sft/epoch": step / steps_per_epoch,
            "perf/sft_step_s": elapsed,
            "perf/sft_tokens_per_s": sum(len(e.token_ids) for e in batch) / elapsed,
            "sft/prefix_tokens_saved": float(prefix_tokens_saved(micro)),
        }
        if tracker:
            tracker.log(metrics, step=step)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(loss=f"{loss_sum:.3f}")
        due = config.checkpoint_every and step % config.checkpoint_every == 0
        if run_dir is not None and (due or step == total):
            checkpoint.save(run_dir, PHASE, step, model, optimizer, dataclasses.asdict(config))
    if bar is not None:
        bar.close()
    policy.generator.sync_weights(model)
    budget = gold_budget(examples)
    metrics["sft/examples"] = float(len(examples))
    metrics["sft/gold_most_turns"] = float(budget.most_turns)
    metrics["sft/gold_longest_turn"] = float(budget.longest_turn)
    metrics["sft/gold_longest_episode"] = float(budget.longest_episode)
    return metrics


def sft_micro_batches(
    batch: list[Example], config: SFTConfig, pad_id: int
) -> tuple[list[MicroBatch], list[torch.Tensor]]:
    """One optimizer step's micro-batches and their ``(B, S)`` loss weights. With
    ``config.share_prefix`` each micro-batch carries its rows' common prefix (cut one token
    before the first target) to be run once; otherwise every row runs whole."""
    micro = make_micro_batches(
        [e.token_ids for e in batch],
        [e.mask for e in batch],
        config.micro_batch_size,
        config.share_prefix,
        pad_id=pad_id,
    )
    weights = [_weights(mb, [batch[r] for r in mb.rows], config.turn_start_weight) for mb in micro]
    return micro, weights


def micro_batch_loss(
    model: Any, mb: MicroBatch, weight: torch.Tensor, n_tokens: float, calls: list[int]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(loss, logp, call_p)`` of one micro-batch: its share of the step's weighted mean
    token loss (``n_tokens`` is the step's total weight), the ``(B, S)`` target
    log-probabilities and the call-opening probabilities (:func:`answer_stop_probs`; zeros
    when no gold episode makes a call, so there is nothing to probe)."""
    if calls:
        logp, call_p = token_logprobs_probed(model, mb, calls)
    else:
        logp, _ = token_logprobs(model, mb)
        call_p = torch.zeros(mb.target_mask.shape)
    loss = -(logp * weight.to(logp.device)).sum() / n_tokens
    return loss, logp, call_p


def backward_step(
    model: Any,
    batch: list[Example],
    micro: list[MicroBatch],
    weights: list[torch.Tensor],
    calls: list[int],
) -> tuple[float, list[float], list[float], list[float]]:
    """One step's gradients, accumulated over its micro-batches: the loss, and per turn the
    probability of its first gold token, of the answer's first token and of answering rather
    than calling (what :func:`run_sft` logs)."""
    device = next(model.parameters()).device
    n_tokens = float(sum(w.sum() for w in weights))
    loss_sum = 0.0
    starts: list[float] = []
    answers: list[float] = []
    stops: list[float] = []
    for mb, weight in zip(micro, weights, strict=True):
        mb = dataclasses.replace(
            mb, **{k: getattr(mb, k).to(device) for k in ("prefix", "suffix", "attention")}
        )
        loss, logp, call_p = micro_batch_loss(model, mb, weight, n_tokens, calls)
        loss.backward()
        loss_sum += float(loss.detach())
        rows = [batch[r] for r in mb.rows]
        first, last = turn_start_probs(logp.detach(), mb, rows)
        starts += first
        answers += last
        stops += answer_stop_probs(call_p, mb, rows, calls)
    return loss_sum, starts, answers, stops


def prefix_tokens_saved(micro: list[MicroBatch]) -> int:
    """Prefix tokens a step does not recompute: each micro-batch runs its shared prefix once
    instead of once per row."""
    return sum(mb.prefix.numel() * (len(mb.rows) - 1) for mb in micro)


def _weights(mb: Any, rows: list[Example], turn_start_weight: float) -> torch.Tensor:
    """``(B, S)`` loss weights: ``target_mask``, with ``turn_start_weight`` at the positions
    that predict the first token of an assistant turn."""
    weight = mb.target_mask.to(torch.float32)
    if turn_start_weight != 1.0:
        prefix = mb.prefix.numel()
        for r, example in enumerate(rows):
            for s, _ in example.turns():
                weight[r, s - prefix - 1] = turn_start_weight
    return weight


def turn_start_probs(
    logp: torch.Tensor, mb: Any, rows: list[Example]
) -> tuple[list[float], list[float]]:
    """Teacher-forced probabilities of the gold first token of every assistant turn of a
    micro-batch's rows, and of each row's last turn (the final answer), from ``logp`` of
    :func:`~algorithms.grpo.logprobs.token_logprobs` (suffix position ``p`` predicts token
    ``prefix + p + 1``)."""
    prefix = mb.prefix.numel()
    every, last = [], []
    for r, example in enumerate(rows):
        probs = [float(logp[r, s - prefix - 1].exp()) for s, _ in example.turns()]
        every += probs
        last += probs[-1:]
    return every, last


def call_start_tokens(examples: list[Example]) -> list[int]:
    """The tokens that open a tool-call turn in these gold trajectories: the first token of
    every assistant turn but the last (Hermes ``<tool_call>`` text starts with ``<``)."""
    return sorted({e.token_ids[s] for e in examples for s, _ in e.turns()[:-1]})


def answer_stop_probs(
    call_p: torch.Tensor, mb: Any, rows: list[Example], calls: list[int]
) -> list[float]:
    """Teacher-forced probability of *answering* at each row's final turn: one minus the
    probability of any call-opening token (``call_p`` of
    :func:`~algorithms.grpo.logprobs.token_logprobs_probed` with ``calls``) at the position
    that predicts the answer's first token. Rows whose answer itself opens with such a token,
    or with no tool call before the answer, are left out."""
    prefix = mb.prefix.numel()
    out = []
    for r, example in enumerate(rows):
        turns = example.turns()
        if len(turns) < 2 or example.token_ids[turns[-1][0]] in calls:
            continue
        out.append(1.0 - float(call_p[r, turns[-1][0] - prefix - 1]))
    return out


def _batch(examples: list[Any], step: int, config: SFTConfig) -> list[Any]:
    """The examples of optimizer step ``step``: a fixed shuffle per epoch (resumable)."""
    per_epoch = len(_epoch_batches(examples, 0, config))
    epoch, index = divmod(step, per_epoch)
    return [examples[i] for i in _epoch_batches(examples, epoch, config)[index]]


def _epoch_batches(examples: list[Any], epoch: int, config: SFTConfig) -> list[list[int]]:
    """One epoch's batches of example indices, a pure function of ``(seed, epoch)``; the
    number of batches is the same every epoch."""
    rng = random.Random(f"{config.seed}:{epoch}")
    order = list(range(len(examples)))
    rng.shuffle(order)
    size = config.batch_size
    if not config.group_by_env:
        return [order[i : i + size] for i in range(0, len(order), size)] or [[]]
    by_env: dict[str, list[int]] = {}
    for i in order:
        by_env.setdefault(examples[i].env_id, []).append(i)
    batches = [ids[i : i + size] for ids in by_env.values() for i in range(0, len(ids), size)]
    rng.shuffle(batches)
    return batches


def _clip(params: list[torch.nn.Parameter], max_norm: float) -> float:
    if max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return 0.0

"""Our GRPO behind the evolution loop's ``Trainer`` protocol (and an evaluate-only stand-in).

``agentworld_gym.evolution`` depends only on ``train(pool, steps)`` / ``evaluate(tasks)``
(plus optional checkpointing); :class:`GRPOEvolutionTrainer` keeps one policy, one optimizer
and one KL reference across rounds and continues GRPO on each round's pool.
``experiments/evolve.py`` builds it from the same ``model``/``llm``/``algo`` groups as
``experiments/train.py``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from agentworld_gym.evolution.episodes import EpisodeRecord, EvalTask, evaluate_with_policy
from agentworld_gym.evolution.protocols import TrainingPool
from agentworld_gym.llm.base import LLMBackend
from algorithms import checkpoint
from algorithms.grpo.config import GRPOConfig
from algorithms.grpo.trainer import GRPOTrainer
from algorithms.models import Policy
from algorithms.pool import EnvPoolConfig, TaskPool
from algorithms.tracking import Tracker

logger = logging.getLogger(__name__)

PHASE = "evolve"


class GRPOEvolutionTrainer:
    """A :class:`~agentworld_gym.evolution.protocols.Trainer` running our GRPO.

    Each ``train`` call continues the same GRPO run (step counter, optimizer state, learning
    rate schedule, per-step task seeds) on the round's pool, drawn balanced over L1
    categories; the pool's ``weights`` (focus on freshly evolved envs) are not used — the
    evolved versions are simply in the pool. The KL reference is the policy as it was given
    (after the warm start; with LoRA: the adapters switched off).

    Args:
        policy: the model, kept across rounds.
        config: GRPO settings (``steps`` is replaced by each ``train`` call's ``steps``).
        tracker: optional metrics sink.
        run_dir: where GRPO writes its own checkpoints within a round (``None``: only the
            loop's per-round checkpoints, which is all a resumed run uses).
        eval_sampling: sampling for ``evaluate`` (default greedy, 256 tokens per turn).
        generator: rollouts' and evaluation's generator (default ``policy.generator``; a vLLM
            generator made with ``VLLMBackend.for_policy``).
    """

    def __init__(
        self,
        policy: Policy,
        config: GRPOConfig,
        tracker: Tracker | None = None,
        run_dir: Path | None = None,
        eval_sampling: dict[str, Any] | None = None,
        generator: Any = None,
    ) -> None:
        self.policy = policy
        self.config = config
        self.tracker = tracker
        self.run_dir = run_dir
        self.eval_sampling = eval_sampling or {"temperature": 0.0, "max_tokens": 256}
        self.generator = generator or policy.generator
        self.steps_done = 0
        self._trainer: GRPOTrainer | None = None
        self._optimizer_state: dict[str, Any] | None = None

    def train(self, pool: TrainingPool, steps: int) -> dict[str, Any] | None:
        """Continue GRPO for ``steps`` updates on the round's ``TrainingPool``."""
        task_pool = TaskPool(EnvPoolConfig(envs=list(pool.env_ids)))
        try:
            if self._trainer is None:
                self._trainer = GRPOTrainer(
                    self.policy, task_pool, self.config, self.tracker, self.run_dir, self.generator
                )
                if self._optimizer_state is not None:
                    self._trainer.optimizer.load_state_dict(self._optimizer_state)
                    self._optimizer_state = None
            trainer = self._trainer
            trainer.pool = task_pool
            trainer.step_idx = self.steps_done
            history = trainer.train(self.steps_done + steps, resume=False)
            self.steps_done = trainer.step_idx
        finally:
            task_pool.close()
        return history[-1] if history else None

    def evaluate(self, tasks: list[EvalTask]) -> list[EpisodeRecord]:
        """One episode per task with the current policy (``EpisodeRecord`` list)."""
        return evaluate_with_policy(tasks, self.generator, sampling=self.eval_sampling)

    def save_checkpoint(self, folder: Path) -> None:
        """Trainable weights (the LoRA adapters, or every weight), optimizer, step, RNG."""
        if self._trainer is not None:
            optimizer = self._trainer.optimizer
        else:
            from algorithms.optim import make_optimizer

            optimizer = make_optimizer(self.policy.trainable_parameters(), self.config.lr)
            if self._optimizer_state is not None:
                optimizer.load_state_dict(self._optimizer_state)
        checkpoint.save(Path(folder), PHASE, self.steps_done, self.policy.model, optimizer, {})

    def load_checkpoint(self, folder: Path) -> None:
        """Restore what :meth:`save_checkpoint` wrote (weights, step, optimizer, RNG)."""
        path = checkpoint.latest(Path(folder), PHASE)
        if path is None:
            logger.warning("no %s checkpoint in %s: the policy is not restored", PHASE, folder)
            return
        state = checkpoint.load(path, self.policy.model, None)
        self.steps_done = int(state["step"])
        if self._trainer is not None:
            self._trainer.optimizer.load_state_dict(state["optimizer"])
        else:
            self._optimizer_state = state["optimizer"]
        self.generator.sync_weights(self.policy.model)
        logger.info("restored the policy from %s (GRPO step %d)", path, self.steps_done)


class EvalOnlyTrainer:
    """A trainer that does not train: evaluates any chat backend (a served model, say).

    Evolving environments against a fixed strong model's failures needs no training; the
    loop runs unchanged with ``train_steps_per_round`` ignored.
    """

    def __init__(self, backend: LLMBackend, sampling: dict[str, Any] | None = None) -> None:
        self.backend = backend
        self.sampling = sampling or {"temperature": 0.0}

    def train(self, pool: TrainingPool, steps: int) -> dict[str, Any] | None:
        return None

    def evaluate(self, tasks: list[EvalTask]) -> list[EpisodeRecord]:
        return evaluate_with_policy(tasks, self.backend, sampling=self.sampling)

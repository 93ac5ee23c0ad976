"""Our GRPO trainer behind the evolution loop's ``Trainer`` protocol.

``agentworld_gym.evolution`` depends only on ``train(pool, steps)`` / ``evaluate(tasks)``
(plus optional checkpointing); this adapter keeps one policy across rounds and continues GRPO
on each round's pool.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentworld_gym.evolution.episodes import evaluate_with_policy
from algorithms import checkpoint
from algorithms.grpo.config import GRPOConfig
from algorithms.grpo.trainer import GRPOTrainer
from algorithms.models import Policy
from algorithms.pool import EnvPoolConfig, TaskPool
from algorithms.tracking import Tracker


class GRPOEvolutionTrainer:
    """A :class:`~agentworld_gym.evolution.protocols.Trainer` running our GRPO.

    Args:
        policy: the model, kept across rounds.
        config: GRPO settings (``steps`` is replaced by each ``train`` call's ``steps``).
        tracker: optional metrics sink.
        run_dir: where GRPO checkpoints go.
        eval_sampling: sampling for ``evaluate`` (default greedy, 256 tokens per turn).
    """

    def __init__(
        self,
        policy: Policy,
        config: GRPOConfig,
        tracker: Tracker | None = None,
        run_dir: Path | None = None,
        eval_sampling: dict[str, Any] | None = None,
    ) -> None:
        self.policy = policy
        self.config = config
        self.tracker = tracker
        self.run_dir = run_dir
        self.eval_sampling = eval_sampling or {"temperature": 0.0, "max_tokens": 256}
        self.steps_done = 0
        self._trainer: GRPOTrainer | None = None

    def train(self, pool: Any, steps: int) -> dict[str, Any] | None:
        """Continue GRPO for ``steps`` updates on the round's ``TrainingPool``."""
        task_pool = TaskPool(EnvPoolConfig(envs=list(pool.env_ids)))
        trainer = GRPOTrainer(self.policy, task_pool, self.config, self.tracker, self.run_dir)
        if self._trainer is not None:
            trainer.optimizer.load_state_dict(self._trainer.optimizer.state_dict())
        trainer.step_idx = self.steps_done
        history = trainer.train(self.steps_done + steps, resume=False)
        self.steps_done = trainer.step_idx
        self._trainer = trainer
        return history[-1] if history else None

    def evaluate(self, tasks: list[Any]) -> list[Any]:
        """One episode per task with the current policy (``EpisodeRecord`` list)."""
        return evaluate_with_policy(tasks, self.policy.generator, sampling=self.eval_sampling)

    def save_checkpoint(self, folder: Path) -> None:
        optimizer = self._trainer.optimizer if self._trainer else None
        if optimizer is None:
            from algorithms.optim import make_optimizer

            optimizer = make_optimizer(self.policy.trainable_parameters(), self.config.lr)
        checkpoint.save(Path(folder), "evolve", self.steps_done, self.policy.model, optimizer, {})

    def load_checkpoint(self, folder: Path) -> None:
        path = checkpoint.latest(Path(folder), "evolve")
        if path is not None:
            self.steps_done = int(checkpoint.load(path, self.policy.model, None)["step"])
            self.policy.generator.sync_weights(self.policy.model)

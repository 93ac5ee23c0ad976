"""The evolution loop's configuration: one dataclass, a docstring per field.

The dataclasses are plain (no Hydra import) so library code and tests use them directly; the
Hydra entry point (``experiments/evolve.py``) stores them in the ConfigStore as the
``evolution`` group and converts the composed config back with ``OmegaConf.to_object``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from agentworld_gym.errors import ConfigError


class DiagnosisMode(enum.StrEnum):
    """Who writes the task-generation guidelines of weak environments.

    Members are lower-case so that a Hydra override reads ``evolution.diagnosis=llm``
    (OmegaConf converts enums by member name).
    """

    rules = "rules"
    """Rules over the failure statistics (deterministic, offline; the default)."""
    llm = "llm"
    """The rule guidelines, refined by an LLM diagnosis agent reading failed trajectories."""


@dataclass
class ComplexifyConfig:
    """How much richer a weak environment's database becomes per round (see complexify.py)."""

    extra_record_fraction: float = 0.25
    """New plain records per collection, as a fraction of its current size (at least 1)."""
    near_duplicates: int = 2
    """Near-duplicate records per collection: copies with a new key and perturbed text, so
    that a careless lookup picks the wrong one (distractors)."""
    edge_cases: int = 1
    """Records per collection with edge values: the smallest/largest observed numbers, empty
    lists where lists may be empty, long or non-ASCII text."""
    relations: int = 2
    """Extra child records per referencing collection, attached to the parents with the
    fewest children (more fan-out to walk through)."""
    max_new_records: int = 40
    """Cap on the records added to one collection in one round."""


@dataclass
class EvolutionConfig:
    """The self-evolution loop: train, evaluate on fresh tasks, diagnose, co-evolve, repeat."""

    rounds: int = 3
    """Number of rounds; a finished round is skipped when a run resumes."""
    k_per_category: int = 5
    """Arena size per L1 category; a category with fewer environments gives all it has."""
    redistribute_remainder: bool = False
    """Whether the places small categories leave empty go to other categories (round-robin);
    off by default so every category weighs the same in the arena."""
    eval_tasks_per_env: int = 4
    """Fresh evaluation tasks synthesized per arena environment and round."""
    fill_eval_with_test_split: bool = True
    """Top up an environment's evaluation with its held-out ``test`` tasks when the
    synthesizer gives fewer than ``eval_tasks_per_env`` (trainers never see that split)."""
    train_steps_per_round: int = 100
    """Steps passed to ``trainer.train`` at the start of every round (0 skips training)."""
    weak_env_count: int = 5
    """How many of the weakest environments are co-evolved per round."""
    train_tasks_per_weak_env: int = 8
    """Harder training tasks synthesized per weak environment per round."""
    seed: int = 0
    """Seeds arena sampling, synthesis and complexification (mixed with the round index)."""
    success_threshold: float = 1.0
    """An episode succeeds when its reward reaches this value."""
    eval_max_turns: int | None = None
    """Turn budget of evaluation episodes (``None``: each environment's own)."""
    held_out_suite: str | None = None
    """A registered evaluation suite (``bfcl-multi-turn``, ``tau2-retail``...; ``agentworld
    eval --suite list``) the policy is also evaluated on every round, after the arena: a
    held-out pool it is never trained on and that is never diagnosed or evolved. Each round's
    ``held_out.json`` and summary give its success per suite category with the task count
    and a 95% Wilson interval (``agentworld evolve report`` prints them); success is the
    benchmark's own, and an episode whose policy failed (a request timed out) counts as a
    failure and an error. ``None``: the arena only."""
    held_out_tasks_per_env: int | None = None
    """Tasks of each suite environment (i.e. per category) evaluated per round, the first
    ones of its split (``None``: all of them; BFCL has 200 per category)."""
    diagnosis: DiagnosisMode = DiagnosisMode.rules
    """Rule-based guidelines, or rules refined by an LLM (needs a ``diagnoser`` backend)."""
    prior_strength: float = 2.0
    """alpha: pseudo-episodes at the global failure rate that smooth each env's rate."""
    evidence_scale: float = 2.0
    """kappa: evidence weight n / (n + kappa); with few episodes an env ranks lower."""
    focus_weight: float = 2.0
    """Sampling weight of freshly evolved environments in the next training pool (others 1)."""
    complexify: ComplexifyConfig = field(default_factory=ComplexifyConfig)
    """Database complexification of weak environments."""
    plots: bool = True
    """Draw PNG plots with matplotlib (skipped with a warning when it is not installed)."""

    def __post_init__(self) -> None:
        if isinstance(self.diagnosis, str):
            self.diagnosis = DiagnosisMode(self.diagnosis)
        if isinstance(self.complexify, dict):
            self.complexify = ComplexifyConfig(**self.complexify)
        checks = {
            "rounds": self.rounds >= 1,
            "k_per_category": self.k_per_category >= 1,
            "eval_tasks_per_env": self.eval_tasks_per_env >= 1,
            "train_steps_per_round": self.train_steps_per_round >= 0,
            "weak_env_count": self.weak_env_count >= 0,
            "train_tasks_per_weak_env": self.train_tasks_per_weak_env >= 0,
            "prior_strength": self.prior_strength >= 0,
            "evidence_scale": self.evidence_scale >= 0,
            "held_out_tasks_per_env": self.held_out_tasks_per_env is None
            or self.held_out_tasks_per_env >= 1,
        }
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            values = ", ".join(f"{name}={getattr(self, name)!r}" for name in bad)
            raise ConfigError(
                f"EvolutionConfig: {values} out of range (counts must be >= 1, steps, "
                "weak_env_count and smoothing constants >= 0)"
            )
        if not 0.0 < self.success_threshold <= 1.0:
            raise ConfigError(
                f"EvolutionConfig.success_threshold must be in (0, 1], got {self.success_threshold}"
            )

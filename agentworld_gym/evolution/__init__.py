"""Self-evolution: train, evaluate on fresh tasks, diagnose, co-evolve weak envs, repeat.

The loop wraps any trainer (``train(pool, steps)`` / ``evaluate(tasks)``) and the catalog:

>>> from agentworld_gym.evolution import EvolutionConfig, run_evolution
>>> summaries = run_evolution(EvolutionConfig(rounds=2), trainer, None,
...                           "envs_generated", "runs/evolve")  # doctest: +SKIP

Modules: :mod:`.arena` (sampling balanced over L1 categories), :mod:`.episodes`
(trajectories), :mod:`.failures` and :mod:`.diagnosis` (classification, weak-env ranking,
guidelines), :mod:`.llm_diagnosis`, :mod:`.report`, :mod:`.fallback` and :mod:`.adapters`
(task synthesis), :mod:`.complexify` and :mod:`.rederive` (richer databases, carried-over
tasks), :mod:`.coevolve`, :mod:`.catalog` (atomic registry regeneration), :mod:`.loop`.
Importing this package imports no model or plotting library.
"""

from __future__ import annotations

from agentworld_gym.evolution.arena import Arena, sample_arena
from agentworld_gym.evolution.config import ComplexifyConfig, DiagnosisMode, EvolutionConfig
from agentworld_gym.evolution.diagnosis import Diagnosis, diagnose
from agentworld_gym.evolution.episodes import (
    EpisodeRecord,
    EvalTask,
    evaluate_with_policy,
    run_episode,
)
from agentworld_gym.evolution.failures import FailureClass, classify_failure
from agentworld_gym.evolution.loop import run_evolution
from agentworld_gym.evolution.protocols import (
    Checkpointable,
    Guidelines,
    TaskSynthesizer,
    Trainer,
    TrainingPool,
)

__all__ = [
    "Arena",
    "Checkpointable",
    "ComplexifyConfig",
    "Diagnosis",
    "DiagnosisMode",
    "EpisodeRecord",
    "EvalTask",
    "EvolutionConfig",
    "FailureClass",
    "Guidelines",
    "TaskSynthesizer",
    "Trainer",
    "TrainingPool",
    "classify_failure",
    "diagnose",
    "evaluate_with_policy",
    "run_episode",
    "run_evolution",
    "sample_arena",
]

"""Task synthesis: graph walks (rubric verifiers) and programs (script verifiers).

Stages, one module each: :mod:`.model` (an environment's tools and state), :mod:`.graph`
(tool-dependency graph), :mod:`.walk` (weighted walks, executed), :mod:`.graph_tasks` and
:mod:`.describe` (walk -> request, answer, rubric), :mod:`.programs` (program runtime) with the
template library in :mod:`.templates`, :mod:`.templates_agg` and :mod:`.templates_batch`,
:mod:`.llm_programs` (programs an LLM writes), :mod:`.scripts` (verification scripts),
:mod:`.program_tasks`, :mod:`.accept` (solvable, stable, not trivial), :mod:`.pipeline` (one
environment), :mod:`.catalog` (every environment: ``agentworld synth tasks``), :mod:`.stats`
(``agentworld tasks stats``) and :mod:`.sft` (``agentworld synth export-sft``).
"""

from __future__ import annotations

from agentworld_gym.synthesis.tasks.pipeline import (
    EnvReport,
    EnvSynthesizer,
    TaskSynthConfig,
    synthesize_tasks,
)

__all__ = ["EnvReport", "EnvSynthesizer", "TaskSynthConfig", "synthesize_tasks"]

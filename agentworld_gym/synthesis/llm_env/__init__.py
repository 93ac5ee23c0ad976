"""LLM environment synthesis: a theme (and local sources) -> a validated, code-implemented env.

``agentworld synth env --theme ... --llm-base-url ... --llm-model ...``; see :mod:`.pipeline`.
The tools it writes follow the Agent-World release contract, so the release runtime
(:mod:`agentworld_gym.release.runtime`) runs them, isolated, exactly like imported ones.
"""

from __future__ import annotations

from agentworld_gym.synthesis.llm_env.pipeline import (
    LLMEnvConfig,
    SynthResult,
    default_synth_root,
    synthesize_env,
)

__all__ = ["LLMEnvConfig", "SynthResult", "default_synth_root", "synthesize_env"]

"""Environment synthesis from real API specs: ``agentworld synth envs``.

Stages, one module each: :mod:`.source` (the pinned spec corpus and licences),
:mod:`.normalize` (OpenAPI -> plain operations), :mod:`.cut` (specs -> environments),
:mod:`.infer` and :mod:`.compile` (state model and ``op`` tools), :mod:`.seed` and
:mod:`.records` (seed data), :mod:`.tasks` (seed tasks), :mod:`.validate` (execution checks),
:mod:`.build` (one spec) and :mod:`.pipeline` (the catalog).
"""

from __future__ import annotations

from agentworld_gym.synthesis.envs.pipeline import CatalogReport, SynthConfig, synthesize

__all__ = ["CatalogReport", "SynthConfig", "synthesize"]

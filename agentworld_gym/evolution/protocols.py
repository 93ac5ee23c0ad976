"""The small interfaces the loop depends on: trainer, task synthesizer, guidelines.

``agentworld_gym`` never imports ``algorithms/``: a trainer is anything with ``train`` and
``evaluate`` (checkpointing is optional), and a task synthesizer anything with
``synthesize``. ``experiments/evolve.py`` wires concrete ones together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentworld_gym.evolution.episodes import EpisodeRecord, EvalTask
from agentworld_gym.spec import EnvSpec, TaskSpec


@dataclass
class Guidelines:
    """What to synthesize for one weak environment, and how hard.

    The knobs are read by the built-in synthesizer and passed on to others; ``text`` is the
    same advice in prose, for an LLM synthesizer's prompt.
    """

    env_id: str
    """The environment's slug (``EnvSpec.id``)."""
    focus_tools: list[str] = field(default_factory=list)
    """Tools to build tasks around, weakest first."""
    patterns: list[str] = field(default_factory=list)
    """Task patterns to emphasise: ``lookup``, ``find``, ``count``, ``walk``, ``update``,
    ``create``, ``aggregate`` (a program task)."""
    walk_length: int = 2
    """Tool calls in a graph task's gold chain (longer walks through references)."""
    writes: int = 0
    """Write steps per task (0: read-only tasks are fine)."""
    distractors: int = 0
    """Near-duplicate records to plant and to prefer as targets (a careless lookup fails)."""
    program_share: float = 0.2
    """Fraction of program (control flow, aggregation) tasks among the new ones."""
    notes: list[str] = field(default_factory=list)
    """Why each knob was set, one line each (the report shows them)."""
    text: str = ""
    """Free-text advice for an LLM synthesizer; written by the LLM diagnosis when enabled."""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Guidelines:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_prompt(self) -> str:
        """The guidelines as instructions for a task-writing LLM."""
        lines = [
            f"Write harder tasks for environment {self.env_id}.",
            f"Build them around these tools: {', '.join(self.focus_tools) or 'any'}.",
            f"Favour these patterns: {', '.join(self.patterns) or 'any'}.",
            f"Gold chains of about {self.walk_length} tool calls, with {self.writes} write(s);",
            f"{self.distractors} near-duplicate distractor record(s) to tell apart;",
            f"about {self.program_share:.0%} program tasks (loops, filters, aggregation).",
        ]
        lines += [f"- {note}" for note in self.notes]
        if self.text:
            lines.append(self.text)
        return "\n".join(lines)


@dataclass
class TrainingPool:
    """What the trainer trains on next: registered environment ids and sampling weights."""

    env_ids: list[str]
    """Gymnasium ids (``AgentWorld/<slug>-v<k>``), the newest version of every environment;
    registered with Gymnasium before ``train`` is called."""
    folders: dict[str, str] = field(default_factory=dict)
    """Gym id -> environment folder, for trainers that build envs directly
    (``AgentWorldEnv(EnvSpec.load(folder))``) rather than through ``gym.make``."""
    weights: dict[str, float] = field(default_factory=dict)
    """Relative sampling weight per id (missing: 1.0); freshly evolved envs weigh more."""
    catalog_root: str = ""
    round: int = 0


class Trainer(Protocol):
    """A policy that can be trained on a pool and evaluated on tasks.

    ``evaluate`` returns one :class:`EpisodeRecord` per task, in order, trajectories
    included; :func:`~agentworld_gym.evolution.episodes.evaluate_with_policy` does it for
    any :class:`~agentworld_gym.llm.LLMBackend`.
    """

    def train(self, pool: TrainingPool, steps: int) -> dict[str, Any] | None: ...

    def evaluate(self, tasks: list[EvalTask]) -> list[EpisodeRecord]: ...


@runtime_checkable
class Checkpointable(Protocol):
    """Optional: a trainer that can save and restore its policy lets a run resume mid-way."""

    def save_checkpoint(self, folder: Path) -> None: ...

    def load_checkpoint(self, folder: Path) -> None: ...


class TaskSynthesizer(Protocol):
    """Writes new, verified tasks for an environment.

    Every returned task must carry a gold solution that replays to reward 1.0 on ``spec``'s
    database (the loop re-checks and drops those that do not). ``seed`` makes the choice
    reproducible; ``guidelines`` (when given) says where to aim.
    """

    def synthesize(
        self, spec: EnvSpec, n: int, seed: int, guidelines: Guidelines | None = None
    ) -> list[TaskSpec]: ...

"""Co-evolution of one weak environment: richer database, carried-over tasks, harder tasks.

:func:`evolve_env` turns version ``k`` into version ``k + 1`` in memory (the loop commits
it with :func:`~agentworld_gym.evolution.catalog.commit_versions`):

1. complexify the database (:mod:`.complexify`) and refuse the version if any constraint is
   violated;
2. carry the old tasks over (:mod:`.rederive`): kept, re-derived or dropped, each replayed;
3. synthesize harder training tasks on the *new* database following the guidelines, and
   keep those whose gold replays to 1.0 and that repeat no existing or evaluation task.
"""

from __future__ import annotations

import dataclasses
import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.evolution.complexify import ComplexifyError, complexify
from agentworld_gym.evolution.config import EvolutionConfig
from agentworld_gym.evolution.protocols import Guidelines, TaskSynthesizer
from agentworld_gym.evolution.rederive import rederive_tasks, replay
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.tasks.verifier.seal import seal_spec

logger = logging.getLogger(__name__)


def normalise_instruction(text: str) -> str:
    return " ".join(text.casefold().split())


@dataclass
class EvolvedEnv:
    """The new version (``None`` when refused) and what happened on the way."""

    spec: EnvSpec | None
    report: dict[str, Any] = field(default_factory=dict)


def validated(spec: EnvSpec, tasks: list[TaskSpec], seen: set[str]) -> list[TaskSpec]:
    """Tasks whose gold replays to 1.0 on ``spec``, checked against the exact end state
    their gold makes there (sealed), and whose instruction is new."""
    out = []
    unsealed = seal_spec(spec, tasks)
    for task in tasks:
        key = normalise_instruction(task.instruction)
        if key in seen or task.id in unsealed:
            continue
        if replay(spec, task).result.ok:
            seen.add(key)
            out.append(task)
    return out


def evolve_env(
    spec: EnvSpec,
    guidelines: Guidelines,
    config: EvolutionConfig,
    synthesizer: TaskSynthesizer,
    *,
    round_index: int,
    seed: int,
    exclude_instructions: set[str] | None = None,
) -> EvolvedEnv:
    """Version ``spec.version + 1`` of ``spec`` (see the module docstring)."""
    report: dict[str, Any] = {
        "env": spec.gym_id,
        "from_version": spec.version,
        "guidelines": guidelines.to_dict(),
    }
    try:
        result = complexify(spec, config.complexify, seed, distractors=guidelines.distractors)
    except ComplexifyError as exc:
        report["refused"] = f"database not complexified: {exc}"
        logger.warning("%s: %s; no new version", spec.id, report["refused"])
        return EvolvedEnv(None, report)
    report["records_added"] = {c: len(keys) for c, keys in result.added.items()}
    report["record_kinds"] = result.kinds
    report["constraints"] = result.constraints.to_dict()
    report["violations"] = result.violations
    if result.violations:
        report["refused"] = f"{len(result.violations)} constraint violation(s)"
        logger.warning("%s: complexified database violates constraints; no new version", spec.id)
        return EvolvedEnv(None, report)
    snapshot = spec.database.snapshot()
    documents = {k: v for k, v in snapshot.items() if k not in spec.database.collections}
    history = list(spec.provenance.get("evolution", []))
    new = dataclasses.replace(
        spec,
        version=spec.version + 1,
        records={**result.records, **documents},
        root=None,
        tasks=[],
    )
    kept, outcomes = rederive_tasks(spec, new)
    unsealed = seal_spec(new, kept)  # the end state their gold makes on the new data
    kept = [t for t in kept if t.id not in unsealed]
    report["carried_over"] = [dataclasses.asdict(o) for o in outcomes]
    status = Counter(o.status for o in outcomes)
    seen = {normalise_instruction(t.instruction) for t in kept}
    seen |= {normalise_instruction(t) for t in exclude_instructions or ()}
    proposed = synthesizer.synthesize(new, config.train_tasks_per_weak_env, seed, guidelines)
    taken = {t.id for t in kept}
    fresh = []
    for i, task in enumerate(validated(new, list(proposed), seen)):
        task_id = f"{spec.id}-r{round_index}-{i:03d}"
        while task_id in taken:
            task_id += "x"
        taken.add(task_id)
        fresh.append(
            dataclasses.replace(
                task,
                id=task_id,
                split="train",
                provenance={**task.provenance, "round": round_index, "origin": "evolution"},
            )
        )
    report["new_tasks"] = [t.id for t in fresh]
    summary = {
        "round": round_index,
        "from_version": spec.version,
        "seed": seed,
        "records_added": report["records_added"],
        "tasks_kept": status["kept"],
        "tasks_rederived": status["rederived"],
        "tasks_dropped": status["dropped"],
        "tasks_new": len(fresh),
    }
    report.update({k: v for k, v in summary.items() if k.startswith("tasks_")})
    new.tasks = kept + fresh
    new.provenance = {**spec.provenance, "evolution": [*history, summary]}
    if not new.tasks_in("train"):
        report["refused"] = "no training task left (none carried over, none synthesized)"
        return EvolvedEnv(None, report)
    report["to_version"] = new.version
    return EvolvedEnv(new, report)

"""Sealing a candidate: its verifier checks the exact end state its gold solution produces.

The builders state what a task asks about the data (answer checks) and the writes it wants;
sealing replaces every per-record state check (``record``, ``count``) with one ``state``
check derived from the gold chain's two replays (:func:`~agentworld_gym.verifiers.state.
expected_changes`): every change the gold makes must be made, nothing else may change, and
values the agent cannot know in advance (generated ids, the tool's timestamps) are masked.

Weights: each requested change weighs what a per-record check weighed (2), so partial work
keeps partial credit; a read-only task gets a "nothing changed" criterion as heavy as its
answer checks that pays only with the answer right (``"requires": "answer"``): keeping the
data intact while answering is half the task, doing nothing is none of it. A criterion with
``"requires": "state"`` (a write task's "tell me how many") scores only once the state is
right: reporting the count of work not done earns nothing.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.tasks.candidate import Candidate
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.verifiers.checks import ANSWER_CHECKS
from agentworld_gym.verifiers.state import expected_changes, units

PER_RECORD_CHECKS = frozenset({"record", "count", "state"})
CHANGE_WEIGHT = 2.0


def seal(candidate: Candidate, base: Database) -> str | None:
    """Give ``candidate``'s rubric the exact state check of its gold run; ``None`` when done,
    else why it cannot be sealed (the candidate is then rejected)."""
    verifier = candidate.task.verifier
    if verifier.get("type") != "rubric":
        return None
    cases = {c.name: c.final for c in candidate.cases}
    if "gold" not in cases or "gold_probe" not in cases:
        return "no gold replays to derive the end state from"
    check = expected_changes(base, cases["gold"], cases["gold_probe"])
    if check is None:
        return "gold changes differ between replays"
    verifier["criteria"] = sealed_criteria(verifier["criteria"], check)
    return None


def sealed_criteria(criteria: list[dict[str, Any]], check: dict[str, Any]) -> list[dict[str, Any]]:
    """``criteria`` without their per-record state checks, plus the exact ``state`` check."""
    kept = [c for c in criteria if (c.get("check") or {}).get("type") not in PER_RECORD_CHECKS]
    n = units(check)
    if n:
        text = f"The data ends exactly as requested ({n} change{'s' * (n != 1)}, nothing else)"
        state = {"text": text, "weight": CHANGE_WEIGHT * n, "check": check}
    else:
        asked = [c for c in kept if (c.get("check") or {}).get("type") in ANSWER_CHECKS]
        weight = sum(float(c.get("weight", 1.0)) for c in asked) or 1.0
        state = {"text": "Nothing in the data changes", "weight": weight, "check": check}
        if asked:
            state["requires"] = "answer"
    return [*kept, state]


def seal_spec(spec: EnvSpec, tasks: list[TaskSpec] | None = None) -> dict[str, str]:
    """Seal, in place, every rubric task with a gold tool chain among ``tasks`` (default: the
    spec's own: hand-written ones such as notion's, or tasks carried to a new database),
    replaying on ``spec``; returns why a task could not be sealed, by id."""
    runner = Runner(spec)
    problems: dict[str, str] = {}
    for task in spec.tasks if tasks is None else tasks:
        calls = (task.gold or {}).get("calls")
        if task.verifier.get("type") != "rubric" or not calls:
            continue
        gold = runner.run(calls, task.id)
        probe = runner.run(calls, task.id + "-probe", probe=True)
        if not (gold.ok and probe.ok):
            problems[task.id] = f"gold replay failed: {gold.error or probe.error}"
            continue
        check = expected_changes(runner.base, gold.db, probe.db)
        if check is None:
            problems[task.id] = "gold changes differ between replays"
            continue
        task.verifier["criteria"] = sealed_criteria(task.verifier["criteria"], check)
    return problems

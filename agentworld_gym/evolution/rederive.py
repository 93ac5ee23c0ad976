"""Carry tasks over to a complexified database: re-derive their expected values, or drop them.

A task's gold answer and checks were computed on the old records; with more records a count
may change ("how many items are open?" was 2, is now 3). Nothing is reused blindly: every
task is replayed on both versions and

1. its gold chain must still verify to 1.0 on the **old** version (else it is dropped);
2. answer checks are re-derived from the gold chain's outputs on the **new** version: a
   ``gold.derive`` recipe (``{"agg": "count" | "sum" | "max" | "min" | "only", "step",
   "path", "field"}``; ``only``: the one item's field, failing if the list no longer has
   exactly one item) is recomputed; otherwise the old expected value is located in the old
   outputs (best kind of place first: a list of that length or a ``count``/``total``
   field; an equal value; a string containing it) and read again at the same places in
   the new outputs (list items followed by their ``id``, so a shifted order is harmless).
   A value found nowhere (the chain does not show where the answer comes from), a place
   that is gone, or places that now disagree: the task is dropped;
3. ``count`` checks keep the change the task makes: ``new = count_new_initial + (old -
   count_old_initial)``;
4. the reference answer and criterion texts follow the new values;
5. the re-derived task is replayed on the new version and kept only at reward 1.0.

``record``, ``tool_called`` and script checks are not rewritten: the final replay decides.
A program task whose reads return other data on the new version is dropped: its control flow
would take other paths than its fixed gold chain (the loop makes fresh programs instead).
"""

from __future__ import annotations

import copy
import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

import orjson

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.evolution.values import (
    MISSING,
    find_value_paths,
    mentions_number,
    read_anchored,
)
from agentworld_gym.replay import ReplayResult, replay_gold
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.verifiers.checks import ANSWER_CHECKS, get_path, matches


@dataclass
class RederiveOutcome:
    """What happened to one task."""

    task_id: str
    status: str
    """``kept`` (verifies unchanged), ``rederived`` (values recomputed) or ``dropped``."""
    reason: str = ""
    changes: list[str] = field(default_factory=list)


@dataclass
class _Replay:
    result: ReplayResult
    outputs: list[Any]
    env: AgentWorldEnv


def replay(spec: EnvSpec, task: TaskSpec) -> _Replay:
    """Replay ``task``'s gold chain on ``spec`` (a private env, so no cached verifier)."""
    probe = dataclasses.replace(spec, tasks=[task])
    probe.__dict__["database"] = spec.database
    env = AgentWorldEnv(probe, split="all", max_turns=10_000)
    result = replay_gold(env, task)
    outputs = [_loads(m.get("content") or "") for m in env.messages if m.get("role") == "tool"]
    return _Replay(result, outputs, env)


def _loads(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def derive_value(recipe: dict[str, Any], outputs: list[Any]) -> Any:
    """Recompute a ``gold.derive`` recipe over a replay's outputs (``MISSING`` if it fails)."""
    step = int(recipe.get("step", 0))
    if step >= len(outputs):
        return MISSING
    items = get_path(outputs[step], str(recipe.get("path", "")))
    if not isinstance(items, list):
        return MISSING
    agg = recipe.get("agg", "count")
    if agg == "count":
        return len(items)
    if agg == "only":
        found = get_path(items[0], recipe.get("field", "")) if len(items) == 1 else MISSING
        return MISSING if found is MISSING else found
    values = [get_path(i, recipe.get("field", "")) for i in items]
    numbers = [v for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(values):
        return MISSING
    if agg == "sum":
        total = sum(numbers)
        return round(total, 6) if isinstance(total, float) else total
    if agg in ("max", "min") and numbers:
        return max(numbers) if agg == "max" else min(numbers)
    return MISSING


def _new_answer_value(value: Any, task: TaskSpec, old: _Replay, new: _Replay) -> tuple[Any, str]:
    """The re-derived expected value, or ``(MISSING, why)`` when it cannot be re-derived."""
    recipe = (task.gold or {}).get("derive")
    if recipe and str(derive_value(recipe, old.outputs)) == str(value):
        derived = derive_value(recipe, new.outputs)
        if derived is MISSING:
            return MISSING, f"its derive recipe {recipe} fails on the new outputs"
        return derived, ""
    places = find_value_paths(old.outputs, value)
    if not places:
        return MISSING, f"{value!r} is not in the gold chain's outputs: nothing to re-derive from"
    best = places[0][0]
    reads = []
    for rank, kind, ref in places:
        if rank != best:
            break
        got = read_anchored(old.outputs, new.outputs, ref)
        if kind == "len":
            got = len(got) if isinstance(got, list) else MISSING
        elif kind == "substr":
            inside = isinstance(got, str) and str(value).casefold() in got.casefold()
            got = value if inside else MISSING
        elif kind == "numtext":
            got = value if isinstance(got, str) and mentions_number(got, value) else MISSING
        if got is MISSING:
            return MISSING, f"{value!r} was read at {ref}, which changed on the new database"
        reads.append(got)
    if len({orjson.dumps(v) for v in reads}) > 1:
        return MISSING, f"ambiguous: {value!r} is read from places that now disagree"
    return reads[0], ""


def _sub(text: str, old: Any, new: Any) -> str:
    pattern = r"(?<![\w.])" + re.escape(str(old)) + r"(?![\w])"
    return re.sub(pattern, str(new), text)


def _count(db: Any, check: dict[str, Any]) -> int:
    return sum(1 for rec in db.scan(check["collection"]) if matches(rec, check.get("where", {})))


def _rederive(
    task: TaskSpec, old_spec: EnvSpec, new_spec: EnvSpec, old: _Replay, new: _Replay
) -> tuple[TaskSpec | None, list[str], str]:
    """A copy of ``task`` with expected values recomputed; ``(task, changes, problem)``."""
    derived = copy.deepcopy(task)
    changes: list[str] = []
    rubric = derived.verifier.get("type") == "rubric"
    criteria = derived.verifier.get("criteria", []) if rubric else []
    for crit in criteria:
        check = crit.get("check") or {}
        kind = check.get("type")
        if kind in ANSWER_CHECKS:
            typed = kind == "answer"
            listed = isinstance(check.get("value"), list)
            values = (
                [e["value"] for e in check["expect"]]
                if typed
                else (check["value"] if listed else [check["value"]])
            )
            out = []
            for value in values:
                target = value
                if kind != "answer_equals" and isinstance(value, str):
                    number = _as_number(value)
                    target = number if number is not None else value
                got, why = _new_answer_value(target, task, old, new)
                if got is MISSING:
                    return None, changes, why
                got = str(got) if isinstance(value, str) else got
                if got != value:
                    changes.append(f"{kind} {value!r} -> {got!r}")
                    crit["text"] = _sub(crit.get("text", ""), value, got)
                    derived.reference_answer = _retext(derived.reference_answer, value, got, kind)
                    if derived.gold is not None and "answer" in derived.gold:
                        derived.gold["answer"] = _retext(derived.gold["answer"], value, got, kind)
                out.append(got)
            if typed:
                for expect, got in zip(check["expect"], out, strict=True):
                    expect["value"] = got
            else:
                check["value"] = out if listed else out[0]
        elif kind == "count":
            shift = _count(new_spec.database, check) - _count(old_spec.database, check)
            for bound in ("equals", "min", "max"):
                if bound in check and shift:
                    before, check[bound] = check[bound], check[bound] + shift
                    changes.append(f"count {bound} {before} -> {check[bound]}")
                    crit["text"] = _sub(crit.get("text", ""), before, check[bound])
    return derived, changes, ""


def _as_number(text: str) -> int | float | None:
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


def _retext(answer: str, old: Any, new: Any, kind: str) -> str:
    """The answer text with the new value (the value alone if the old one is not in it)."""
    text = _sub(answer or "", old, new)
    return text if text != (answer or "") or str(new) in text else str(new)


def rederive_tasks(
    old_spec: EnvSpec, new_spec: EnvSpec
) -> tuple[list[TaskSpec], list[RederiveOutcome]]:
    """``old_spec``'s tasks carried to ``new_spec``'s database (see the module docstring)."""
    kept: list[TaskSpec] = []
    outcomes: list[RederiveOutcome] = []
    for task in old_spec.tasks:
        outcome = RederiveOutcome(task.id, "dropped")
        outcomes.append(outcome)
        if not task.gold or task.gold.get("type") != "tool_chain":
            outcome.reason = "no replayable tool_chain gold"
            continue
        old = replay(old_spec, task)
        if not old.result.ok:
            outcome.reason = f"gold does not verify on the old version ({old.result.reward:.2f})"
            continue
        new = replay(new_spec, task)
        if new.result.errors:
            errors = "; ".join(new.result.errors)
            outcome.reason = f"gold chain fails on the new database: {errors[:300]}"
            continue
        if task.kind == "program" and new.outputs != old.outputs:
            # a program loops and branches over what its reads return: with other inputs it
            # would make other calls, which a fixed gold chain (and its sealed end state)
            # cannot follow; the evolution loop synthesizes programs for the new data instead
            outcome.reason = "the program's reads return other data on the new version"
            continue
        derived, changes, problem = _rederive(task, old_spec, new_spec, old, new)
        if derived is None:
            outcome.reason = problem
            continue
        outcome.changes = changes
        check = replay(new_spec, derived) if changes else new
        if not check.result.ok:
            outcome.reason = (
                f"{'re-derived ' if changes else ''}gold gets {check.result.reward:.2f} on the "
                "new database" + (f": {check.result.errors[0]}" if check.result.errors else "")
            )
            continue
        if changes:
            derived.provenance = {**derived.provenance, "rederived": changes}
        outcome.status = "rederived" if changes else "kept"
        kept.append(derived)
    return kept, outcomes

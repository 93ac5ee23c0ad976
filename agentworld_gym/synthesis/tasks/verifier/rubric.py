"""Rubric criteria: what a task's answer must state and what its writes must leave behind.

The rubric a task carries before sealing (:mod:`.seal` then replaces its per-record state
checks with one exact-state check):

- a **graph task** (:mod:`agentworld_gym.synthesis.tasks.goal.walk`): one machine-checked
  criterion per fact (:func:`fact_criterion`: exact text, or a number with a tolerance), one
  per final-state fact of each write (:func:`state_criteria`: a field's new value, a created
  record, a deleted one), and a completeness criterion over all reported values
  (:func:`completeness_criterion`);
- a **program task** (:mod:`agentworld_gym.synthesis.tasks.goal.program`): the values its
  answer reports (:func:`answer_rubric`).
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.synthesis.tasks.model import BODY, SCOPE, EnvModel, humanize, scalar
from agentworld_gym.synthesis.tasks.request.walk import Fact
from agentworld_gym.synthesis.tasks.sample.programs import Answer
from agentworld_gym.synthesis.tasks.sample.walk import Step
from agentworld_gym.verifiers.base import Episode
from agentworld_gym.verifiers.checks import run_check


def fact_criterion(f: Fact, label: str, name: str) -> dict[str, Any]:
    """One asked value of a graph task, exactly; ``label`` says what it is, ``name`` is its
    answer field (``submit`` may carry it). A fact of the first call weighs 1, a later one 2."""
    weight = 1 if f.step == 0 else 2
    expect: dict[str, Any] = {"value": f.value, "name": name}
    if isinstance(f.value, float):
        expect["tolerance"] = max(0.01, abs(f.value) * 1e-4)
    elif not isinstance(f.value, int | float) or isinstance(f.value, bool):
        expect["value"] = str(f.value)
    check = {"type": "answer", "expect": [expect]}
    return {"text": f"States the {label}: {f.value}", "weight": weight, "check": check}


def completeness_criterion(facts: list[Fact]) -> dict[str, Any] | None:
    """A criterion over all reported text values, where there are three or more different ones."""
    strings = [str(f.value) for f in facts if isinstance(f.value, str)]
    if len(set(strings)) >= 3:
        return {
            "text": "Reports every value asked for",
            "weight": 1,
            "check": {"type": "answer_contains", "value": strings},
        }
    return None


def state_criteria(
    model: EnvModel, base: Any, steps: list[Step], r1: Any, r2: Any
) -> list[dict[str, Any]]:
    """One criterion per final-state fact of each write of a walk (a field's new value, a
    created record, a deleted one), kept only if both replays ``r1`` and ``r2`` satisfy it and
    the untouched ``base`` does not."""
    out: list[dict[str, Any]] = []
    for step in steps:
        tool = step.tool
        coll = model.collections.get(tool.collection or "")
        if not tool.writes or coll is None:
            continue
        given = {
            tool.params[n].field or n: s.value
            for n, s in step.sources.items()
            if s.kind == "given" and tool.params[n].role == BODY
        }
        flat = _flatten(given)
        key = step.target[1] if step.target else None
        stable = key is not None and base.get(coll.name, key) is not None
        checks: list[tuple[str, dict[str, Any]]] = []
        if tool.op == "delete" and stable:
            checks.append(
                (
                    f"The {coll.noun} {key} no longer exists",
                    {
                        "type": "record",
                        "collection": coll.name,
                        "key": str(key),
                        "exists": False,
                    },
                )
            )
        elif tool.op == "update" and stable:
            for path, value in flat.items():
                checks.append(
                    (
                        f"The {coll.noun} {key} has {humanize(path)} {value}",
                        {
                            "type": "record",
                            "collection": coll.name,
                            "key": str(key),
                            "path": path,
                            "equals": value,
                        },
                    )
                )
        elif tool.op in ("create", "update") and flat:
            where = dict(flat)
            for n, s in step.sources.items():
                p = tool.params[n]
                if p.role == SCOPE and p.field and s.kind != "ref" and scalar(s.value):
                    where[p.field] = s.value
            n1 = sum(1 for _ in _matching(r1.db, coll.name, where))
            what = ", ".join(f"{humanize(k)} {v}" for k, v in flat.items())
            checks.append(
                (
                    f"{n1} {coll.noun} record(s) with {what} exist",
                    {"type": "count", "collection": coll.name, "where": where, "equals": n1},
                )
            )
        for text, check in checks:
            ok1 = run_check(check, Episode(base, r1.db, ""))[0]
            ok2 = run_check(check, Episode(base, r2.db, ""))[0]
            if ok1 and ok2 and not run_check(check, Episode(base, base, ""))[0]:
                out.append({"text": text, "weight": 2, "check": check})
    return out


def _flatten(given: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in given.items():
        if isinstance(v, dict):
            out.update(
                {f"{k}.{ik}": iv for ik, iv in v.items() if scalar(iv) or isinstance(iv, bool)}
            )
        elif scalar(v) or isinstance(v, bool):
            out[k] = v
    return out


def _matching(db, collection: str, where: dict[str, Any]):
    from agentworld_gym.verifiers.checks import matches

    return (r for r in db.scan(collection) if matches(r, where))


def answer_rubric(answer: Answer | str, writes: bool) -> dict[str, Any] | None:
    """The rubric of a program task before sealing: the values its answer reports, exactly
    (in a write task they count only once the writes are right). Sealing adds the state."""
    facts = getattr(answer, "facts", ())
    if any(v is None or not isinstance(v, str | int | float) for v in facts):
        return None
    if not facts:
        return None if not writes else {"type": "rubric", "criteria": []}
    tolerance = getattr(answer, "tolerance", 0.0)
    expect = [{"value": v, "tolerance": tolerance} if tolerance else {"value": v} for v in facts]
    shown = ", ".join(map(str, facts))
    criterion: dict[str, Any] = {
        "text": f"Reports {shown}",
        "weight": 1,
        "check": {"type": "answer", "expect": expect},
    }
    if writes:
        criterion["requires"] = "state"
    return {"type": "rubric", "criteria": [criterion]}

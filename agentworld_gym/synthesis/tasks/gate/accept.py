"""Acceptance: a candidate is kept only if it is solvable, stable and not trivial.

Judged with the task's own verifier on the states its gold chain produced:

- **solvable**: the gold answer on the gold final state scores 1.0;
- **stable**: so does the replay with another task id and a shifted clock (nothing volatile,
  like a generated id or a timestamp, is checked);
- **not trivial**: the empty answer on the untouched state, and the first call's raw output
  as the answer after only the first call, both score below 0.5; and a read-only one-call
  task whose call returns every asked value is a lookup, not a task.

Rubric verifiers run in-process (the :class:`~agentworld_gym.verifiers.RubricVerifier` the
environment uses). Scripts run in the sandbox, as in an episode, but many per sandbox process:
one batch executes every candidate's script on every case, which keeps validation at well
under a millisecond per script instead of a fresh sandbox per run. A script's value maps to a
reward exactly as :class:`~agentworld_gym.verifiers.script.ScriptVerifier` maps it.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import VerifierError
from agentworld_gym.sandbox import SandboxLimits, run_function
from agentworld_gym.synthesis.tasks.candidate import Candidate, Case
from agentworld_gym.verifiers import build_verifier
from agentworld_gym.verifiers.answers import check_answer
from agentworld_gym.verifiers.base import Episode
from agentworld_gym.verifiers.checks import ANSWER_CHECKS, answer_expected

TRIVIAL = 0.5
BATCH = 48
_CHECK_ALL = """
def check_all(states, items):
    out = []
    for source, cases in items:
        ns = {"__name__": "verifier"}
        try:
            exec(compile(source, "<verifier>", "exec"), ns)
        except Exception as exc:
            out.append(["error: " + repr(exc)[:200]] * len(cases))
            continue
        row = []
        for i, f, answer in cases:
            try:
                row.append(ns["verify"](states[i], states[f], answer))
            except Exception as exc:
                row.append("error: " + repr(exc)[:200])
        out.append(row)
    return out
"""


def reward_of(value: Any) -> float:
    """A script's return value as a reward (the rule of ``ScriptVerifier``)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float) and math.isfinite(value) and 0 <= value <= 1:
        return float(value)
    return 0.0


def verdict(c: Candidate) -> str | None:
    """``None`` to keep the candidate, else why it is rejected."""
    r = c.rewards
    if r.get("gold", 0.0) < 1.0 - 1e-9:
        return "gold answer scores below 1.0"
    if r.get("cross_check", 1.0) < 1.0 - 1e-9:
        return "program and its independent check disagree"
    if r.get("gold_probe", 0.0) < 1.0 - 1e-9:
        return "volatile: replay with another id/clock scores below 1.0"
    if r.get("empty", 1.0) >= TRIVIAL:
        return "trivial: empty answer scores >= 0.5"
    if r.get("first_call", 1.0) >= TRIVIAL or _revealed(c):
        return "trivial: first call alone scores >= 0.5"
    return None


def _revealed(c: Candidate) -> bool:
    """A read-only one-call task whose one call returns every value asked (a lookup the
    request spells out): the answer check's exclusivity no longer lets the raw output pass,
    so ask whether it *contains* the answer."""
    calls = (c.task.gold or {}).get("calls") or []
    first = next((k for k in c.cases if k.name == "first_call"), None)
    if len(calls) != 1 or first is None or first.final.changes():
        return False
    verifier = c.task.verifier
    asked = [
        e
        for crit in verifier.get("criteria", [])
        if (check := crit.get("check")) and check.get("type") in ANSWER_CHECKS
        for e in answer_expected(check)
    ]
    return bool(asked) and check_answer(first.answer, asked, exclusive=False).met


def judge(cands: list[Candidate], base: Database) -> None:
    """Fill ``rewards`` of every candidate (rubrics in-process, scripts batched), and the
    ``cross_check`` of program candidates: their independent script on the gold run."""
    scripts = [c for c in cands if c.task.verifier.get("type") == "script"]
    for c in cands:
        if c.task.verifier.get("type") == "rubric":
            _judge_rubric(c, base)
    for i in range(0, len(scripts), BATCH):
        _judge_scripts(scripts[i : i + BATCH], base)
    checked = [c for c in cands if c.cross_check]
    for i in range(0, len(checked), BATCH):
        _cross_check(checked[i : i + BATCH], base)


def _judge_rubric(c: Candidate, base: Database) -> None:
    try:
        verifier = build_verifier(c.task.verifier)
    except VerifierError:
        c.rewards = {}
        return
    for case in c.cases:
        ep = Episode(base, case.final, case.answer, [], c.task.instruction)
        c.rewards[case.name] = verifier.verify(ep).reward


def _judge_scripts(cands: list[Candidate], base: Database) -> None:
    rows = _run_scripts([(c.task.verifier["source"], c.cases) for c in cands], base)
    if rows is None:
        for c in cands:  # the batch failed: judge one by one, as an episode would
            _judge_one(c, base)
        return
    for c, row in zip(cands, rows, strict=True):
        c.rewards = {k.name: reward_of(v) for k, v in zip(c.cases, row, strict=True)}


def _cross_check(cands: list[Candidate], base: Database) -> None:
    """A program's independent recomputation of its ground truth, on its gold run: a program
    and script that disagree mean a template bug on this environment."""
    golds = [[k for k in c.cases if k.name == "gold"] for c in cands]
    rows = _run_scripts([(c.cross_check, g) for c, g in zip(cands, golds, strict=True)], base)
    for c, row in zip(cands, rows or [[0.0]] * len(cands), strict=True):
        c.rewards["cross_check"] = reward_of(row[0]) if row else 0.0


def _run_scripts(items: list[tuple[str, list[Case]]], base: Database) -> list[list] | None:
    """Every script on its cases in one sandbox process; ``None`` when the batch failed."""
    states: list[orjson.Fragment] = [orjson.Fragment(base.snapshot_json())]
    index: dict[int, int] = {}

    def state(db: Database) -> int:
        if not db.dirty:
            return 0
        if id(db) not in index:
            index[id(db)] = len(states)
            states.append(orjson.Fragment(db.snapshot_json()))
        return index[id(db)]

    jobs = [[source, [[0, state(k.final), k.answer] for k in cases]] for source, cases in items]
    limits = SandboxLimits(wall_s=60.0, cpu_s=60.0, memory_mb=2048, output_bytes=16 * 1024 * 1024)
    result = run_function(_CHECK_ALL, "check_all", [states, jobs], limits=limits)
    if not result.ok or not isinstance(result.value, list) or len(result.value) != len(items):
        return None
    return result.value


def _judge_one(c: Candidate, base: Database) -> None:
    verifier = build_verifier(c.task.verifier)
    for case in c.cases:
        ep = Episode(base, case.final, case.answer, [], c.task.instruction)
        c.rewards[case.name] = verifier.verify(ep).reward

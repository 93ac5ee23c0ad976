"""A synthesized task before acceptance, with the evidence its acceptance checks need.

Both routes (graph walks and programs) produce a :class:`Candidate`: the
:class:`~agentworld_gym.spec.TaskSpec`, plus the outcomes of running its gold chain that
:mod:`.gate.accept` judges — the final states of two independent replays (different task id and
clock: equal rewards mean nothing volatile is checked), the state after only the first call
and what that call returned.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.env import dumps
from agentworld_gym.errors import SpecError
from agentworld_gym.replay import resolve_refs
from agentworld_gym.spec import TaskSpec
from agentworld_gym.synthesis.tasks.model import EnvModel
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.verifiers.checks import leaves

SYNTHESIZER = "synth-tasks"


@dataclass
class Case:
    """One verifier run the acceptance rules need: a final state and an answer."""

    name: str
    """``gold`` | ``gold_probe`` | ``empty`` | ``first_call``."""
    final: Database
    answer: str


@dataclass
class Candidate:
    task: TaskSpec
    family: str
    """Tasks of one family (same template and anchor) share a split: no near-twin leaks."""
    cases: list[Case] = field(default_factory=list)
    rewards: dict[str, float] = field(default_factory=dict)
    cross_check: str | None = None
    """A program's verification script: its independent recomputation of the ground truth
    from the initial state, which must agree with the program on the gold run (acceptance
    only; the task's verifier checks the exact answer and end state)."""

    @property
    def signature(self) -> tuple[str, str]:
        """What two tasks must not share across splits: the request and the gold chain."""
        import orjson

        calls = orjson.dumps(
            (self.task.gold or {}).get("calls", []), option=orjson.OPT_SORT_KEYS
        ).decode()
        return " ".join(self.task.instruction.split()).casefold(), calls


class TaskBuilder:
    """What both builders (graph walks, programs) hold: the environment's model and runner,
    the root seed, an optional LLM, and the tool names a request must not spell out."""

    def __init__(self, model: EnvModel, runner: Runner, seed: int, llm: Any = None) -> None:
        self.model = model
        self.runner = runner
        self.seed = seed
        self.llm = llm
        self.tool_names = [t.name for t in model.spec.tools]

    def task(
        self,
        task_id: str,
        instruction: str,
        answer: str,
        verifier: dict[str, Any],
        calls: list[dict[str, Any]],
        diff: dict[str, Any],
        method: str,
        kind: str = "graph",
    ) -> TaskSpec:
        """The task spec of a candidate (``kind``: ``graph`` or ``program``)."""
        return TaskSpec(
            id=task_id,
            instruction=instruction,
            kind=kind,
            reference_answer=answer,
            verifier=verifier,
            gold={"type": "tool_chain", "calls": calls},
            difficulty=diff,
            provenance=provenance(method, self.seed, self.llm is not None),
        )


def acceptance_cases(
    runner: Runner,
    calls: list[dict[str, Any]],
    task_id: str,
    gold: Database,
    probe: Database,
    answer: str,
) -> list[Case]:
    """The four runs acceptance judges: the gold answer on the gold state and on the probe
    replay's state, the empty answer on the initial state, and the first call's output as the
    answer after only the first call."""
    first = runner.run(calls, task_id, stop=1)
    return [
        Case("gold", gold, answer),
        Case("gold_probe", probe, answer),
        Case("empty", runner.base.fork(), ""),
        Case("first_call", first.db, dumps(first.outputs[0]) if first.outputs else ""),
    ]


def difficulty(
    calls: list[dict[str, Any]],
    writes: int,
    depth: int,
    control_flow: list[str],
    answer_type: str,
    **extra: Any,
) -> dict[str, Any]:
    """The difficulty metadata every synthesized task carries (the stats read it).

    Graph tasks add ``edges``: how many steps were reached over a strong, weak and
    independent edge.
    """
    return {
        "calls": len(calls),
        "distinct_tools": len({c["name"] for c in calls}),
        "depth": depth,
        "control_flow": control_flow,
        "writes": writes,
        "answer_type": answer_type,
        "long_horizon": False,
        **extra,
    }


LONG_CALLS = 8
"""Fewest calls a long-horizon task needs (its gold calls, less a walk's that the request
makes unneeded: :func:`needed`)."""
LONG_TOOLS = 3
"""Fewest distinct tools of a long-horizon task."""


def turn_budget(calls: int, default: int) -> int:
    """The turns a task allows: the environment's default, and at least 1.5x the gold calls
    plus the final answer, so a long task leaves room to recover from errors."""
    return max(default, math.ceil(1.5 * (calls + 1)))


def chained(
    calls: list[dict[str, Any]],
    outputs: list[Any],
    keys: set[tuple[str, str]],
    goal: str = "",
) -> bool:
    """Whether every call after the first is tied into the chain's data flow: it takes a
    value an earlier call returned or passed, or one the request (``goal``) states, or a
    ``"$<step>..."`` reference; or else what it returns feeds a later call (a lookup such
    as listing the users whose ids later calls use). Values are strings of 3+ characters,
    and numbers given as record keys (``keys`` holds the (tool, argument) pairs that
    address a record). A call tied to nothing is an unrelated step."""
    taken = [_arguments(call, keys) for call in calls]
    returned = [
        {str(v) for v in leaves(out) if not isinstance(v, bool)} if i < len(outputs) else set()
        for i, out in enumerate(outputs)
    ]
    seen: set[str] = set()
    for i, (mine, refs, _) in enumerate(taken):
        consumes = refs or bool(mine & seen) or any(v in goal for v in mine if goal)
        later = set().union(*(t[0] for t in taken[i + 1 :])) if i + 1 < len(taken) else set()
        feeds = any(f"${i}." in r for t in taken[i + 1 :] for r in t[2]) or bool(
            later & (returned[i] if i < len(returned) else set()) - mine
        )
        if i and not (consumes or feeds):
            return False
        seen |= mine
        if i < len(returned):
            seen |= returned[i]
    return True


def _arguments(
    call: dict[str, Any], keys: set[tuple[str, str]]
) -> tuple[set[str], bool, list[str]]:
    """A call's literal values (see :func:`chained`), whether it has references, and them."""
    mine: set[str] = set()
    refs: list[str] = []
    for name, value in (call.get("arguments") or {}).items():
        for leaf in leaves(value):
            if isinstance(leaf, str) and leaf.startswith("$"):
                refs.append(leaf)
            elif isinstance(leaf, str) and len(leaf) >= 3:
                mine.add(leaf)
            elif (
                isinstance(leaf, int)
                and not isinstance(leaf, bool)
                and (call.get("name", ""), name) in keys
            ):
                mine.add(str(leaf))
    return mine, bool(refs), refs


def needed(
    calls: list[dict[str, Any]],
    outputs: list[Any],
    keys: set[tuple[str, str]],
    goal: str = "",
    writes: frozenset[str] | set[str] = frozenset(),
    answers: frozenset[int] | set[int] = frozenset(),
) -> list[int]:
    """The calls of a walk a solver cannot skip, given the request (``goal``): every write
    (tool names in ``writes``), every read nothing later takes a value from (an answer's
    source), and every read whose result a needed later call takes as a value the request
    does not state. A request that names a record found deep in the chain ("the podcast of
    the recommendation "9d26..."") lets the agent start there: the calls that led to it are
    not needed, however long the chain that happened to reach it. The calls in ``answers``
    (those the asked values come from) are needed. (Not for programs: a read there may
    decide a branch without passing a value on.)"""
    feeds: list[list[tuple[int, str]]] = [[] for _ in calls]
    returned = [{str(v) for v in leaves(out) if not isinstance(v, bool)} for out in outputs]
    same = repeats(calls, outputs, writes)  # the first of repeated reads serves their consumers
    for j, call in enumerate(calls):
        mine, _, refs = _arguments(call, keys)
        for ref in refs:
            step = ref[1:].split(".", 1)[0]
            if step.isdigit() and int(step) < j:
                value = resolve_refs(ref, outputs) if int(step) < len(outputs) else None
                feeds[int(step)].append((j, _said(value)))
        for value in mine:
            source = next((i for i in range(j - 1, -1, -1) if value in returned[i]), None)
            if source is not None:
                feeds[source].append((j, value))
    need = [False] * len(calls)
    carried = [False] * len(calls)
    for i in range(len(calls) - 1, -1, -1):
        wanted = (
            calls[i].get("name") in writes
            or i in answers
            or not feeds[i]
            or any(need[j] and not given_in(v, goal) for j, v in feeds[i])
        )
        if same[i] != i and i not in answers:  # a repeat: the first serves whoever needs it
            carried[same[i]] |= wanted
        else:
            need[i] = wanted or carried[i]
    return [i for i, n in enumerate(need) if n]


def repeats(
    calls: list[dict[str, Any]], outputs: list[Any], writes: frozenset[str] | set[str]
) -> list[int]:
    """For each call, the earlier read it repeats (same tool, same resolved arguments, no
    write between: it returns what that one did), else its own index."""
    first: dict[str, int] = {}
    same = list(range(len(calls)))
    for j, call in enumerate(calls):
        if call.get("name") in writes:
            first.clear()
            continue
        try:
            args = resolve_refs(call.get("arguments") or {}, outputs[:j])
        except SpecError:
            continue
        same[j] = first.setdefault(dumps([call.get("name"), args]), j)
    return same


def _said(value: Any) -> str:
    return value if isinstance(value, str) else dumps(value)


def given_in(value: str, goal: str) -> bool:
    """Whether the request gives ``value``: quoted, a number as a whole word, or a string of
    3+ characters anywhere."""
    if not goal or not value:
        return False
    if value.lstrip("-").isdigit():
        return re.search(rf"(?<![\w.]){re.escape(value)}(?![\w.])", goal) is not None
    return f'"{value}"' in goal or (len(value) >= 3 and value in goal)


def long_horizon(
    calls: list[dict[str, Any]],
    outputs: list[Any],
    keys: set[tuple[str, str]],
    goal: str = "",
    writes: frozenset[str] | set[str] | None = None,
) -> bool:
    """The one long-horizon rule: at least :data:`LONG_CALLS` calls a solver needs over at
    least :data:`LONG_TOOLS` distinct tools, every call after the first depending on an
    earlier one (:func:`chained`). One tool repeated over many records is a batch, not a long
    task. Given the ``writes`` (tool names) of a walk, the calls counted are those
    :func:`needed` keeps (a walk may have reached a record the request names); a program's
    reads decide its branches, so every call of one counts (``writes`` None)."""
    if len(calls) < LONG_CALLS or not chained(calls, outputs, keys, goal):
        return False
    kept = calls
    if writes is not None:
        kept = [calls[i] for i in needed(calls, outputs, keys, goal, writes)]
    return len(kept) >= LONG_CALLS and len({c.get("name") for c in kept}) >= LONG_TOOLS


def horizon(
    calls: list[dict[str, Any]],
    runner: Runner,
    task_id: str,
    goal: str,
    keys: set[tuple[str, str]],
    default_turns: int,
    writes: frozenset[str] | set[str] | None = None,
) -> dict[str, Any]:
    """A task's ``max_turns`` (:func:`turn_budget`) and ``long_horizon`` flag (the one rule,
    :func:`long_horizon`, on a replay of its gold calls), for its ``difficulty``."""
    long = False
    if len(calls) >= LONG_CALLS:
        long = long_horizon(calls, runner.run(calls, task_id).outputs, keys, goal, writes)
    return {"max_turns": turn_budget(len(calls), default_turns), "long_horizon": long}


def provenance(method: str, seed: int, llm: bool) -> dict[str, Any]:
    """Where a task came from: ``method`` is ``graph-walk`` or the program template."""
    out: dict[str, Any] = {"synthesizer": SYNTHESIZER, "method": method, "seed": seed}
    if llm:
        out["route"] = "llm"
    return out


def ref_depth(calls: list[dict[str, Any]]) -> int:
    """Longest chain of ``$<step>`` references through the gold calls (1 for one call)."""
    depth: list[int] = []
    for call in calls:
        deps = [
            int(v[1:].split(".", 1)[0])
            for v in leaves(call.get("arguments", {}))
            if isinstance(v, str) and v.startswith("$") and v[1:].split(".", 1)[0].isdigit()
        ]
        depth.append(1 + max((depth[d] for d in deps if d < len(depth)), default=0))
    return max(depth, default=0)

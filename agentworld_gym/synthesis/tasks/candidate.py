"""A synthesized task before acceptance, with the evidence its acceptance checks need.

Both routes (graph walks and programs) produce a :class:`Candidate`: the
:class:`~agentworld_gym.spec.TaskSpec`, plus the outcomes of running its gold chain that
:mod:`.accept` judges — the final states of two independent replays (different task id and
clock: equal rewards mean nothing volatile is checked), the state after only the first call
and what that call returned.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.env import dumps
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

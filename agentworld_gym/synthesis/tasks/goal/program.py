"""Program tasks: instantiate a template, execute the program, package it as a candidate.

The program (:mod:`agentworld_gym.synthesis.tasks.sample.templates`, or one an LLM writes:
:mod:`agentworld_gym.synthesis.tasks.sample.llm`) is run through the agent's runtime; what it
returns is the answer and the calls it made are the gold chain. Its request comes with the template
(:mod:`agentworld_gym.synthesis.tasks.request.program`); its verifier is the answer rubric
(:func:`agentworld_gym.synthesis.tasks.verifier.rubric.answer_rubric`), sealed later with the exact
end state, plus the cross-check script (:mod:`agentworld_gym.synthesis.tasks.verifier.scripts`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from agentworld_gym.synthesis.tasks.candidate import (
    Candidate,
    TaskBuilder,
    acceptance_cases,
    difficulty,
)
from agentworld_gym.synthesis.tasks.model import EnvModel
from agentworld_gym.synthesis.tasks.request import render
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.llm.writer import ProgramWriter
from agentworld_gym.synthesis.tasks.sample.programs import (
    Caller,
    Program,
    ProgramError,
    capabilities,
)
from agentworld_gym.synthesis.tasks.sample.templates.aggregate import (
    aggregate,
    children_agg,
    extreme,
    group_max,
)
from agentworld_gym.synthesis.tasks.sample.templates.given import (
    batch_read,
    batch_update,
    batch_write,
)
from agentworld_gym.synthesis.tasks.sample.templates.listing import (
    branch,
    bulk,
    create_each,
    sweep,
    update_create_each,
)
from agentworld_gym.synthesis.tasks.sample.templates.lookup_create import (
    create_batch,
    create_chain,
    lookup_branch,
)
from agentworld_gym.synthesis.tasks.sample.templates.reconcile import reconcile
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs
from agentworld_gym.synthesis.tasks.verifier.rubric import answer_rubric
from agentworld_gym.synthesis.tasks.verifier.scripts import script

TEMPLATES: dict[str, Callable[..., Any]] = {
    "bulk_update": lambda m, c, r, k: bulk(m, c, r, k, "update"),
    "bulk_delete": lambda m, c, r, k: bulk(m, c, r, k, "delete"),
    "sweep": sweep,
    "reconcile": reconcile,
    "branch_update": branch,
    "create_each": create_each,
    "update_create_each": update_create_each,
    "extreme": extreme,
    "aggregate": aggregate,
    "group_max": group_max,
    "children_agg": children_agg,
    "batch_read": batch_read,
    "batch_update": batch_update,
    "batch_write": batch_write,
    "lookup_branch": lookup_branch,
    "create_batch": create_batch,
    "create_chain": create_chain,
}
WEIGHTS = {
    "bulk_update": 3.0,
    "bulk_delete": 1.0,
    "sweep": 1.5,
    "reconcile": 1.5,
    "branch_update": 2.0,
    "create_each": 1.5,
    "update_create_each": 1.5,
    "extreme": 1.5,
    "aggregate": 2.0,
    "group_max": 2.0,
    "children_agg": 1.5,
    "batch_read": 1.5,
    "batch_update": 1.5,
    "batch_write": 0.5,
    "lookup_branch": 1.5,
    "create_batch": 1.0,
    "create_chain": 1.0,
}
MAX_MISSES = 4
PLAIN = ("batch_write", "create_batch")
"""Templates that may yield a plain loop of writes (APIs that can only write): such a draw
is traded for one with more control flow when another template fits."""
LLM_SHARE = 0.5
"""With an LLM configured, the share of program draws it writes (the rest: templates)."""
PATTERNS = {
    "bulk_update": "update",
    "bulk_delete": "update",
    "branch_update": "update",
    "sweep": "update",
    "reconcile": "update",
    "batch_update": "update",
    "batch_write": "update",
    "extreme": "update",
    "lookup_branch": "update",
    "create_each": "create",
    "update_create_each": "update",
    "create_batch": "create",
    "create_chain": "create",
}
"""The evolution loop's task patterns (``lookup``, ``count``, ``update``, ...) per template."""
LONG = (
    "bulk_update",
    "bulk_delete",
    "sweep",
    "reconcile",
    "branch_update",
    "create_each",
    "update_create_each",
    "group_max",
    "children_agg",
    "batch_read",
    "batch_update",
    "batch_write",
    "create_batch",
    "create_chain",
)
"""Templates whose call count grows with the data (loops over records or parents)."""


class ProgramTaskBuilder(TaskBuilder):
    """Instantiates program templates against one environment."""

    def __init__(self, model: EnvModel, runner: Runner, seed: int, llm: Any = None) -> None:
        super().__init__(model, runner, seed, llm)
        self.caps = capabilities(model, runner)
        self.misses: Counter[tuple[str, bool, bool]] = Counter()
        """Draws without an instance per template, horizon and strictness; past
        ``MAX_MISSES`` (plus two per draw that had one) it is not tried again for those (a
        template that has no long instance may still have short ones, and one the readability
        rules refuse may still serve an environment under its floor)."""
        self.hits: Counter[tuple[str, bool, bool]] = Counter()
        self.writer = ProgramWriter(model, runner, llm, seed) if llm is not None else None
        """The LLM route: programs written in Python (see
        :mod:`agentworld_gym.synthesis.tasks.sample.llm.writer`)."""

    def build(
        self, rng: random.Random, task_id: str, knobs: Knobs, patterns: tuple[str, ...] = ()
    ) -> Candidate | str:
        if self.writer is not None and rng.random() < LLM_SHARE:
            made = self.writer.candidate(task_id, knobs)
            if not isinstance(made, str):
                return made
        names = [
            n
            for n in TEMPLATES
            if self.misses[n, knobs.long, knobs.strict]
            < MAX_MISSES + 2 * self.hits[n, knobs.long, knobs.strict]
            and (not knobs.long or n in LONG)
            and (not patterns or n in patterns)
        ]
        if not names:
            return "no program template fits"
        name, program = self._instance(names, rng, knobs)
        richer = [n for n in names if n not in PLAIN] if knobs.rich else []
        if program is not None and set(program.control_flow) <= {"loop", "write"} and richer:
            # a plain loop of writes only where nothing with more control flow fits
            other, alt = self._instance(richer, rng, knobs)
            if alt is not None:
                name, program = other, alt
        if program is None:
            return f"{name}: no instance"
        caller = Caller(self.runner, task_id, knobs.max_calls)
        try:
            answer = program.run(caller)
        except ProgramError:
            return f"{name}: program call failed"
        writes = self._writes(caller.calls)
        if program.writes_expected and not writes:
            return f"{name}: nothing to write"
        request = program.request
        if self.llm is not None:
            given = [s.split('"')[0] for s in request.split('"')[1::2]]
            request = render.paraphrase(self.llm, request, given, [], self.tool_names)
        diff = difficulty(
            caller.calls,
            writes,
            program.depth,
            program.control_flow,
            program.answer_type,
            pattern=PATTERNS.get(program.template, "aggregate"),
        )
        verifier = answer_rubric(answer, writes > 0)
        if verifier is None:
            return f"{name}: the program reports nothing to check"
        made = self._package(
            caller, request, answer, verifier, diff, program.template, program.family, knobs
        )
        if isinstance(made, Candidate):
            made.cross_check = script(program.kind, program.params)
        return made

    def _instance(
        self, names: list[str], rng: random.Random, knobs: Knobs
    ) -> tuple[str, Program | None]:
        """A template drawn by weight and up to three tries at an instance of it."""
        name = rng.choices(names, [WEIGHTS[n] for n in names])[0]
        for _ in range(3):
            program = TEMPLATES[name](self.model, self.caps, rng, knobs)
            if program is not None:
                self.hits[name, knobs.long, knobs.strict] += 1
                return name, program
        self.misses[name, knobs.long, knobs.strict] += 1
        return name, None

    def _writes(self, calls: list[dict[str, Any]]) -> int:
        return sum(1 for c in calls if self.model.tools[c["name"]].writes)

    def _package(
        self,
        caller: Caller,
        request: str,
        answer: str,
        verifier: dict[str, Any],
        diff: dict[str, Any],
        method: str,
        family: str,
        knobs: Knobs,
    ) -> Candidate | str:
        """The candidate with the runs acceptance needs (probe replay, first call alone)."""
        calls = caller.calls
        if not calls:
            return f"{method}: no calls"
        if len(calls) < knobs.min_calls:
            return f"{method}: too short for long horizon"
        if render.leaks(request, [], self.tool_names):
            return "request names a tool"
        task_id = caller.ctx.task_id
        probe = self.runner.run(calls, task_id + "-probe", probe=True)
        if not probe.ok:
            return "probe replay failed"
        task = self.task(task_id, request, str(answer), verifier, calls, diff, method, "program")
        cases = acceptance_cases(self.runner, calls, task_id, caller.ctx.db, probe.db, answer)
        return Candidate(task, family, cases)

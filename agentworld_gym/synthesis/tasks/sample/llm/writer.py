"""New task programs written by an LLM (when one is configured): real Python, run in the sandbox.

The model sees the environment's tools (name, description, JSON-Schema parameters), a compact
view of its state model (collections, keys, field values, sample records) and guidelines drawn
from the seed (the collection to work on, the control flow wanted, whether and how much to
write); it answers with a request and a function::

    REQUEST: For every active project, hand each open task that is not assigned to the
    project's owner over to the owner. How many did you hand over?
    ```python
    def program(call):
        moved = 0
        for proj in call("listProjects"):
            if proj["status"] != "active":
                continue
            for t in call("listProjectTasks", projectId=proj["id"], status="open"):
                if t["assignee"] != proj["owner"]:
                    call("updateTask", taskId=t["id"], assignee=proj["owner"])
                    moved += 1
        return {"handed_over": moved}
    ```

Then, each step able to reject the draft with a reason for the synthesis report:

1. **parse** the reply (:func:`parse_reply`);
2. **check** the source's syntax tree (:mod:`.policy`: ``program(call)`` defined,
   loops or branches present, nothing that reaches outside the data);
3. **execute** it in the sandbox against a fresh fork, every tool call proxied to the agent's
   runtime and recorded (:mod:`.execute`), then again in a fresh process and under
   another task id and clock: it must finish, call tools, return JSON, and be deterministic
   and stable;
4. **derive** the verification script from the execution — the answer it returned and the state it
   left (:mod:`agentworld_gym.synthesis.tasks.verifier.llm_script`) — rather than take one from the
   model;
5. package a :class:`~agentworld_gym.synthesis.tasks.candidate.Candidate` whose gold chain is the
   recorded trace, for the same acceptance rules as every task
   (:mod:`agentworld_gym.synthesis.tasks.gate.accept`: gold 1.0 twice, an empty answer and the first
   call's output below 0.5).

Everything random is drawn from ``rng_for(seed, task id, ...)`` and the model is asked with a
seed derived the same way, so a seeded backend gives the same tasks.
"""

from __future__ import annotations

import ast
import logging
import re
import textwrap
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson

from agentworld_gym.env import dumps
from agentworld_gym.prompt_templates import prompt_environment
from agentworld_gym.spec import TaskSpec
from agentworld_gym.synthesis.tasks.candidate import Candidate, Case, difficulty, provenance
from agentworld_gym.synthesis.tasks.model import CollectionModel, EnvModel, ToolModel
from agentworld_gym.synthesis.tasks.request import render as render_text
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.llm.execute import (
    ExecLimits,
    Execution,
    ProgramExecutor,
    Rejected,
)
from agentworld_gym.synthesis.tasks.sample.llm.policy import ALLOWED_MODULES, check
from agentworld_gym.synthesis.tasks.sample.templates.shapes import Knobs
from agentworld_gym.synthesis.tasks.values import rng_for
from agentworld_gym.synthesis.tasks.verifier.llm_script import Derived, derive
from agentworld_gym.verifiers.checks import leaves

__all__ = [
    "Draft",
    "Guide",
    "ProgramWriter",
    "parse_reply",
    "program_candidate",
    "prompt",
]

logger = logging.getLogger(__name__)

METHOD = "llm-program"
MAX_TOOLS = 30
MAX_COLLECTIONS = 8
SAMPLE_CHARS = 400
WRITE_SHARE = 0.6
CONSTRUCTS = (
    "a loop over every record a list tool returns",
    "a filter on two conditions at once",
    "a branch that treats records differently depending on a field",
    "a join: look up related records in a second collection",
    "an aggregate over the records (count, sum, average or maximum)",
)


@dataclass
class Guide:
    """What one draw asks of the model (drawn from the seed)."""

    focus: str
    constructs: list[str]
    writes: tuple[int, int] | None
    max_calls: int
    min_calls: int


@dataclass
class Draft:
    """A program as the model wrote it."""

    request: str
    source: str


def _writes(coll: CollectionModel) -> bool:
    return any(coll.tools.get(op) for op in ("update", "create", "delete"))


def guide(model: EnvModel, knobs: Knobs, seed: int, task_id: str) -> Guide | None:
    """The guidelines of one draw, or ``None`` when no collection can be listed."""
    rng = rng_for(seed, model.spec.id, task_id, METHOD)
    listable = [c for c in model.collections.values() if c.tools.get("list") and c.records]
    if not listable:
        return None
    focus = rng.choice(sorted(listable, key=lambda c: c.name))
    writes = None
    if _writes(focus) and rng.random() < WRITE_SHARE:
        hi = max(1, min(knobs.hi, knobs.max_calls - 2))
        writes = (min(knobs.lo, hi), hi)
    constructs = [CONSTRUCTS[0], *rng.sample(CONSTRUCTS[1:], 2)]
    return Guide(focus.name, constructs, writes, knobs.max_calls, knobs.min_calls)


def _related(model: EnvModel, focus: str) -> list[str]:
    """Collection names, the focus and its neighbours (by reference) first."""
    near = {focus} | set(model.collections[focus].references.values())
    near |= {c.name for c in model.collections.values() if focus in c.references.values()}
    return sorted(model.collections, key=lambda n: (n != focus, n not in near, n))


def _collection_view(coll: CollectionModel) -> dict[str, Any]:
    fields = [f"{f}: one of {values[:6]}" for f, values in coll.profile.categorical.items()]
    fields += [f"{f}: a number" for f in coll.profile.numeric[:6]]
    samples = [orjson.dumps(r).decode()[:SAMPLE_CHARS] for r in coll.records[:2]]
    return {
        "name": coll.name,
        "key": coll.pk,
        "count": len(coll.records),
        "references": ", ".join(f"{f} -> {c}" for f, c in coll.references.items()),
        "fields": fields[:12],
        "samples": "\n    ".join(samples),
    }


def returns(tool: ToolModel | None) -> str:
    """What a tool answers with, as the state model knows it (``""`` when unknown)."""
    if tool is None or not tool.collection:
        return ""
    if tool.op in ("list", "search") and tool.items is not None:
        if not tool.items:
            return f"a JSON list of {tool.collection} records"
        return f'an object whose "{tool.items}" is a list of {tool.collection} records'
    if tool.record is not None:
        if not tool.record:
            return f"one {tool.collection} record"
        return f'an object whose "{tool.record}" is one {tool.collection} record'
    return ""


def examples(model: EnvModel, runner: Runner) -> dict[str, str]:
    """What each list tool that needs no argument answers on the initial state (truncated)."""
    out: dict[str, str] = {}
    for t in model.tools.values():
        if t.op in ("list", "search") and not t.writes and not t.required():
            res = runner.call(runner.context("llm-program-example"), t.name, {})
            if res.ok:
                out[t.name] = orjson.dumps(res.output).decode()[:SAMPLE_CHARS]
    return out


def prompt(model: EnvModel, g: Guide, outputs: dict[str, str] | None = None) -> str:
    """The prompt of one draw (``prompts/llm_programs/program.j2``); ``outputs``: sample
    outputs of some tools (see :func:`examples`)."""
    order = _related(model, g.focus)
    rank = {name: i for i, name in enumerate(order)}
    tools = sorted(
        model.spec.tools,
        key=lambda t: rank.get(getattr(model.tools.get(t.name), "collection", None), len(rank)),
    )
    views = [
        {
            "name": t.name,
            "kind": t.kind,
            "description": " ".join((t.description or "").split())[:300],
            "parameters": orjson.dumps(t.parameters).decode(),
            "returns": returns(model.tools.get(t.name)),
            "example": (outputs or {}).get(t.name, ""),
        }
        for t in tools[:MAX_TOOLS]
    ]
    return (
        prompt_environment("llm_programs")
        .get_template("program.j2")
        .render(
            env_name=model.spec.name,
            env_description=" ".join((model.spec.description or "").split())[:300],
            tools=views,
            collections=[_collection_view(model.collections[n]) for n in order[:MAX_COLLECTIONS]],
            focus=g.focus,
            constructs=g.constructs,
            writes=g.writes,
            max_calls=g.max_calls,
            min_calls=g.min_calls,
            allowed=ALLOWED_MODULES,
        )
    )


_FENCE = re.compile(r"```[ \t]*(?:python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_REQUEST = re.compile(r"^[ \t>*#_-]*request[*_ \t]*:[*_ \t]*(.+?)[ \t]*$", re.I | re.M)


def _request_constant(source: str) -> str | None:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.upper() == "REQUEST" for t in node.targets)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    return None


def parse_reply(text: str) -> Draft | str:
    """The request and program in the model's reply, or why there is none."""
    blocks = [b for b in _FENCE.findall(text) if "def program" in b]
    if blocks:
        source = blocks[0]
    elif "def program" in text:
        source = text[text.index("def program") :].split("```", 1)[0]
    else:
        return "no def program(call) in the reply"
    source = textwrap.dedent(source).strip("\n") + "\n"
    found = _REQUEST.search(text.split("```", 1)[0]) or _REQUEST.search(text)
    request = found.group(1) if found else _request_constant(source)
    request = " ".join((request or "").strip().strip("\"'").split())
    if len(request) < 12:
        return "no request in the reply"
    if len(request) > 800:
        return "request longer than 800 characters"
    return Draft(request, source)


def ask(backend: Any, text: str, seed: int, max_tokens: int = 1500) -> str:
    """One reply of the model (its text)."""
    reply = backend.chat(
        [{"role": "user", "content": text}], temperature=0.8, max_tokens=max_tokens, seed=seed
    )
    return str(reply.get("content") or "")


def _depth(calls: list[dict[str, Any]], outputs: list[Any]) -> int:
    """Longest chain of calls whose arguments carry a value an earlier call returned."""
    seen: list[set[str]] = []
    depth: list[int] = []
    for i, call in enumerate(calls):
        args = {str(v) for v in _scalar_leaves(call["arguments"]) if len(str(v)) >= 2}
        deps = [j for j in range(i) if args & seen[j]]
        depth.append(1 + max((depth[j] for j in deps), default=0))
        seen.append({str(v) for v in _scalar_leaves(outputs[i])})
    return max(depth, default=0)


def _metadata(
    model: EnvModel, ex: Execution, flow: list[str], answer_type: str
) -> tuple[dict[str, Any], str]:
    """The task's difficulty metadata and family."""
    tools = [model.tools.get(c["name"]) for c in ex.calls]
    writes = [t for t in tools if t is not None and t.writes]
    reads = {t.collection for t in tools if t is not None and not t.writes and t.collection}
    flow = list(flow)
    if len(reads) > 1:
        flow.append("join")
    if writes and {"branch", "filter"} & set(flow):
        flow.append("conditional write")
    ops = {t.op for t in writes}
    pattern = "create" if "create" in ops else "update" if writes else "aggregate"
    diff = difficulty(
        ex.calls, len(writes), _depth(ex.calls, ex.outputs), flow, answer_type, pattern=pattern
    )
    family = "p:llm:" + "+".join(sorted({c["name"] for c in ex.calls}))
    return diff, family


class ProgramWriter:
    """The LLM route of program tasks for one environment (see the module docstring).

    Args:
        model: The environment's state model.
        runner: Runs its tools the way an episode does.
        backend: The LLM (:class:`~agentworld_gym.llm.LLMBackend`).
        seed: The synthesis seed.
        limits: Limits of each program's execution in the sandbox.
        max_tokens: Longest reply asked of the model.
    """

    def __init__(
        self,
        model: EnvModel,
        runner: Runner,
        backend: Any,
        seed: int,
        limits: ExecLimits | None = None,
        max_tokens: int = 1500,
    ) -> None:
        self.model = model
        self.runner = runner
        self.backend = backend
        self.seed = seed
        self.executor = ProgramExecutor(runner, limits)
        self.rejected: Counter[str] = Counter()
        """Why drafts were rejected (reason -> count), as the synthesis report counts them."""
        self._examples: dict[str, str] | None = None
        self.max_tokens = max_tokens

    def candidate(self, task_id: str, knobs: Knobs) -> Candidate | str:
        """A task whose program the LLM wrote, or why there is none (``llm-program: ...``)."""
        made = self._candidate(task_id, knobs)
        if isinstance(made, Rejected):
            logger.debug("%s rejected: %s (%s)", task_id, made.reason, made.detail)
            why = f"{METHOD}: {made.reason}"
            self.rejected[why] += 1
            return why
        return made

    def _ask(self, task_id: str, g: Guide) -> str:
        if self._examples is None:
            self._examples = examples(self.model, self.runner)
        seed = rng_for(self.seed, self.model.spec.id, task_id, "llm-sample").randrange(2**31)
        text = prompt(self.model, g, self._examples)
        return ask(self.backend, text, seed, self.max_tokens)

    def _candidate(self, task_id: str, knobs: Knobs) -> Candidate | Rejected:
        model, runner = self.model, self.runner
        g = guide(model, knobs, self.seed, task_id)
        if g is None:
            return Rejected("no listable collection")
        try:
            text = self._ask(task_id, g)
        except Exception as exc:  # an unreachable endpoint: the caller falls back to templates
            return Rejected(f"backend failed ({type(exc).__name__})", str(exc)[:200])
        draft = parse_reply(text)
        if isinstance(draft, str):
            return Rejected(draft, text[:200])
        checked = check(draft.source)
        if not checked.ok:
            return Rejected(checked.reason, checked.detail)
        leak = render_text.leaks(draft.request, [], [t.name for t in model.spec.tools])
        if leak:
            return Rejected("request names a tool", leak)
        ex = self.executor.run(draft.source, task_id, knobs.max_calls)
        if isinstance(ex, Rejected):
            return ex
        logger.debug("%s ran in %.2f s under %s", task_id, ex.seconds, ex.isolation)
        if not self._wrote(draft.source, ex):
            return Rejected("its writes matched nothing")
        if len(ex.calls) < knobs.min_calls:
            return Rejected("too short for long horizon", f"{len(ex.calls)} calls")
        derived = derive(ex.answer, draft.request, runner.base, ex.final, ex.probe or ex.final)
        if isinstance(derived, str):
            return Rejected(derived)
        return self._package(task_id, draft, ex, derived, checked.control_flow)

    def _wrote(self, source: str, ex: Execution) -> bool:
        """False when the source names a write tool but the run called none (a conditional
        write whose condition held for no record: a degenerate task)."""
        writers = {n for n, t in self.model.tools.items() if t.writes}
        named = {
            node.value
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        }
        return not (writers & named) or any(c["name"] in writers for c in ex.calls)

    def _package(
        self, task_id: str, draft: Draft, ex: Execution, derived: Derived, flow: list[str]
    ) -> Candidate:
        """The candidate with the runs acceptance needs (probe replay, first call alone)."""
        diff, family = _metadata(self.model, ex, flow, derived.answer_type)
        first = self.runner.run(ex.calls, task_id, stop=1)
        task = TaskSpec(
            id=task_id,
            instruction=draft.request,
            kind="program",
            reference_answer=derived.reference,
            verifier={"type": "script", "source": derived.source},
            gold={"type": "tool_chain", "calls": ex.calls, "program": draft.source},
            difficulty=diff,
            provenance=provenance(METHOD, self.seed, True),
        )
        cases = [
            Case("gold", ex.final, derived.reference),
            Case("gold_probe", ex.probe or ex.final, derived.reference),
            Case("empty", self.runner.base.fork(), ""),
            Case("first_call", first.db, dumps(first.outputs[0]) if first.outputs else ""),
        ]
        return Candidate(task, family, cases)


def program_candidate(
    backend: Any,
    model: EnvModel,
    runner: Runner,
    task_id: str,
    knobs: Knobs,
    seed: int,
    limits: ExecLimits | None = None,
) -> Candidate | str:
    """One draw of :class:`ProgramWriter` (a writer kept per environment caches more)."""
    return ProgramWriter(model, runner, backend, seed, limits).candidate(task_id, knobs)


def _scalar_leaves(value: Any):
    """The strings and numbers inside a JSON value."""
    return (
        v for v in leaves(value) if isinstance(v, str | int | float) and not isinstance(v, bool)
    )

"""The earlier LLM route: programs as JSON in a small interpreted language (deprecated).

Kept so that :class:`~.program_tasks.ProgramTaskBuilder` keeps working until it calls
:func:`.llm_programs.program_candidate`, the route where the model writes real Python that
runs in the sandbox. The model wrote one program as JSON, e.g.::

    {"request": "For every open task of project p1, mark it done; how many?",
     "steps": [
       {"call": "getProject", "args": {"projectId": "p1"}, "as": "proj"},
       {"for_each": {"call": "listTasks", "args": {}}, "as": "t",
        "where": [["t.project_id", "==", "$proj.id"], ["t.status", "==", "open"]],
        "do": [{"call": "updateTask", "args": {"taskId": "$t.id", "status": "done"}}],
        "count": "n", "sum": {"pts": "t.points"}}],
     "answer": "I closed {n} tasks worth {pts} points.",
     "verify": "def verify(initial_state, final_state, answer): ..."}

``for_each`` loops over every record a list tool returns (following pages), ``where`` filters
(``==``, ``!=``, ``>``, ``<``, ``>=``, ``<=``, ``in``), ``do`` runs calls per record (nested
``for_each`` and ``if`` allowed), ``count``/``sum`` aggregate, ``"$var.path"`` reads a bound
record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentworld_gym.synthesis.tasks.model import EnvModel
from agentworld_gym.synthesis.tasks.programs import Caller, ProgramError, value_at

MAX_STEPS = 40
_OPS = {
    "==": lambda a, b: str(a) == str(b),
    "!=": lambda a, b: str(a) != str(b),
    ">": lambda a, b: _num(a) is not None and _num(b) is not None and _num(a) > _num(b),
    "<": lambda a, b: _num(a) is not None and _num(b) is not None and _num(a) < _num(b),
    ">=": lambda a, b: _num(a) is not None and _num(b) is not None and _num(a) >= _num(b),
    "<=": lambda a, b: _num(a) is not None and _num(b) is not None and _num(a) <= _num(b),
    "in": lambda a, b: isinstance(b, list) and str(a) in {str(x) for x in b},
}


def _num(x: Any) -> float | None:
    if isinstance(x, bool):
        return None
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def describe(model: EnvModel, limit: int = 12) -> str:
    """The state model as the prompt shows it."""
    lines = []
    for coll in model.collections.values():
        fields = []
        for f, values in list(coll.profile.categorical.items())[:6]:
            fields.append(f"{f} in {values[:5]}")
        fields += [f"{f} (number)" for f in coll.profile.numeric[:4]]
        fields += [f"{f} -> {c}" for f, c in coll.references.items()]
        lines.append(
            f"- {coll.name} (key {coll.pk}, {len(coll.records)} records): " + "; ".join(fields)
        )
        keys = [str(r.get(coll.pk)) for r in coll.records[:3]]
        lines.append(f"  example keys: {keys}")
        for op, tools in coll.tools.items():
            for t in tools[:2]:
                args = ", ".join(
                    f"{p.name}{'*' if p.required else ''}" for p in list(t.params.values())[:limit]
                )
                lines.append(f"  {op}: {t.name}({args})")
    return "\n".join(lines)


PROMPT = """You write one verifiable multi-step task for an agent working with this API.

State and tools (* = required argument):
{state}

Write a program with real control flow over tool results (loops, filters, branches,
aggregation, conditional writes), as JSON in this language:
{grammar}

Rules: use only the tools and fields shown; the request names the values the user gives and
never the tool names or the answer; "verify" is stdlib-only Python
`def verify(initial_state, final_state, answer)` (states are {{collection: [records]}})
returning a number in [0, 1] that recomputes the truth from initial_state and checks
final_state and the answer. Reply with only the JSON object."""


class Interpreter:
    """Runs a JSON program through a caller; returns the bound variables."""

    def __init__(self, model: EnvModel, caller: Caller) -> None:
        self.model = model
        self.caller = caller
        self.vars: dict[str, Any] = {}
        self.steps = 0

    def run(self, steps: list[dict[str, Any]]) -> dict[str, Any]:
        for step in steps:
            self._step(step)
        return self.vars

    def _value(self, value: Any) -> Any:
        if isinstance(value, str) and value.startswith("$"):
            name, _, path = value[1:].partition(".")
            if name not in self.vars:
                raise ProgramError(f"unbound variable {name!r}")
            return value_at(self.vars[name], path) if path else self.vars[name]
        if isinstance(value, dict):
            return {k: self._value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._value(v) for v in value]
        return value

    def _tool(self, name: Any):
        tool = self.model.tools.get(str(name))
        if tool is None:
            raise ProgramError(f"unknown tool {name!r}")
        return tool

    def _test(self, where: list[Any]) -> bool:
        for cond in where or []:
            if not (isinstance(cond, list) and len(cond) == 3 and cond[1] in _OPS):
                raise ProgramError(f"bad condition {cond!r}")
            left = self._value(f"${cond[0]}") if isinstance(cond[0], str) else cond[0]
            if not _OPS[cond[1]](left, self._value(cond[2])):
                return False
        return True

    def _step(self, step: dict[str, Any]) -> None:
        self.steps += 1
        if self.steps > MAX_STEPS * 10:
            raise ProgramError("program runs too long")
        if "for_each" in step:
            spec = step["for_each"]
            tool = self._tool(spec.get("call"))
            rows = self.caller.list_all(tool, self._value(spec.get("args", {})))
            name = str(step.get("as", "it"))
            count = step.get("count")
            sums = step.get("sum") or {}
            if count:
                self.vars[count] = 0
            for acc in sums:
                self.vars[acc] = 0
            for row in rows:
                self.vars[name] = row
                if not self._test(step.get("where", [])):
                    continue
                if count:
                    self.vars[count] += 1
                for acc, path in sums.items():
                    self.vars[acc] += _num(self._value(f"${path}")) or 0
                for inner in step.get("do", []):
                    self._step(inner)
        elif "if" in step:
            branch = step.get("then", []) if self._test(step["if"]) else step.get("else", [])
            for inner in branch:
                self._step(inner)
        elif "call" in step:
            out = self.caller(self._tool(step["call"]), self._value(step.get("args", {})))
            if step.get("as"):
                tool = self._tool(step["call"])
                rec = value_at(out, tool.record) if tool.record else out
                self.vars[str(step["as"])] = rec if rec is not None else out
        else:
            raise ProgramError(f"unknown step {list(step)!r}")


def parse(text: str) -> dict[str, Any] | None:
    """The first JSON object in the model's reply that looks like a program."""
    match = re.search(r"\{.*\}", text, re.DOTALL)
    if not match:
        return None
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        return None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("steps"), list)
        and isinstance(data.get("request"), str)
        and "def verify" in str(data.get("verify"))
    )
    return data if ok else None


def write_program(backend: Any, model: EnvModel, temperature: float = 0.8) -> dict[str, Any]:
    """Ask the model for one program (``{}`` when its reply is not one)."""
    grammar = __doc__.split("::", 1)[1].split("``for_each``", 1)[0]
    prompt = PROMPT.format(state=describe(model), grammar=grammar)
    reply = backend.chat(
        [{"role": "user", "content": prompt}], temperature=temperature, max_tokens=2000
    )
    return parse(reply.get("content") or "") or {}


def answer_text(template: str, values: dict[str, Any]) -> str:
    def fmt(v: Any) -> str:
        if isinstance(v, float):
            return str(int(v)) if v.is_integer() else f"{v:.2f}"
        return str(v)

    return re.sub(r"\{(\w+)\}", lambda m: fmt(values.get(m.group(1), m.group(0))), template)

"""Running an LLM-written program in the sandbox, its tool calls proxied to the real runtime.

The program runs in a :class:`~agentworld_gym.sandbox.SandboxWorker` (its own process, no network,
memory and time limits, an unprivileged user, restricted builtins). Its tools run on the host,
through the synthesis :class:`~agentworld_gym.synthesis.tasks.runner.Runner` — the agent's own
runtime on a fresh fork of the environment — so nothing the program does can reach the state except
through tool calls, and every call it makes is recorded by the host, not reported by the program.

The sandbox answers requests and cannot call back, so a program is run by *replay*: the worker
executes ``program(call)`` from the start with the results known so far; the first call past
them stops it and comes back as a request; the host runs that call and sends its result; the
worker re-runs the program from the start, checking that it makes the same calls in the same
order. A program of ``n`` calls runs ``n + 1`` times — milliseconds for the programs tasks
are made of — and each result crosses the process boundary once.

Two more runs check what a task needs beyond "it ran": in a fresh process with the recorded
results (the same calls and answer: it is **deterministic**), and with the results of a replay
under another task id and a shifted clock (the same calls and answer: nothing depends on a
generated id or the time, it is **stable**).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.sandbox import SandboxErrorType, SandboxLimits, SandboxResult, SandboxWorker
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.sample.llm.policy import ALLOWED_MODULES, SAFE_BUILTINS

logger = logging.getLogger(__name__)

DRIVER = '''
import builtins
import copy
import json
import traceback

_known = {"source": "", "results": [], "approved": []}


class _Pending(BaseException):
    """call() past the last known result: the host runs that call first."""


class _Diverged(BaseException):
    """call() asked for something else than on the previous run."""


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.split(".")[0] not in ALLOWED:
        raise ImportError(f"import of {name!r} is not allowed")
    return builtins.__import__(name, globals, locals, fromlist, level)


def _builtins():
    out = {name: getattr(builtins, name) for name in SAFE}
    out["__import__"] = _import
    out["__build_class__"] = builtins.__build_class__
    return out


def _canon(value):
    return json.loads(json.dumps(value, allow_nan=False))


def _line(exc):
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<program>"]
    return lines[-1] if lines else None


def _run(source, results, approved):
    made, pending, diverged = [], [], []

    def call(name, arguments=None, /, **kwargs):
        entry = [str(name), _canon(dict(arguments or {}, **kwargs))]
        i = len(made)
        made.append(entry)
        if i < len(approved) and approved[i] != entry:
            diverged.append(i)
            raise _Diverged()
        if i < len(results):
            return copy.deepcopy(results[i])
        pending.append(i)
        raise _Pending()

    ns = {"__builtins__": _builtins(), "__name__": "llm_program"}
    answer, error = None, None
    try:
        exec(compile(source, "<program>", "exec"), ns)
        answer = ns["program"](call)
    except (_Pending, _Diverged):
        pass
    except Exception as exc:
        if isinstance(exc, MemoryError) or type(exc).__module__.startswith("agentworld_gym"):
            raise  # the sandbox's own refusals (network, forbidden) and limits report themselves
        error = exc
    if diverged:
        return {"error": "diverged", "detail": f"call {diverged[0] + 1} changed between runs"}
    if pending:
        return {"need": made[pending[0]]}
    if error is not None:
        detail = f"{type(error).__name__}: {str(error)[:200]} (line {_line(error)})"
        return {"error": "raised", "kind": type(error).__name__, "detail": detail}
    try:
        answer = _canon(answer)
    except (TypeError, ValueError) as exc:
        return {"error": "answer", "detail": str(exc)[:200]}
    return {"answer": answer, "calls": made}


def start(source):
    _known.update(source=source, results=[], approved=[])
    return _step()


def step(result):
    _known["results"].append(result)
    return _step()


def _step():
    out = _run(_known["source"], _known["results"], _known["approved"])
    if "need" in out:
        _known["approved"].append(out["need"])
    return out


def replay(source, results):
    return _run(source, results, [])
'''


@dataclass(frozen=True)
class ExecLimits:
    """Limits of one program's execution."""

    step_s: float = 2.0
    """Wall-clock seconds of one run between two tool calls (CPU time is capped the same)."""
    total_s: float = 20.0
    """Wall-clock seconds of the whole execution, tool calls included."""
    memory_mb: int = 256
    """Address space of the sandbox process."""


@dataclass
class Execution:
    """A program that ran: its answer and the calls it made (the gold chain)."""

    answer: Any
    calls: list[dict[str, Any]]
    outputs: list[Any]
    final: Database
    probe: Database | None = None
    """The final state of the replay under another task id and a shifted clock."""
    isolation: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0


@dataclass
class Rejected:
    """Why a program is not kept: ``reason`` counts in the synthesis report, ``detail``
    is logged."""

    reason: str
    detail: str = ""


_SANDBOX_REASONS = {
    SandboxErrorType.TIMEOUT: "timed out",
    SandboxErrorType.MEMORY: "exceeded the memory limit",
    SandboxErrorType.NETWORK: "tried to use the network",
    SandboxErrorType.FORBIDDEN: "did something forbidden in the sandbox",
    SandboxErrorType.OUTPUT_TOO_LARGE: "produced too much output",
    SandboxErrorType.CRASH: "crashed the sandbox",
    SandboxErrorType.COMPILE: "does not compile",
}


def _from_reply(result: SandboxResult) -> dict[str, Any] | Rejected:
    if not result.ok:
        kind = result.error_type
        reason = _SANDBOX_REASONS.get(kind, "failed in the sandbox") if kind else "failed"
        return Rejected(reason, result.error or "")
    value = result.value
    if not isinstance(value, dict):
        return Rejected("failed in the sandbox", f"driver answered {value!r:.80}")
    error = value.get("error")
    if error == "raised":
        return Rejected(f"raised {value.get('kind', 'an exception')}", value.get("detail", ""))
    if error == "answer":
        return Rejected("answer is not JSON-serialisable", value.get("detail", ""))
    if error == "diverged":
        return Rejected("nondeterministic: its calls change between runs", value.get("detail", ""))
    return value


def _calls(made: list[list[Any]]) -> list[dict[str, Any]]:
    return [{"name": name, "arguments": args} for name, args in made]


class ProgramExecutor:
    """Runs programs against one environment (see the module docstring)."""

    def __init__(self, runner: Runner, limits: ExecLimits | None = None) -> None:
        self.runner = runner
        self.limits = limits or ExecLimits()

    def _worker(self, workdir: Path) -> SandboxWorker:
        lim = self.limits
        header = f"ALLOWED = frozenset({ALLOWED_MODULES!r})\nSAFE = {SAFE_BUILTINS!r}\n"
        limits = SandboxLimits(
            wall_s=lim.step_s, cpu_s=lim.step_s, memory_mb=lim.memory_mb, file_bytes=1 << 20
        )
        return SandboxWorker(workdir, header + DRIVER, limits=limits)

    def run(self, source: str, task_id: str, max_calls: int) -> Execution | Rejected:
        """Execute ``source`` on a fresh fork, then check it is deterministic and stable."""
        workdir = Path(tempfile.mkdtemp(prefix="agentworld-llm-program-"))
        started = time.monotonic()
        try:
            with self._worker(workdir) as worker:
                done = self._stepped(worker, source, task_id, max_calls, started)
                if isinstance(done, Rejected):
                    return done
                why = self._recheck(worker, source, done, task_id)
                if why is not None:
                    return why
                done.isolation = worker.isolation
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        done.seconds = time.monotonic() - started
        return done

    def _stepped(
        self, worker: SandboxWorker, source: str, task_id: str, max_calls: int, started: float
    ) -> Execution | Rejected:
        ctx = self.runner.context(task_id)
        outputs: list[Any] = []
        reply = _from_reply(worker.call("start", {"source": source}))
        while True:
            if isinstance(reply, Rejected):
                return reply
            if "need" not in reply:
                break
            if len(outputs) >= max_calls:
                return Rejected("too many tool calls", f"more than {max_calls}")
            if time.monotonic() - started > self.limits.total_s:
                return Rejected("timed out", f"over {self.limits.total_s} s in all")
            name, args = reply["need"]
            if not isinstance(args, dict):
                return Rejected("bad tool arguments", f"{args!r:.80}")
            out = self.runner.call(ctx, name, args)
            if not out.ok:
                kind = out.error.split(":", 1)[0]
                return Rejected(f"tool call failed ({kind})", f"{name}: {out.error}")
            outputs.append(out.output)
            reply = _from_reply(worker.call("step", {"result": out.output}))
        calls = _calls(reply.get("calls", []))
        if len(calls) != len(outputs):
            return Rejected("nondeterministic: its calls change between runs", "call count")
        if not calls:
            return Rejected("made no tool call")
        return Execution(reply.get("answer"), calls, outputs, ctx.db)

    def _recheck(
        self, worker: SandboxWorker, source: str, done: Execution, task_id: str
    ) -> Rejected | None:
        worker.restart()  # a fresh process: nothing carried over from the stepped run
        again = _from_reply(worker.call("replay", {"source": source, "results": done.outputs}))
        if isinstance(again, Rejected) or "need" in again:
            return Rejected("nondeterministic: a second run differs", str(again)[:200])
        if _calls(again["calls"]) != done.calls or again["answer"] != done.answer:
            return Rejected("nondeterministic: a second run differs", "calls or answer")
        probe = self.runner.run(done.calls, task_id + "-probe", probe=True)
        if not probe.ok:
            return Rejected("volatile: replay with another id/clock fails", probe.error)
        shifted = _from_reply(worker.call("replay", {"source": source, "results": probe.outputs}))
        if isinstance(shifted, Rejected) or "need" in shifted:
            return Rejected("volatile: depends on generated ids or the clock", str(shifted)[:200])
        if _calls(shifted["calls"]) != done.calls or shifted["answer"] != done.answer:
            return Rejected("volatile: depends on generated ids or the clock", "calls or answer")
        done.probe = probe.db
        return None

"""Run LLM-written tools and their unit tests in the isolated tool worker; decide what stays.

Tools and tests are untrusted code: they run in a :class:`~agentworld_gym.sandbox.SandboxWorker`
(the same worker runtime the agent's calls use) over a private copy of the designed database,
one test at a time, each test's writes undone afterwards. A tool is *kept* when its source
loads and it passes more than ``threshold`` of its tests (a tool without tests is not kept).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.release.files import RUNTIME_MODULE, WORKER_SOURCE, slot_root, unloadable
from agentworld_gym.sandbox import SandboxErrorType, SandboxLimits, SandboxWorker
from agentworld_gym.synthesis.llm_env.parse import TestDraft, ToolDraft

HEADER = '''\
import json as _json
import os as _os

_DB = _os.environ.get("MCP_DB_DIR") or "."


def _load(name, default=None):
    """The records of a collection (its whole JSON file)."""
    try:
        with open(_os.path.join(_DB, name + ".json"), encoding="utf-8") as f:
            return _json.load(f)
    except FileNotFoundError:
        return [] if default is None else default


def _save(name, data):
    """Write a collection back whole."""
    with open(_os.path.join(_DB, name + ".json"), "w", encoding="utf-8") as f:
        _json.dump(data, f, indent=2, ensure_ascii=False)


def _err(code, message, **extra):
    """An in-band API error: return it, do not raise it."""
    return {"error": {"code": code, "message": message, **extra}}


def _now():
    """The current time as ISO 8601 (the environment's clock)."""
    import datetime
    return datetime.datetime.now(datetime.timezone.utc).isoformat()


def _next_id(records, prefix):
    """The next free id like "o7" for records whose ids look like "o1", "o2", ..."""
    numbers = [int(r["id"][len(prefix):]) for r in records
               if str(r.get("id", "")).startswith(prefix) and str(r["id"])[len(prefix):].isdigit()]
    return prefix + str(max(numbers, default=0) + 1)
'''
"""Prepended to every synthesized tool (and test) module: the release contract's helpers."""

_FATAL = {SandboxErrorType.TIMEOUT, SandboxErrorType.MEMORY, SandboxErrorType.CRASH}


def tool_source(tool: ToolDraft) -> str:
    """The tool's module as stored in the environment: the header, then its code."""
    return f"{HEADER}\n\n{tool.code.strip()}\n"


def module_name(tool: ToolDraft) -> str:
    return f"aw_{tool.function}"


@dataclass
class TestResult:
    tool: str
    name: str
    passed: bool
    error: str | None = None


@dataclass
class ToolVerdict:
    """How one tool fared: did it load, which tests passed, is it kept."""

    name: str
    loaded: bool
    load_error: str | None = None
    tests: list[TestResult] = field(default_factory=list)
    kept: bool = False
    reason: str = ""

    @property
    def pass_rate(self) -> float:
        return sum(t.passed for t in self.tests) / len(self.tests) if self.tests else 0.0


def _test_module(test: TestDraft, tools: list[ToolDraft]) -> str:
    imports = "\n".join(
        f"try:\n    from {module_name(t)} import {t.function}\nexcept Exception:\n    pass"
        for t in tools
    )
    return f"{HEADER}\n{imports}\n\n{test.code.strip()}\n"


def _own_lines(error: str | None, source: str, code: str) -> str | None:
    """``(line N)`` of a module made of a prefix and the model's code -> line in that code."""
    if error is None:
        return None
    start = source.find(code.strip())
    offset = source[:start].count("\n") if start > 0 else 0

    def shift(match: re.Match) -> str:
        line = int(match.group(1)) - offset
        return f"(line {line} of its code)" if line > 0 else "(in the shared header)"

    return re.sub(r"\(line (\d+)\)", shift, error)


def _write_db(folder: Path, collections: dict[str, Any]) -> None:
    for path in folder.glob("*.json"):
        path.unlink()
    for name, records in collections.items():
        target = folder / f"{name}.json"
        target.write_text(json.dumps(records, indent=2, ensure_ascii=False), encoding="utf-8")
        if os.geteuid() == 0:
            owner = folder.stat()
            os.chown(target, owner.st_uid, owner.st_gid)


def run_tests(
    collections: dict[str, Any],
    tools: list[ToolDraft],
    tests: list[TestDraft],
    *,
    clock: str,
    limits: SandboxLimits,
    threshold: float = 0.5,
) -> list[ToolVerdict]:
    """Load every tool, run every test, and judge each tool (see the module docstring)."""
    folder = Path(tempfile.mkdtemp(prefix="agentworld-synth-tests-", dir=slot_root()))
    os.chmod(folder, 0o755)
    sources = {RUNTIME_MODULE: WORKER_SOURCE}
    sources.update({module_name(t): tool_source(t) for t in tools})
    test_modules = {}
    for i, test in enumerate(tests):
        test_modules[test.name] = f"aw_test_{i}"
        sources[f"aw_test_{i}"] = _test_module(test, tools)
    now = dt.datetime.fromisoformat(clock.replace("Z", "+00:00")).timestamp()
    env = {
        "MCP_DB_DIR": str(folder.resolve()),
        "AGENTWORLD_TOOL_WORKER": "1",
        "AGENTWORLD_CLOCK": repr(now),
        "TZ": "UTC",
    }
    verdicts = {t.name: ToolVerdict(t.name, loaded=True) for t in tools}
    results: dict[str, TestResult] = {}
    try:
        _write_db(folder, collections)
        code = {module_name(t): t.code for t in tools}
        code.update({test_modules[t.name]: t.code for t in tests})
        hanging = unloadable({m: sources[m] for m in code}, folder, limits)
        for module, error in hanging.items():  # they would stop every other module loading
            sources.pop(module)
            hanging[module] = f"loading it does not finish: {error}"
        with SandboxWorker(folder, sources, env=env, limits=limits) as worker:
            started = worker.call(f"{RUNTIME_MODULE}:ping")
            failed = {**worker.load_errors, **hanging} if started.ok else {}
            for tool in tools:
                error = failed.get(module_name(tool)) if started.ok else started.error
                if error is not None:
                    verdicts[tool.name].loaded = False
                    verdicts[tool.name].load_error = _own_lines(error, tool_source(tool), tool.code)
            for test in tests if started.ok else []:
                module = test_modules[test.name]
                if module in failed:
                    error = _own_lines(failed[module], _test_module(test, tools), test.code)
                    results[test.name] = TestResult(test.tool, test.name, False, error)
                    continue
                outcome = _run_one(worker, test, module, now, folder, collections)
                outcome.error = _own_lines(outcome.error, sources[module], test.code)
                results[test.name] = outcome
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    for test in tests:
        if test.name in results:
            verdicts[test.tool].tests.append(results[test.name])
    for verdict in verdicts.values():
        _judge(verdict, threshold)
    return [verdicts[t.name] for t in tools]


def _run_one(
    worker: SandboxWorker,
    test: TestDraft,
    module: str,
    now: float,
    folder: Path,
    collections: dict[str, Any],
) -> TestResult:
    request = {"module": module, "function": test.name, "now": now, "seed": test.name}
    result = worker.call(f"{RUNTIME_MODULE}:run_test", request)
    if result.ok:
        return TestResult(test.tool, test.name, True)
    if result.error_type in _FATAL:  # killed mid-test: its writes were not undone
        _write_db(folder, collections)
    error = re.sub(r"\s+", " ", result.error or "failed")[:300]
    return TestResult(test.tool, test.name, False, error)


def _judge(verdict: ToolVerdict, threshold: float) -> None:
    passed = sum(t.passed for t in verdict.tests)
    if not verdict.loaded:
        verdict.reason = f"does not load: {verdict.load_error}"
    elif not verdict.tests:
        verdict.reason = "has no valid test"
    elif verdict.pass_rate <= threshold:
        verdict.reason = (
            f"passes {passed}/{len(verdict.tests)} tests, not more than {threshold:.0%}"
        )
    else:
        verdict.kept = True
        verdict.reason = f"passes {passed}/{len(verdict.tests)} tests"

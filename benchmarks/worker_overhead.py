"""Per-call overhead of the out-of-process code-tool runtime, beyond the tool's own work.

    python benchmarks/worker_overhead.py [--n 2000] [--release PATH]

Each tool is timed twice on the same database files (on ``/dev/shm``): *direct*, its source
exec'd in this process and the function called (the tool's own work), and *worker*, through
``Toolbox.call`` and the ``"release"`` runtime (argument validation, folder sync, the isolated
worker's round trip, the undo log, the pinned clock, reading back and mirroring the files the
tool wrote). Overhead = worker - direct, per percentile. Episodes are reset every 20 calls (not
timed) so the release tools' usage logs stay small; the last rows time an episode change:
``reset`` (which starts the episode's fresh worker) and the first call, at once or after 20 ms
of agent thinking. With ``--release`` (default: the sample
fixture when present) the Harbor Tasks tools of the release are measured too.

Target: overhead under 1 ms per call. Numbers depend on the machine's load: run it idle.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.release import ImportOptions, import_release, runtime_for
from agentworld_gym.spec import EnvSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import Toolbox, ToolContext

SAMPLE = Path("/work/shared/fixtures/agentworld_release_sample")
EPISODE = 20
SOURCE = """
import json, os
_DB = os.environ["MCP_DB_DIR"]

def noop(**_extra):
    return {"ok": True}

def read_items(**_extra):
    with open(os.path.join(_DB, "items.json")) as f:
        return json.load(f)

def write_item(v=0, **_extra):
    path = os.path.join(_DB, "items.json")
    with open(path) as f:
        items = json.load(f)
    items[0]["v"] = v
    with open(path, "w") as f:
        json.dump(items, f)
    return items[0]
"""


def synthetic_spec() -> EnvSpec:
    def tool(name: str, params: dict[str, Any]) -> ToolSpec:
        impl = {"type": "release", "source": SOURCE, "function": name.replace("-", "_")}
        return ToolSpec(name, name, {"type": "object", "properties": params}, impl, "write")

    items = [{"id": f"i{i}", "v": i, "name": f"item {i}"} for i in range(50)]
    tools = [
        tool("noop", {}),
        tool("read-items", {}),
        tool("write-item", {"v": {"type": "integer"}}),
    ]
    task = TaskSpec("t", "bench", {"type": "release_rubric", "criteria": ["x"]})
    return EnvSpec("bench", "Bench", "", tools, records={"items": items}, tasks=[task])


class Direct:
    """The tools' sources exec'd in this process over a private copy of the database."""

    def __init__(self, spec: EnvSpec) -> None:
        self.spec = spec
        self.folder = Path(tempfile.mkdtemp(dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
        os.environ["MCP_DB_DIR"] = str(self.folder)
        self.reset()
        self.functions: dict[str, Callable[..., Any]] = {}
        for t in spec.tools:
            impl = t.implementation
            source = impl.get("source") or (Path(spec.root) / impl["file"]).read_text()
            namespace: dict[str, Any] = {"__name__": f"direct_{impl['function']}"}
            exec(compile(source, f"<{t.name}>", "exec"), namespace)
            self.functions[t.name] = namespace[impl["function"]]

    def reset(self) -> None:
        for name, value in self.spec.database.snapshot().items():
            (self.folder / f"{name}.json").write_text(json.dumps(value))

    def call(self, name: str, arguments: dict[str, Any]) -> Any:
        return self.functions[name](**arguments)

    def close(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _time(call: Callable[[], Any], reset: Callable[[], Any], n: int) -> list[float]:
    samples = []
    for i in range(n):
        if i % EPISODE == 0:
            reset()
        start = time.perf_counter_ns()
        call()
        samples.append((time.perf_counter_ns() - start) / 1000)
    return sorted(samples)


def _pct(samples: list[float], q: float) -> float:
    return samples[min(len(samples) - 1, int(q * len(samples)))]


def _compare(
    box: Toolbox,
    direct: Direct,
    state: dict[str, ToolContext],
    new_episode: Callable[[], None],
    name: str,
    args: Callable[[int], dict],
    n: int,
) -> tuple[list[float], list[float]]:
    """(direct, worker) latencies of one tool, called with ``args(i)`` for i = 0, 1, ..."""
    counter = iter(range(10**9))
    new_episode()
    for _ in range(EPISODE):  # warm up: worker started, imports done
        box.call(state["ctx"], name, args(next(counter)))
    worker = _time(lambda: box.call(state["ctx"], name, args(next(counter))), new_episode, n)
    own = _time(lambda: direct.call(name, args(next(counter))), direct.reset, n)
    return own, worker


def measure(spec: EnvSpec, calls: list[tuple[str, Callable[[int], dict]]], n: int) -> list[tuple]:
    box = Toolbox(spec)
    direct = Direct(spec)
    state: dict[str, ToolContext] = {}

    def new_episode() -> None:
        state["ctx"] = ToolContext(spec.database.fork(), spec.id, "bench")

    rows = []
    try:
        for name, args in calls:
            rows.append(
                (f"{spec.id}: {name}", *_compare(box, direct, state, new_episode, name, args, n))
            )
    finally:
        direct.close()
    return rows


def episode_rows(spec: EnvSpec, name: str, n: int) -> list[tuple[str, list[float]]]:
    """An episode change: ``reset`` (a fresh confined worker starts loading), then the first
    call at once, or after the agent has thought for 20 ms (the worker loaded meanwhile)."""
    spec.__dict__.pop("_tool_runtime", None)
    spec.__dict__.pop("_shared", None)
    env = AgentWorldEnv(spec, split="all")
    action = json.dumps({"name": name, "arguments": {}})
    env.reset()
    env.step(action)
    resets, at_once, after_think = [], [], []
    for i in range(n):
        start = time.perf_counter_ns()
        env.reset()
        ready = time.perf_counter_ns()
        if i % 2:
            time.sleep(0.02)
        called = time.perf_counter_ns()
        env.step(action)
        done = time.perf_counter_ns()
        resets.append((ready - start) / 1000)
        (after_think if i % 2 else at_once).append((done - called) / 1000)
    env.close()
    return [
        ("reset (fresh worker started)", sorted(resets)),
        ("first call right after reset", sorted(at_once)),
        ("first call 20 ms after reset", sorted(after_think)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=2000, help="timed calls per tool")
    parser.add_argument("--release", type=Path, default=SAMPLE if SAMPLE.is_dir() else None)
    args = parser.parse_args()

    spec = synthetic_spec()
    rows = measure(
        spec,
        [("noop", lambda i: {}), ("read-items", lambda i: {}), ("write-item", lambda i: {"v": i})],
        args.n,
    )
    isolation = runtime_for(spec).isolation
    runtime_for(spec).close()
    if args.release is not None:
        out = Path(tempfile.mkdtemp())
        try:
            import_release(args.release, ImportOptions(out=out, only=["9900001"], register=False))
            harbor = EnvSpec.load(out / "harbor-tasks")
            status = ("blocked", "todo")
            rows += measure(
                harbor,
                [
                    ("get-task", lambda i: {"task_id": "t3"}),
                    ("search-tasks", lambda i: {"project_id": "p2"}),
                    ("update-task-status", lambda i: {"task_id": "t3", "status": status[i % 2]}),
                ],
                max(args.n // 2, 50),
            )
            runtime_for(harbor).close()
        finally:
            shutil.rmtree(out, ignore_errors=True)

    print(
        f"{'tool':<34} {'direct p50':>10} {'worker p50':>10} {'overhead p50':>12} "
        f"{'overhead p90':>12}  (µs)"
    )
    for name, own, worker in rows:
        p50 = _pct(worker, 0.5) - _pct(own, 0.5)
        p90 = _pct(worker, 0.9) - _pct(own, 0.9)
        print(
            f"{name:<34} {_pct(own, 0.5):>10.1f} {_pct(worker, 0.5):>10.1f} {p50:>12.1f} "
            f"{p90:>12.1f}"
        )
    for name, samples in episode_rows(synthetic_spec(), "noop", max(args.n // 10, 40)):
        print(f"{name:<46} p50 {_pct(samples, 0.5):>8.0f} µs   p90 {_pct(samples, 0.9):>8.0f} µs")
    mean_overhead = statistics.mean(_pct(w, 0.5) - _pct(o, 0.5) for _, o, w in rows)
    print(f"mean p50 overhead {mean_overhead:.0f} µs per call (target < 1000 µs)")
    print(f"isolation: {isolation}")
    print(f"load average: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()

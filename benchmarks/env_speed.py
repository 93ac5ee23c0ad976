"""Environment hot-path speed: reset, step (read / write / invalid), verification.

    python benchmarks/env_speed.py [--env notion] [--n 2000]

Runs on one core (pinned with ``sched_setaffinity``) against the raw env, and prints a table of
median / p99 latencies and throughputs. The read and write calls are taken from the
environment's own gold solutions (the first read and write calls without references), so any
catalog environment can be measured. Targets for notion on one core of a 2-core laptop-class
CPU: read step < 25 µs, reset < 200 µs, rubric verification < 1 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from collections.abc import Callable

import agentworld_gym  # noqa: F401  (registers the catalog)
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import load_spec
from agentworld_gym.spec import EnvSpec


def _timeit(fn: Callable[[], object], n: int, setup: Callable[[], object] | None = None):
    samples = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    samples.sort()
    return samples


def _pick_calls(spec: EnvSpec) -> tuple[dict, dict | None, str, str | None]:
    """(read call, write call, task for read, task for write) from the gold chains."""
    kinds = {t.name: t.kind for t in spec.tools}
    read = write = None
    read_task = write_task = None
    for task in spec.tasks:
        for call in (task.gold or {}).get("calls", []):
            if "$" in json.dumps(call.get("arguments", {})):
                continue
            if kinds.get(call["name"]) == "read" and read is None:
                read, read_task = call, task.id
            if kinds.get(call["name"]) == "write" and write is None:
                write, write_task = call, task.id
    if read is None:
        raise SystemExit(f"{spec.id}: no gold read call without references to benchmark")
    return read, write, read_task, write_task


def _row(name: str, samples: list[int], unit: str = "µs") -> str:
    med = statistics.median(samples) / 1e3
    p99 = samples[int(len(samples) * 0.99) - 1] / 1e3
    per_s = 1e6 / med if med else float("inf")
    return f"| {name:<34} | {med:>10.1f} | {p99:>10.1f} | {per_s:>12,.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="notion", help="registered environment or env folder")
    parser.add_argument("--n", type=int, default=2000, help="samples per row")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    spec = EnvSpec.load(args.env) if os.path.isdir(args.env) else load_spec(args.env)
    env = AgentWorldEnv(spec, split="all", max_turns=10**9)
    read, write, read_task, write_task = _pick_calls(spec)
    read_action = json.dumps(read)
    write_action = json.dumps(write) if write else None
    tool_name = spec.tools[0].name
    bad_action = json.dumps({"name": tool_name, "arguments": {"no_such_argument": 1}})
    rows = []

    rows.append(_row("reset (seeded task draw)", _timeit(lambda: env.reset(seed=1), args.n)))
    env.reset(options={"task_id": read_task})
    rows.append(_row(f"step read ({read['name']})", _timeit(lambda: env.step(read_action), args.n)))
    rows.append(_row("step invalid arguments", _timeit(lambda: env.step(bad_action), args.n)))
    rows.append(_row("step unknown tool", _timeit(lambda: env.step('{"name": "nope"}'), args.n)))
    if write_action:
        env.reset(options={"task_id": write_task})
        rows.append(
            _row(
                f"step write ({write['name']})",
                _timeit(lambda: env.step(write_action), args.n),
            )
        )
    for kind in ("rubric", "script"):
        task = next((t for t in spec.tasks if t.verifier.get("type") == kind), None)
        if task is None:
            continue
        n = args.n if kind == "rubric" else max(20, args.n // 50)
        env.reset(options={"task_id": task.id})
        rows.append(_row(f"verify {kind} ({task.id})", _timeit(lambda: env.verify("42"), n)))

    print(
        f"\n{spec.gym_id}: {len(spec.tools)} tools, "
        f"{sum(spec.database.count(c) for c in spec.database.collections)} records, one core\n"
    )
    print(f"| {'operation':<34} | {'median µs':>10} | {'p99 µs':>10} | {'per second':>12} |")
    print(f"|{'-' * 36}|{'-' * 12}|{'-' * 12}|{'-' * 14}|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

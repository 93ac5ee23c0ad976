"""Environment hot-path speed: reset, step (read / write / invalid), verification.

    python benchmarks/env_speed.py [--env notion] [--n 2000]

Runs on one core (pinned with ``sched_setaffinity``) against the raw env, and prints a table of
median / p99 latencies and throughputs. The read and write calls are taken from the
environment's own gold solutions (one row per distinct tool), so any catalog environment can be
measured; a call that fails when repeated in a fresh episode is marked "error path". Episodes
restart every 30 steps so the chat history stays realistic; a "turn 200+" row times the
cheapest read call at turns 201-230 of an episode, where any per-step cost that grows with the
history would show. Targets for notion on one core of a 2-core laptop-class CPU: point-read
step < 25 µs, reset < 200 µs, rubric verification < 1 ms.
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
from agentworld_gym.replay import replay_gold
from agentworld_gym.spec import EnvSpec

LONG_EPISODE_TURN = 200
"""The long-episode row times steps from this turn on (30 of them per episode)."""


def _timeit(
    fn: Callable[[], object], n: int, setup: Callable[[], object] | None = None
) -> list[int]:
    samples = []
    for _ in range(n):
        if setup is not None:
            setup()
        t0 = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - t0)
    samples.sort()
    return samples


def _pick_calls(env: AgentWorldEnv, limit: int = 32) -> tuple[list, list]:
    """One concrete call per distinct read and write tool, from the replayed gold chains.

    References to earlier outputs (``$0.id``) are resolved by replaying the chain once; the
    call is then timed in a fresh episode of that task.
    """
    spec = env.spec_data
    kinds = {t.name: t.kind for t in spec.tools}
    reads: dict[str, tuple[dict, str]] = {}
    writes: dict[str, tuple[dict, str]] = {}
    for task in spec.tasks:
        if not replay_gold(env, task).ok:
            continue
        for message in env.messages:
            for call in message.get("tool_calls", []):
                fn = call["function"]
                concrete = {"name": fn["name"], "arguments": json.loads(fn["arguments"])}
                bucket = reads if kinds.get(fn["name"]) == "read" else writes
                bucket.setdefault(fn["name"], (concrete, task.id))
    return list(reads.values())[:limit], list(writes.values())[:limit]


def _episodes(
    env: AgentWorldEnv, task_id: str, turns: int = 30, warmup: tuple[str, int] = ("", 0)
) -> Callable[[], None]:
    """A setup hook that starts a fresh episode every ``turns`` steps (realistic history).

    ``warmup = (action, k)`` plays ``action`` ``k`` times, untimed, after each reset, so that
    the timed steps are turns ``k + 1`` to ``k + turns`` of an episode.
    """
    count = [turns]
    action, steps = warmup

    def setup() -> None:
        if count[0] >= turns:
            env.reset(options={"task_id": task_id})
            for _ in range(steps):
                env.step(action)
            count[0] = 0
        count[0] += 1

    return setup


def _row(name: str, samples: list[int], unit: str = "µs") -> str:
    med = statistics.median(samples) / 1e3
    p99 = samples[int(len(samples) * 0.99) - 1] / 1e3
    per_s = 1e6 / med if med else float("inf")
    return f"| {name:<44} | {med:>10.1f} | {p99:>10.1f} | {per_s:>12,.0f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="notion", help="registered environment or env folder")
    parser.add_argument("--n", type=int, default=2000, help="samples per row")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})

    spec = EnvSpec.load(args.env) if os.path.isdir(args.env) else load_spec(args.env)
    env = AgentWorldEnv(spec, split="all", max_turns=10**9)
    reads, writes = _pick_calls(env)
    tool_name = spec.tools[0].name
    bad_action = json.dumps({"name": tool_name, "arguments": {"no_such_argument": 1}})
    rows = []

    rows.append(_row("reset (seeded task draw)", _timeit(lambda: env.reset(seed=1), args.n)))
    fastest_read: tuple[float, str, str, str] = (float("inf"), "", "", "")
    for label, calls in (("read", reads), ("write", writes)):
        for call, task_id in calls:
            action = json.dumps(call)
            env.reset(options={"task_id": task_id})
            failed = not env.step(action)[4]["tool_results"][0]["ok"]
            samples = _timeit(lambda a=action: env.step(a), args.n, _episodes(env, task_id))
            note = " (error path)" if failed else ""
            rows.append(_row(f"step {label} {call['name']}{note}", samples))
            if label == "read" and not failed:
                median = statistics.median(samples)
                fastest_read = min(fastest_read, (median, call["name"], action, task_id))
    if fastest_read[1]:  # the cheapest read shows a per-step cost growing with the history best
        _, name, action, task_id = fastest_read
        setup = _episodes(env, task_id, warmup=(action, LONG_EPISODE_TURN))
        samples = _timeit(lambda: env.step(action), args.n, setup)
        rows.append(_row(f"step read {name}, turn {LONG_EPISODE_TURN}+", samples))
    for label, action in (("invalid arguments", bad_action), ("unknown tool", '{"name": "x"}')):
        samples = _timeit(lambda a=action: env.step(a), args.n, _episodes(env, reads[0][1]))
        rows.append(_row(f"step {label}", samples))
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
    print(f"| {'operation':<44} | {'median µs':>10} | {'p99 µs':>10} | {'per second':>12} |")
    print(f"|{'-' * 46}|{'-' * 12}|{'-' * 12}|{'-' * 14}|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

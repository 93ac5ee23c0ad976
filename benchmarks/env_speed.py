"""Environment hot-path speed: reset, each tool's step in its gold context, verification.

    python benchmarks/env_speed.py [--env notion] [--n 500] [--pin] [--compare ../other]

Every row is one named operation that *succeeds*, timed where a real episode performs it:

- ``step read|write <tool>``: the tool's gold calls, cycling over every place a gold chain
  uses it; before each sample the episode is reset to that task and the chain's earlier
  calls are replayed (untimed), so each timed call is the gold call in its real context
  (a write that succeeds once per episode is never repeated). All tools' samples run in
  one shuffled order, as a mix of tasks would run them, so no tool keeps caches warm for
  itself. ``workload.py`` times whole gold episodes in order.
- ``final answer + verify <kind>``: the ``submit`` step at the end of a replayed gold episode
  (reward 1.0), i.e. the verification a trainer pays, not a fresh episode's.
- ``step read <tool>, turn 200+``: the cheapest read at turns 201-230 of one episode, where
  any per-step cost that grows with the chat history shows.
- ``error path: ...`` rows time refused actions on purpose. A sample of a gold call that
  fails goes to that tool's own ``(error path)`` row, decided per sample, never per row.

Columns: CPU time of this thread (``time.thread_time_ns``) and wall time, median / p95 / mean
in µs. The load line says how busy the machine was meanwhile. Nothing is pinned unless
``--pin``. ``--compare CHECKOUT`` runs the same script on this tree and CHECKOUT in
alternating rounds (``PYTHONPATH``) and prints other/this ratios.
"""

from __future__ import annotations

import argparse
import random
from typing import Any

from benchlib import (
    Load,
    Series,
    answer_action,
    gold_action,
    gold_calls,
    load_line,
    package_line,
    parse,
    parser_for,
    play_prefix,
    table,
    timed,
    timer_floor,
    write_json,
)

LONG_EPISODE_TURN = 200
"""The long-episode row times steps from this turn on (30 of them per episode)."""

Context = tuple[Any, int]
"""(task, index of the gold call in its chain)."""


def _contexts(spec: Any, ok_tasks: list[Any]) -> tuple[dict[str, list[Context]], dict]:
    """Every place a gold chain calls each tool, reads and writes apart, by tool name."""
    kinds = {t.name: t.kind for t in spec.tools}
    found: dict[str, dict[str, list[Context]]] = {"read": {}, "write": {}}
    for task in ok_tasks:
        for i, call in enumerate(gold_calls(task)):
            kind = "read" if kinds.get(call["name"]) == "read" else "write"
            found[kind].setdefault(call["name"], []).append((task, i))
    return found["read"], found["write"]


def time_gold_calls(
    env: Any, found: dict[str, dict[str, list[Context]]], n: int, seed: int = 0
) -> dict[tuple[str, str], tuple[Series, Series]]:
    """``n`` samples of every tool's gold calls, each after its chain's prefix, ok vs failed.

    All tools' samples run in one seeded shuffled order: a tool's samples never run back to
    back, so no row gains from caches that the episodes of other tasks (writes above all)
    would have emptied in a real mix of tasks.
    """
    jobs = [
        (kind, tool, contexts[j % len(contexts)])
        for kind, tools in found.items()
        for tool, contexts in tools.items()
        for j in range(n)
    ]
    random.Random(seed).shuffle(jobs)
    out = {
        (kind, tool): (Series(f"step {kind} {tool}"), Series(f"step {kind} {tool} (error path)"))
        for kind, tools in found.items()
        for tool in tools
    }
    for kind, tool, (task, i) in jobs:
        outputs = play_prefix(env, task, i)
        if outputs is None:
            continue
        action = gold_action(gold_calls(task)[i], outputs)
        (_, _, _, _, info), cpu, wall = timed(lambda a=action: env.step(a))
        ok, failed = out[kind, tool]
        (ok if info["tool_results"][0]["ok"] else failed).add(cpu, wall)
    return out


def time_verify(env: Any, tasks: list[Any], n: int) -> tuple[Series, Series]:
    """The final answer at the end of each task's replayed gold episode (cycled)."""
    ok, failed = Series("ok"), Series("failed")
    for j in range(n):
        task = tasks[j % len(tasks)]
        if play_prefix(env, task, len(gold_calls(task))) is None:
            continue
        action = answer_action(task)
        (_, reward, terminated, _, _), cpu, wall = timed(lambda a=action: env.step(a))
        (ok if terminated and reward >= 1.0 - 1e-9 else failed).add(cpu, wall)
    return ok, failed


def time_in_episode(
    env: Any, action: str, task: Any, n: int, warmup: int = 0, turns: int = 30
) -> Series:
    """``action`` repeated at turns ``warmup+1 .. warmup+turns`` of episodes of ``task``."""
    series = Series(action)
    while len(series.cpu) < n:
        env.reset(options={"task_id": task.id})
        for _ in range(warmup):
            env.step(action)
        for _ in range(min(turns, n - len(series.cpu))):
            series.add(*timed(lambda: env.step(action))[1:])
    return series


def run(args: argparse.Namespace) -> tuple[list[dict], str]:
    import os

    import orjson

    from agentworld_gym.env import AgentWorldEnv
    from agentworld_gym.registry import load_spec
    from agentworld_gym.replay import replay_gold
    from agentworld_gym.spec import EnvSpec

    spec = EnvSpec.load(args.env) if os.path.isdir(args.env) else load_spec(args.env)
    env = AgentWorldEnv(spec, split="all", max_turns=10**9)
    ok_tasks = [t for t in spec.tasks if gold_calls(t) and replay_gold(env, t).ok]
    reads, writes = _contexts(spec, ok_tasks)
    rows: list[dict] = [timer_floor().summary()]
    reset = Series("reset (seeded task draw)")
    for i in range(args.n):
        reset.add(*timed(lambda s=i: env.reset(seed=s))[1:])
    rows.append(reset.summary())
    cheapest: tuple[float, str] = (float("inf"), "")
    found = {
        "read": dict(list(reads.items())[: args.tools]),
        "write": dict(list(writes.items())[: args.tools]),
    }
    for (kind, tool), (ok, failed) in time_gold_calls(env, found, args.n).items():
        rows += [ok.summary()] + ([failed.summary()] if failed.cpu else [])
        if kind == "read" and ok.cpu:
            cheapest = min(cheapest, (ok.summary()["cpu_med"], tool))
    if cheapest[1]:
        task, i = reads[cheapest[1]][0]
        outputs = play_prefix(env, task, i)
        action = gold_action(gold_calls(task)[i], outputs or [])
        series = time_in_episode(env, action, task, args.n, warmup=LONG_EPISODE_TURN)
        series.name = f"step read {cheapest[1]}, turn {LONG_EPISODE_TURN}+"
        rows.append(series.summary())
    first_task = ok_tasks[0] if ok_tasks else spec.tasks[0]
    bad_args = orjson.dumps({"name": spec.tools[0].name, "arguments": {"no_such_arg": 1}})
    for label, action in (
        ("error path: invalid arguments", bad_args.decode()),
        ("error path: unknown tool", '{"name": "x"}'),
    ):
        series = time_in_episode(env, action, first_task, args.n)
        series.name = label
        rows.append(series.summary())
    for kind in ("rubric", "script"):
        tasks = [t for t in ok_tasks if t.verifier.get("type") == kind]
        if not tasks:
            continue
        n = args.n if kind == "rubric" else max(10, args.n // 50)
        ok, failed = time_verify(env, tasks, n)
        ok.name = f"final answer + verify {kind} (end of gold episode)"
        failed.name = f"final answer + verify {kind} (error path: reward < 1)"
        rows += [ok.summary()] + ([failed.summary()] if failed.cpu else [])
    records = sum(spec.database.count(c) for c in spec.database.collections)
    title = (
        f"{spec.gym_id}: {len(spec.tools)} tools, {records} records, "
        f"{len(ok_tasks)}/{len(spec.tasks)} gold chains replay to 1.0"
    )
    if cheapest[1]:
        title += f"; cheapest read step {cheapest[0]:.1f} µs CPU median ({cheapest[1]})"
    return rows, title


def main() -> None:
    parser = parser_for(__doc__)
    parser.add_argument("--env", default="notion", help="registered environment or env folder")
    parser.add_argument("--n", type=int, default=500, help="samples per row")
    parser.add_argument("--tools", type=int, default=32, help="at most this many tools per kind")
    parsed = parse(parser, __file__)
    if parsed is None:
        return
    args, pinned = parsed
    import agentworld_gym  # noqa: F401  (registers the catalog)

    with Load() as load:
        rows, title = run(args)
    print(f"\n{title}\n{package_line()}; {pinned}; µs per operation\n{load_line(load.as_dict())}\n")
    print(table(rows))
    write_json(args.json, rows, load.as_dict(), title=title, package=package_line())


if __name__ == "__main__":
    main()

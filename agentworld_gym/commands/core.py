"""``agentworld list | show | play | validate``: look at, try and check environments."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import list_envs, load_spec, resolve
from agentworld_gym.replay import validate


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="list registered environments")
    p.add_argument("--category", help="keep environments whose L1 category contains this text")
    p.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("show", help="show an environment's tools, collections and tasks")
    p.add_argument("env", help="environment: notion, notion-v0 or AgentWorld/notion-v0")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser(
        "play",
        help="type tool calls yourself and see the results",
        description=(
            "Play an episode by hand. Type a tool call as JSON "
            '({"name": "...", "arguments": {...}}) or as <tool_call>...</tool_call>; '
            "any text without a tool call is your final answer and ends the episode. "
            "Type :tools to list tools, :quit to stop."
        ),
    )
    p.add_argument("env")
    p.add_argument("--task", help="task id (default: drawn with --seed)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--split", default="all", help="train, test or all (default: all)")
    p.set_defaults(func=cmd_play)

    p = sub.add_parser(
        "validate",
        help="replay every gold solution (or attack every task) and report failures",
        description=(
            "Replay every gold solution through the gym API and report the tasks that do not "
            "earn 1.0. With --adversarial, run the adversarial gate instead: lazy and greedy "
            "policies (empty, echo, numbers, a guessed count or truth value, random calls, "
            "dump, a write dropped or altered) must get no success and, without work, less "
            "than 0.3; correct variants (the gold rephrased, an extra read, reads reordered) "
            "must still get 1.0. Prints the table per policy; exits 1 when a task fails "
            "(with --prune, removes the failing tasks from their catalog instead)."
        ),
    )
    p.add_argument("env", nargs="?", help="environment (omit with --all)")
    p.add_argument("--all", action="store_true", help="every registered environment")
    p.add_argument("--split", default="all")
    p.add_argument("--adversarial", action="store_true", help="run the adversarial gate")
    p.add_argument("--sample", type=int, help="gate a seeded sample of this many tasks")
    p.add_argument("--seed", type=int, default=0, help="seed of the sample and the adversaries")
    p.add_argument("--workers", type=int, default=0, help="processes (default: one per core)")
    p.add_argument("--verbose", "-v", action="store_true", help="print every task")
    p.add_argument(
        "--prune",
        action="store_true",
        help="with --adversarial: remove the tasks that fail the gate from their tasks.json "
        "and refresh index.json (after a new adversary; synthesis refuses such tasks itself)",
    )
    p.set_defaults(func=cmd_validate)


def cmd_list(args: argparse.Namespace) -> int:
    entries = list_envs(args.category)
    if args.json:
        for e in entries:
            row = {"id": e.gym_id, "name": e.name, "tools": e.n_tools, "tasks": e.n_tasks}
            print(json.dumps({**row, **e.taxonomy}))
        return 0
    print(f"{'environment':<44} {'tools':>5} {'tasks':>5}  category")
    for e in entries:
        print(f"{e.gym_id:<44} {e.n_tools:>5} {e.n_tasks:>5}  {e.taxonomy.get('l1', '')}")
    print(f"{len(entries)} environment(s)")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    entry = resolve(args.env)
    spec = load_spec(entry.gym_id)
    print(f"{spec.gym_id} — {spec.name}\n{spec.description}\n")
    print("taxonomy: " + " / ".join(spec.taxonomy.get(k, "") for k in ("l1", "l2", "l3")))
    print(f"folder:   {entry.folder}\n")
    print(f"tools ({len(spec.tools)}):")
    for t in spec.tools:
        params = ", ".join(t.parameters.get("properties", {}))
        print(f"  [{t.kind:<5}] {t.name}({params})")
    db = spec.database
    print(f"\ncollections ({len(db.collections)}):")
    for name in db.collections:
        print(f"  {name:<24} {db.count(name):>5} records")
    splits = Counter(t.split for t in spec.tasks)
    kinds = Counter(t.verifier.get("type") for t in spec.tasks)
    print(f"\ntasks ({len(spec.tasks)}): {dict(splits)} verifiers {dict(kinds)}")
    for t in spec.tasks:
        print(f"  {t.id:<28} [{t.split:<5} {t.verifier.get('type'):<6}] {t.instruction[:70]}")
    return 0


def cmd_play(args: argparse.Namespace) -> int:
    spec = load_spec(resolve(args.env).gym_id)
    env = AgentWorldEnv(spec, split=args.split)
    options = {"task_id": args.task} if args.task else None
    obs, info = env.reset(seed=args.seed, options=options)
    print(f"task {info['task_id']}: {obs}\n(:tools lists tools, :quit stops)")
    while True:
        try:
            line = input("action> ").strip()
        except EOFError:
            return 0
        if line == ":quit":
            return 0
        if line == ":tools":
            for tool in info["tools"]:
                fn = tool["function"]
                print(f"  {fn['name']}: {', '.join(fn['parameters'].get('properties', {}))}")
            continue
        obs, reward, terminated, truncated, step_info = env.step(line)
        print(obs)
        if terminated or truncated:
            print(json.dumps(step_info["verification"], indent=2, default=str))
            print(f"reward: {reward:.3f} ({'answered' if terminated else 'out of turns'})")
            return 0


def cmd_validate(args: argparse.Namespace) -> int:
    if args.all == bool(args.env):
        raise SystemExit("validate: name one environment, or pass --all")
    gym_ids = [e.gym_id for e in list_envs()] if args.all else [resolve(args.env).gym_id]
    if args.prune and not args.adversarial:
        raise SystemExit("validate: --prune goes with --adversarial")
    if args.adversarial:
        return _adversarial(gym_ids, args)
    failed = total = 0
    for gym_id in gym_ids:
        spec = load_spec(gym_id)
        results = validate(spec, args.split)
        total += len(results)
        for r in results:
            failed += not r.ok
            if args.verbose or not r.ok:
                mark = "ok  " if r.ok else "FAIL"
                print(f"{mark} {r.task_id:<32} reward={r.reward:.3f} calls={r.calls}")
                for err in r.errors:
                    print(f"       {err}")
                for b in r.verification.get("breakdown", []):
                    if not r.ok and b.get("met") is False:
                        print(f"       unmet: {b['criterion'][:70]} ({b['reason'][:120]})")
    where = gym_ids[0] if len(gym_ids) == 1 else f"{len(gym_ids)} environments"
    print(f"{where}: {total - failed}/{total} gold solutions replay to reward 1.0")
    sys.stdout.flush()
    return 1 if failed else 0


def _gate_job(job: tuple[str, list[int] | None, int, str]) -> list[Any]:
    from agentworld_gym.adversarial import gate_env

    gym_id, picks, seed, split = job
    spec = load_spec(gym_id)
    tasks = spec.tasks_in(split)
    chosen = tasks if picks is None else [tasks[i] for i in picks if i < len(tasks)]
    return gate_env(spec, chosen, seed)


def _adversarial(gym_ids: list[str], args: argparse.Namespace) -> int:
    import os
    import random

    from agentworld_gym.adversarial import table
    from agentworld_gym.registry import resolve as entry_of
    from agentworld_gym.synthesis.parallel import ordered_map

    jobs: list[tuple[str, list[int] | None, int, str]]
    if args.sample:
        pairs = [(g, i) for g in gym_ids for i in range(entry_of(g).n_tasks)]
        picked = sorted(random.Random(args.seed).sample(pairs, min(args.sample, len(pairs))))
        by_env: dict[str, list[int]] = {}
        for g, i in picked:
            by_env.setdefault(g, []).append(i)
        jobs = [(g, idx, args.seed, "all") for g, idx in by_env.items()]
    else:
        # an environment without tasks (synthesis found none solvable) has nothing to attack
        jobs = [(g, None, args.seed, args.split) for g in gym_ids if entry_of(g).n_tasks]
    workers = args.workers or os.cpu_count() or 1
    results = [r for batch in ordered_map(_gate_job, jobs, workers) for r in batch]
    failed = [r for r in results if not r.passed]
    for r in results:
        if args.verbose or not r.passed:
            print(f"{'ok  ' if r.passed else 'FAIL'} {r.env_id} {r.task_id}")
            for problem in r.problems:
                print(f"       {problem[:240]}")
    print(table(results))
    sys.stdout.flush()
    if failed and args.prune:
        _prune(failed)
        return 0
    return 1 if failed else 0


def _prune(failed: list[Any]) -> None:
    """Remove failing tasks from their environments' folders and refresh the indexes."""
    from agentworld_gym.synthesis.tasks.catalog import drop_tasks, update_index

    by_env: dict[str, set[str]] = {}
    for r in failed:
        by_env.setdefault(r.env_id, set()).add(r.task_id)
    roots = set()
    removed = 0
    for gym_id, drop in sorted(by_env.items()):
        entry = resolve(gym_id)
        removed += drop_tasks(entry.folder, drop)
        roots.add(Path(entry.root))
    for root in sorted(roots):
        update_index(root)
    print(f"pruned {removed} task(s) from {len(by_env)} environment(s)")

"""Replay every BFCL V4 multi-turn task's ground truth through our environments.

    python benchmarks/bfcl_replay.py [--categories base,miss_func] [--limit N] [--json]

For each task the ground-truth calls of each user turn are sent as one action, then a
plain-text answer ends the turn; BFCL's own checker scores the episode. The bar: every task
succeeds. Two more columns check fidelity: ``obs = BFCL`` counts tasks where every tool
observation equals what BFCL's own executor (``execute_multi_turn_func_call``) returns for
the same calls, and ``refused`` counts ground-truth calls our schema check refused. Tasks
that fail are listed with BFCL's reason. Needs ``bfcl-eval`` (see the README).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gymnasium as gym  # noqa: E402

import agentworld_gym  # noqa: E402, F401
from agentworld_gym.benchmarks_ext.bfcl import CATEGORIES, available, env_id  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--categories", default=",".join(CATEGORIES))
    parser.add_argument("--limit", type=int, help="at most this many tasks per category")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    if not available():
        print("bfcl-eval is not installed: pip install --no-deps bfcl-eval", file=sys.stderr)
        return 2
    from agentworld_gym.benchmarks_ext.bfcl.data import load_category
    from agentworld_gym.benchmarks_ext.bfcl.replay import bfcl_execution, gold_script, play

    rows, failures = [], []
    for category in args.categories.split(","):
        env = gym.make(env_id(category))
        tasks = list(load_category(category).values())[: args.limit]
        passed = same = refused = 0
        start = time.perf_counter()
        for task in tasks:
            script = gold_script(task)
            played = play(env, task.id, script)
            passed += played.success
            refused += len(played.refused)
            same += played.observations == bfcl_execution(task, script)
            if not played.success:
                bfcl = played.verification.get("bfcl", {})
                failures.append((task.id, bfcl.get("error_type"), bfcl.get("error_message")))
        env.close()
        rows.append(
            {
                "category": category,
                "tasks": len(tasks),
                "passed": passed,
                "obs_equal_bfcl": same,
                "refused_calls": refused,
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
    total = {
        "category": "all",
        **{k: sum(r[k] for r in rows) for k in ("tasks", "passed", "obs_equal_bfcl")},
        "refused_calls": sum(r["refused_calls"] for r in rows),
        "seconds": round(sum(r["seconds"] for r in rows), 2),
    }
    print(f"{'category':<14}{'tasks':>6}{'passed':>8}{'obs = BFCL':>12}{'refused':>9}{'s':>8}")
    for r in [*rows, total]:
        print(
            f"{r['category']:<14}{r['tasks']:>6}{r['passed']:>8}{r['obs_equal_bfcl']:>12}"
            f"{r['refused_calls']:>9}{r['seconds']:>8.2f}"
        )
    for task_id, kind, message in failures:
        print(f"FAILED {task_id}: {kind}: {message}")
    if args.json:
        print(json.dumps({"rows": [*rows, total], "failures": failures}, indent=2))
    return 0 if total["passed"] == total["tasks"] else 1


if __name__ == "__main__":
    sys.exit(main())

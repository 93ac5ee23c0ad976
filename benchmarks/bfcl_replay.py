"""Replay every BFCL V4 multi-turn task's ground truth through our environments.

    python benchmarks/bfcl_replay.py [--categories base,miss_func] [--limit N] [--wrong] [--json]

For each task the ground-truth calls of each user turn are sent as one action, then a
plain-text answer ends the turn; BFCL's own checker scores the episode. The bar: every task
succeeds. Two more columns check fidelity: ``obs = BFCL`` counts tasks where every tool
observation equals what BFCL's own executor (``execute_multi_turn_func_call``) returns for
the same calls, and ``refused`` counts ground-truth calls our schema check refused. Tasks
that fail are listed with BFCL's reason. ``--wrong`` also plays five spoilt versions of
each ground truth (:data:`~agentworld_gym.benchmarks_ext.bfcl.replay.MUTATIONS`) and counts
how often our verdict equals BFCL's checker run directly on the same calls. Needs
``bfcl-eval`` (see the README).
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
    parser.add_argument("--wrong", action="store_true", help="compare spoilt scripts too")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args(argv)
    if not available():
        print("bfcl-eval is not installed: pip install --no-deps bfcl-eval", file=sys.stderr)
        return 2
    from agentworld_gym.benchmarks_ext.bfcl.data import load_category
    from agentworld_gym.benchmarks_ext.bfcl.replay import (
        KNOWN_EXCEPTIONS,
        MUTATIONS,
        bfcl_execution,
        bfcl_pipeline_verdict,
        gold_script,
        play,
        wrong_script,
    )

    rows, failures = [], []
    for category in args.categories.split(","):
        env = gym.make(env_id(category))
        tasks = list(load_category(category).values())[: args.limit]
        passed = same = refused = wrong = agree = wrong_passed = 0
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
                continue
            for seed, kind in enumerate(MUTATIONS if args.wrong else ()):
                spoilt = wrong_script(script, kind, seed=seed)
                ours = play(env, task.id, spoilt).success
                wrong += 1
                wrong_passed += ours
                agree += ours == bfcl_pipeline_verdict(task, spoilt)
        env.close()
        rows.append(
            {
                "category": category,
                "tasks": len(tasks),
                "passed": passed,
                "obs_equal_bfcl": same,
                "refused_calls": refused,
                "wrong_scripts": wrong,
                "wrong_passed": wrong_passed,
                "wrong_agree_bfcl": agree,
                "seconds": round(time.perf_counter() - start, 2),
            }
        )
    total = {
        "category": "all",
        **{k: sum(r[k] for r in rows) for k in ("tasks", "passed", "obs_equal_bfcl")},
        **{
            k: sum(r[k] for r in rows)
            for k in ("refused_calls", "wrong_scripts", "wrong_passed", "wrong_agree_bfcl")
        },
        "seconds": round(sum(r["seconds"] for r in rows), 2),
    }
    head = f"{'category':<14}{'tasks':>6}{'passed':>8}{'obs = BFCL':>12}{'refused':>9}"
    if args.wrong:
        head += f"{'spoilt':>8}{'passed':>8}{'= BFCL':>8}"
    print(head + f"{'s':>8}")
    for r in [*rows, total]:
        line = (
            f"{r['category']:<14}{r['tasks']:>6}{r['passed']:>8}{r['obs_equal_bfcl']:>12}"
            f"{r['refused_calls']:>9}"
        )
        if args.wrong:
            line += f"{r['wrong_scripts']:>8}{r['wrong_passed']:>8}{r['wrong_agree_bfcl']:>8}"
        print(line + f"{r['seconds']:>8.2f}")
    for task_id, kind, message in failures:
        why = KNOWN_EXCEPTIONS.get(task_id)
        label = f"known BFCL data exception ({why})" if why else "FAILED"
        print(f"{task_id}: {label}: {kind}: {message}")
    if args.json:
        print(json.dumps({"rows": [*rows, total], "failures": failures}, indent=2))
    unexplained = [f for f in failures if f[0] not in KNOWN_EXCEPTIONS]
    return 1 if unexplained or total["wrong_agree_bfcl"] != total["wrong_scripts"] else 0


if __name__ == "__main__":
    sys.exit(main())

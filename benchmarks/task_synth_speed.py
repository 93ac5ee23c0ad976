"""Task-synthesis speed with the embedded default (templates, no LLM), verified tasks/minute.

    python benchmarks/task_synth_speed.py [--root envs_generated] [--envs 60] [--n 20]

Runs ``agentworld synth tasks`` (without writing) over the first ``--envs`` environments of a
catalog with 1 and 2 worker processes, and prints a table: environments, kept tasks by kind,
candidates judged, seconds, verified tasks per minute. "Verified" means each kept task passed
every acceptance check (gold 1.0 on two independent replays, empty answer and first-call-only
answer below 0.5), script verifiers included, run in the sandbox. A last row replays every
kept task of the 2-worker run through ``AgentWorldEnv`` (``replay_gold`` + ``score_answer``)
— the slower path the synthesizer does not need — to show the two agree.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.registry import DEFAULT_ROOT
from agentworld_gym.replay import replay_gold, score_answer
from agentworld_gym.spec import EnvSpec, TaskSpec
from agentworld_gym.synthesis.tasks.catalog import env_folders, synthesize_catalog
from agentworld_gym.synthesis.tasks.pipeline import TaskSynthConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--envs", type=int, default=60, help="environments (first N by name)")
    parser.add_argument("--n", type=int, default=20, help="tasks wanted per environment")
    parser.add_argument("--no-replay", action="store_true", help="skip the env replay row")
    args = parser.parse_args()
    folders = env_folders(args.root)[: args.envs]
    config = TaskSynthConfig(n=args.n)
    print(f"{len(folders)} environments under {args.root}, {args.n} tasks wanted each\n")
    head = (
        f"{'run':<28} {'envs':>5} {'graph':>6} {'program':>8} {'long':>5} "
        f"{'candidates':>10} {'seconds':>8} {'tasks/min':>10}"
    )
    print(head)
    print("-" * len(head))
    last = None
    for workers in (1, 2):
        report = synthesize_catalog(folders, config, workers=workers)
        t = report.totals()
        print(
            f"{f'synthesize, {workers} worker(s)':<28} {t['envs']:>5} "
            f"{t['by_kind'].get('graph', 0):>6} {t['by_kind'].get('program', 0):>8} "
            f"{t['long_horizon']['tasks']:>5} {t['candidates']:>10} {t['seconds']:>8.2f} "
            f"{t['tasks_per_minute']:>10}"
        )
        last = report
    if args.no_replay or last is None:
        return
    start = time.perf_counter()
    checked = failed = 0
    for res in last.envs:
        spec = EnvSpec.load(res.folder)
        spec.tasks = [TaskSpec(**t) for t in res.tasks]
        if not spec.tasks:
            continue
        env = AgentWorldEnv(spec, split="all")
        for task in spec.tasks:
            checked += 1
            ok = replay_gold(env, task).ok and score_answer(env, task, "") < 0.5
            failed += not ok
    seconds = time.perf_counter() - start
    print(
        f"{'replay via AgentWorldEnv':<28} {'':>5} {'':>6} {'':>8} {'':>5} "
        f"{checked:>10} {seconds:>8.2f} {round(60 * checked / seconds):>10}"
    )
    print(f"\n{checked - failed}/{checked} kept tasks replay to 1.0 and score < 0.5 empty")


if __name__ == "__main__":
    main()

"""``agentworld synth tasks`` and ``agentworld synth export-sft``: verified tasks, SFT data."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agentworld_gym.commands import subcommands
from agentworld_gym.registry import DEFAULT_ROOT


def register(sub: argparse._SubParsersAction) -> None:
    actions = subcommands(sub, "synth", "synthesize environments and tasks")
    p = actions.add_parser(
        "tasks",
        help="graph-walk and program tasks for catalog environments",
        description=(
            "Synthesize verifiable tasks: weighted walks over each environment's tool graph "
            "and programs with loops, branches, joins and aggregates (cross-checked by an "
            "independent script). Each task's verifier checks the exact values asked and the "
            "exact end state its gold solution makes. Every kept task replays its gold "
            "solution to reward 1.0, gives the same result under another task id and clock, "
            "scores below 0.5 with an empty answer or with the first call's output alone, "
            "and passes the adversarial gate (see agentworld validate --adversarial). Same "
            "--seed, same tasks.json bytes. Without --write nothing is written."
        ),
    )
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="ENV",
        help="environment id under --root, or a folder; repeatable",
    )
    where.add_argument(
        "--all",
        action="store_true",
        help="every synthesized environment under --root (hand-built ones such as notion "
        "only when named with --env)",
    )
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="catalog root")
    p.add_argument("--n", type=int, default=20, help="tasks per environment (default 20)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--write", action="store_true", help="write tasks.json and the index")
    p.add_argument("--workers", type=int, default=2, help="processes (output does not change)")
    p.add_argument("--program-share", type=float, default=0.5)
    p.add_argument(
        "--long-share",
        type=float,
        default=0.35,
        help="share of long-horizon tasks wanted (>= 8 chained, needed calls over >= 3 tools; most "
        "environments afford fewer, and the rest of the quota goes to ordinary tasks)",
    )
    p.add_argument(
        "--long-extra",
        type=int,
        default=10,
        help="long tasks of each long kind an environment that made one may add past its "
        "quota, in place of its latest ordinary ones (0: none)",
    )
    p.add_argument("--test-share", type=float, default=0.2)
    p.add_argument("--walk-length", type=int, nargs=2, default=[2, 6], metavar=("MIN", "MAX"))
    p.add_argument("--weak-scale", type=float, default=1.0, help="weight of weak edges")
    p.add_argument(
        "--independent-scale", type=float, default=0.5, help="weight of independent edges"
    )
    p.add_argument("--max-writes", type=int, default=2, help="write steps per graph walk")
    p.add_argument(
        "--distractors",
        type=int,
        default=0,
        help="near-miss records a program filter must tell apart",
    )
    p.add_argument(
        "--hide-ids",
        action="store_true",
        help="requests never state a record's key (the agent finds every record)",
    )
    p.add_argument(
        "--min-tasks",
        type=int,
        default=10,
        help="keep drawing while an environment has fewer tasks than this (default 10)",
    )
    p.add_argument(
        "--keep-existing",
        action="store_true",
        help="keep other synthesizers' tasks that fail acceptance (default: drop them on --write)",
    )
    p.add_argument("--llm-base-url", help="OpenAI-compatible server (optional)")
    p.add_argument("--llm-model", help="model name (with --llm-base-url)")
    p.add_argument("--llm-api-key", default=None)
    p.add_argument("--report", type=Path, help="write the full report as JSON here")
    p.add_argument("--quiet", "-q", action="store_true", help="no line per environment")
    p.set_defaults(func=cmd_synth_tasks)

    p = actions.add_parser(
        "export-sft",
        help="gold trajectories as OpenAI chat messages with tool calls (JSON lines)",
    )
    where = p.add_mutually_exclusive_group()
    where.add_argument("--env", action="append", default=[], metavar="ENV")
    where.add_argument("--all", action="store_true", help="every environment (the default)")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--split", default="train", help="train (default), test or all")
    p.add_argument(
        "--kind",
        action="append",
        default=[],
        help="only tasks of this kind (graph, program, manual); repeatable",
    )
    p.set_defaults(func=cmd_export_sft)


def _llm(args: argparse.Namespace):
    if not args.llm_base_url and not args.llm_model:
        return None
    from agentworld_gym.errors import ConfigError
    from agentworld_gym.llm import LLMConfig

    if not (args.llm_base_url and args.llm_model):
        raise ConfigError("--llm-base-url and --llm-model go together")
    return LLMConfig(
        model=args.llm_model, base_url=args.llm_base_url, api_key=args.llm_api_key, temperature=0.7
    )


def cmd_synth_tasks(args: argparse.Namespace) -> int:
    from agentworld_gym.synthesis.tasks.catalog import env_folders, synthesize_catalog
    from agentworld_gym.synthesis.tasks.pipeline import TaskSynthConfig

    config = TaskSynthConfig(
        n=args.n,
        seed=args.seed,
        program_share=args.program_share,
        long_share=args.long_share,
        long_extra=args.long_extra,
        test_share=args.test_share,
        walk_length=tuple(args.walk_length),
        weak_scale=args.weak_scale,
        independent_scale=args.independent_scale,
        max_writes=args.max_writes,
        distractors=args.distractors,
        hide_ids=args.hide_ids,
        min_tasks=args.min_tasks,
        prune_existing=not args.keep_existing,
    )
    folders = env_folders(args.root, [] if args.all else args.env, synthesized=args.all)

    def progress(res, i, n) -> None:
        if args.quiet:
            return
        r = res.report
        tried = sum(r.tried.values())
        line = (
            f"[{i}/{n}] {res.env_id:<44} kept {len(res.tasks):>3}/{sum(r.wanted.values())}"
            f"  candidates {tried:>4}  {r.seconds:6.2f}s"
        )
        print(line + (f"  ERROR {res.error}" if res.error else ""), flush=True)

    report = synthesize_catalog(
        folders,
        config,
        workers=args.workers,
        write=args.write,
        llm_config=_llm(args),
        progress=progress,
    )
    totals = report.totals()
    print(json.dumps(totals, indent=2))
    if args.report:
        full = {
            "totals": totals,
            "envs": [{**e.report.to_dict(), "error": e.error} for e in report.envs],
        }
        args.report.write_text(json.dumps(full, indent=2))
    if not args.write:
        print("(dry run: pass --write to save tasks.json)", file=sys.stderr)
    return 1 if totals["failed_envs"] else 0


def cmd_export_sft(args: argparse.Namespace) -> int:
    from agentworld_gym.spec import EnvSpec
    from agentworld_gym.synthesis.tasks.catalog import env_folders
    from agentworld_gym.synthesis.tasks.sft import export

    folders = env_folders(args.root, args.env)
    specs = (EnvSpec.load(f) for f in folders)
    report = export(specs, args.out, args.split, tuple(args.kind))
    print(
        f"{args.out}: {report.written} trajectories from {report.envs} environment(s); "
        f"{report.skipped} skipped (gold not replaying to 1.0)"
    )
    return 1 if report.skipped else 0

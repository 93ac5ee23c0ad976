"""``agentworld import-release PATH``: the published Agent-World environments as a catalog."""

from __future__ import annotations

import argparse
import json
import os

from agentworld_gym.release.importer import ImportOptions, default_catalog_root, import_release


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "import-release",
        help="import a local copy of the Agent-World release as a catalog root",
        description=(
            "Import the published Agent-World environments (a local copy of the release: "
            "environment_mix/index.json, <id>_step4_checkpoint.json, database folders and "
            "questions) into a separate catalog root with its own index.json. Tools run out of "
            "process in isolated workers; every verified tool chain is replayed and tasks whose "
            "chain does not reproduce are marked split 'unverified'. Rewards: the rubric's prose "
            "criteria by an LLM judge when one is configured, otherwise a deterministic "
            "approximation that compares the episode's final state and answer with the replay "
            "of the verified chain (ids and timestamps masked). Other processes find the "
            "catalog through AGENTWORLD_CATALOGS."
        ),
    )
    p.add_argument("path", help="the release folder (or its environment_mix/ folder)")
    p.add_argument("--only", nargs="+", metavar="ENV_ID", help="release env ids to import")
    p.add_argument(
        "--out", default=None, help=f"catalog root to write (default: {default_catalog_root()})"
    )
    p.add_argument("--split", default="train", help="split of reproducible tasks (default train)")
    p.add_argument("--clock", default=None, help="pinned clock, ISO 8601 (default 2026-08-05)")
    p.add_argument("--wall-s", type=float, help="per-call wall-clock limit of the tools (s)")
    p.add_argument("--cpu-s", type=float, help="per-call CPU-time limit of the tools (s)")
    p.add_argument("--memory-mb", type=int, help="address-space limit of a tool worker (MiB)")
    p.add_argument("--keep-going", action="store_true", help="skip broken environments")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(func=cmd_import_release)


def cmd_import_release(args: argparse.Namespace) -> int:
    options = ImportOptions(split=args.split, only=args.only, keep_going=args.keep_going)
    if args.out:
        options.out = args.out
    if args.clock:
        options.clock = args.clock
    limits = {"wall_s": args.wall_s, "cpu_s": args.cpu_s, "memory_mb": args.memory_mb}
    options.limits = {k: v for k, v in limits.items() if v is not None}
    report = import_release(args.path, options)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.table())
        n_ok = sum(e.reproducible for e in report.envs)
        n_tasks = sum(len(e.tasks) for e in report.envs)
        print(
            f"\nimported {len(report.envs)} environment(s) into {report.root}; "
            f"{n_ok}/{n_tasks} task chains reproduce"
        )
        catalogs = os.environ.get("AGENTWORLD_CATALOGS", "").split(os.pathsep)
        if str(report.root) not in catalogs:
            print(f"use them elsewhere with: export AGENTWORLD_CATALOGS={report.root}")
    return 1 if report.errors else 0

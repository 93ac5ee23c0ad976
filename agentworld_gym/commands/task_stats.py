"""``agentworld tasks stats``: six dimensions of the catalog's tasks per L1 category."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentworld_gym.commands import subcommands
from agentworld_gym.registry import DEFAULT_ROOT


def register(sub: argparse._SubParsersAction) -> None:
    p = subcommands(sub, "tasks", "inspect the catalog's tasks").add_parser(
        "stats",
        help="tool calls, distinct tools, depth, control flow, writes, answer type per L1",
        description=(
            "Measure every task's gold solution along six dimensions (tool calls, distinct "
            "tools, chain depth, control-flow constructs, writes, answer type), print the "
            "means per L1 category and draw them as PNG plots."
        ),
    )
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="catalog root")
    p.add_argument("--env", action="append", default=[], help="only these environments")
    p.add_argument("--split", default="all", help="train, test or all (default)")
    p.add_argument(
        "--out",
        type=Path,
        default=Path("task_stats"),
        help="folder for the PNG plots (default ./task_stats)",
    )
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=cmd_stats)


def cmd_stats(args: argparse.Namespace) -> int:
    from agentworld_gym.spec import EnvSpec
    from agentworld_gym.synthesis.tasks.catalog import env_folders
    from agentworld_gym.synthesis.tasks.stats import collect, format_table, plot, summarize

    specs = [EnvSpec.load(f) for f in env_folders(args.root, args.env)]
    rows = collect(specs, args.split)
    summary = summarize(rows)
    print(json.dumps(summary, indent=2) if args.json else format_table(summary))
    if not args.no_plots and rows:
        for path in plot(rows, args.out):
            print(f"wrote {path}")
    return 0

"""``agentworld evolve report RUN``: per-round success by category of a self-evolution run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from agentworld_gym.errors import ConfigError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "evolve",
        help="inspect self-evolution runs",
        description="Inspect a self-evolution run (start one with experiments/evolve.py).",
    )
    verbs = p.add_subparsers(dest="verb", metavar="VERB", required=True)
    r = verbs.add_parser(
        "report",
        help="print per-round success by L1 category and plot it",
        description=(
            "Print per-round evaluation success by L1 category, the weak environments and the "
            "new versions of every finished round, and write success_by_round.png."
        ),
    )
    r.add_argument("run", help="the run folder (the out_dir given to run_evolution)")
    r.add_argument("--plot", help="where to write the PNG (default: RUN/success_by_round.png)")
    r.add_argument("--no-plot", action="store_true", help="print only")
    r.add_argument("--json", action="store_true", help="print the round summaries as JSON")
    r.set_defaults(func=cmd_report)


def cmd_report(args: argparse.Namespace) -> int:
    from agentworld_gym.evolution.report import format_run_report, plot_run, round_summaries

    run = Path(args.run)
    if not run.is_dir():
        raise ConfigError(f"{run} is not a run folder")
    if args.json:
        print(json.dumps(round_summaries(run), indent=2, default=str))
    else:
        print(format_run_report(run))
    if not args.no_plot:
        path = plot_run(run, args.plot)
        if path is not None:
            print(f"plot: {path}")
    return 0

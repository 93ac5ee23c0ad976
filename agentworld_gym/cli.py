"""``agentworld``: the command line.

Each module in :mod:`agentworld_gym.commands` contributes subcommands through a
``register(subparsers)`` function, so a feature adds its commands without touching this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from agentworld_gym import commands
from agentworld_gym.errors import AgentWorldError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agentworld",
        description="Stateful, verifiable tool-use environments for LLM agents.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except AgentWorldError as exc:
        print(f"agentworld {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

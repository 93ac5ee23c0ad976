"""Subcommands of the ``agentworld`` CLI: each module defines ``register(subparsers)``."""

from __future__ import annotations

import argparse


def subcommands(
    sub: argparse._SubParsersAction, name: str, help: str
) -> argparse._SubParsersAction:
    """The subparsers of command group ``name`` (``agentworld synth ...``), created once and
    shared by every module that adds a subcommand to the group."""
    group = sub.choices.get(name)
    if group is None:
        group = sub.add_parser(name, help=help)
    for action in group._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return group.add_subparsers(dest=f"{name}_command", metavar="WHAT", required=True)

"""Subcommands of the ``agentworld`` CLI: each module defines ``register(subparsers)``."""

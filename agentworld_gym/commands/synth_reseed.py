"""``agentworld synth reseed``: field-appropriate values in existing worlds' seed records."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from agentworld_gym.commands import subcommands
from agentworld_gym.errors import ConfigError
from agentworld_gym.registry import DEFAULT_ROOT


def register(sub: argparse._SubParsersAction) -> None:
    actions = subcommands(sub, "synth", "synthesize environments and tasks")
    p = actions.add_parser(
        "reseed",
        help="replace placeholder values in environments' db/*.json with realistic ones",
        description=(
            "Rewrite the placeholder-shaped or ill-fitting string values of every seed record "
            '("Golden lagoon 951", two random words for a secret, word salad for a '
            "description) with field-appropriate ones, keeping keys, references, values tasks "
            "name, enums and categorical fields byte-identical, and order each record's dates. "
            "Then filler keys, references, categories and scopes ('cold-cultural-43', "
            "resourceGroupName 'enough father') are renamed consistently in every collection, "
            "unless a task the task synthesizer did not make names them; an environment whose "
            "gets or protected gold chains stop working keeps the leaf-only reseed. "
            "A dry run unless --write; prints the changed leaves per environment."
        ),
    )
    p.add_argument("envs", nargs="*", metavar="ENV", help="environment ids or folders")
    p.add_argument("--all", action="store_true", help="every environment under --root")
    p.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="catalog root")
    p.add_argument("--write", action="store_true", help="write the files (default: dry run)")
    p.add_argument("--seed", type=int, default=0, help="seed of the new values (default 0)")
    p.add_argument("--workers", type=int, default=min(8, os.cpu_count() or 1), help="processes")
    p.add_argument("--examples", type=int, default=3, help="changes shown per env (default 3)")
    p.add_argument(
        "--no-rename", action="store_true", help="leaf-only: no consistent renames of keys"
    )
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the report as JSON")
    p.set_defaults(func=cmd_reseed)


def cmd_reseed(args: argparse.Namespace) -> int:
    from agentworld_gym.synthesis.envs.reseed import env_folders, reseed_catalog

    if not args.all and not args.envs:
        raise ConfigError("name environments to reseed, or pass --all")
    folders = env_folders(args.root, None if args.all else args.envs)
    start = time.perf_counter()
    totals = {
        "envs": 0,
        "leaves": 0,
        "changed": 0,
        "dates_ordered": 0,
        "skipped": 0,
        "renamed": 0,
        "rename_leaves": 0,
        "fallbacks": 0,
    }
    report = []
    rename = not args.no_rename
    for r in reseed_catalog(folders, args.seed, args.write, args.workers, args.examples, rename):
        report.append(r.to_dict())
        totals["envs"] += 1
        if r.skipped:
            totals["skipped"] += 1
            print(f"{r.env}: skipped ({r.skipped})")
            continue
        totals["leaves"] += r.leaves
        totals["changed"] += r.changed
        totals["dates_ordered"] += r.dates_ordered
        totals["renamed"] += r.renamed
        totals["rename_leaves"] += r.rename_leaves
        totals["fallbacks"] += bool(r.fallback)
        print(
            f"{r.env}: {r.changed} of {r.leaves} string leaves, {r.dates_ordered} dates ordered, "
            f"{r.renamed} values renamed ({r.rename_leaves} leaves)"
        )
        for coll, path, before, after in r.examples:
            print(f"    {coll}.{path}: {before!r} -> {after!r}")
        for where, before, after in r.renames:
            print(f"    renamed {where}: {before!r} -> {after!r}")
        if r.fallback:
            print(f"    renames dropped (leaf-only reseed kept): {r.fallback}")
    mode = "written" if args.write else "dry run"
    print(
        f"{mode}: {totals['changed']} of {totals['leaves']} leaves in {totals['envs']} "
        f"environments ({totals['skipped']} skipped), {totals['dates_ordered']} dates ordered, "
        f"{totals['renamed']} values renamed consistently ({totals['rename_leaves']} leaves), "
        f"{totals['fallbacks']} environments fell back to leaf-only, "
        f"{time.perf_counter() - start:.1f}s"
    )
    if args.json:
        args.json.write_text(json.dumps({"totals": totals, "envs": report}, indent=2) + "\n")
    return 0

"""``agentworld catalog stats``: what the catalog holds, and what synthesis left out and why.

Reads ``index.json`` and, when present, ``synthesis_report.json`` of a catalog root; prints
environments and tools per L1/L2 category, tools and records per environment, rejection
reasons, and how well-known providers fared (a weak spec is named, not silently skipped).
``--png`` also draws the same numbers (needs matplotlib; without it only the text is printed).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.registry import DEFAULT_ROOT, read_index

REPORT_FILE = "synthesis_report.json"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("catalog", help="catalog statistics")
    catalog = p.add_subparsers(dest="catalog_command", metavar="ACTION", required=True)
    s = catalog.add_parser("stats", help="environments, tools and rejections per category")
    s.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="catalog root folder")
    s.add_argument("--png", type=Path, help="also draw the statistics into this PNG file")
    s.add_argument("--top", type=int, default=12, help="rows of the longer tables (default 12)")
    s.set_defaults(func=cmd_stats)


def _records(folder: Path) -> int:
    db = folder / "db"
    if not db.is_dir():
        return 0
    return sum(
        len(data)
        for p in db.glob("*.json")
        if isinstance(data := orjson.loads(p.read_bytes()), list)
    )


def collect(root: Path) -> dict[str, Any]:
    """Every number the stats command prints or draws."""
    entries = read_index(root)
    report_path = root / REPORT_FILE
    report = orjson.loads(report_path.read_bytes()) if report_path.is_file() else {}
    synthesized = report.get("envs", {})
    records = {
        e.id: synthesized[e.id]["records"] if e.id in synthesized else _records(e.folder)
        for e in entries
    }
    providers = Counter(v["provider"] for v in synthesized.values())
    l1_envs, l1_tools, l2_envs = Counter(), Counter(), Counter()
    for e in entries:
        l1 = e.taxonomy.get("l1", "?")
        l1_envs[l1] += 1
        l1_tools[l1] += e.n_tools
        l2_envs[f"{l1[:5]} {e.taxonomy.get('l2', '?')}"] += 1
    return {
        "envs": len(entries),
        "tools": sum(e.n_tools for e in entries),
        "tasks": sum(e.n_tasks for e in entries),
        "tools_per_env": sorted(e.n_tools for e in entries),
        "records_per_env": sorted(records.values()),
        "l1_envs": l1_envs,
        "l1_tools": l1_tools,
        "l2_envs": l2_envs,
        "providers": providers,
        "rejections": report.get("rejection_reasons", {}),
        "dropped_tools": report.get("dropped_tools", {}),
        "famous": report.get("famous", {}),
        "specs": report.get("specs"),
        "source": report.get("source"),
    }


def _summary(values: list[int]) -> str:
    if not values:
        return "-"
    return (
        f"min {values[0]}, median {statistics.median(values):g}, "
        f"mean {statistics.fmean(values):.1f}, max {values[-1]}"
    )


def print_stats(s: dict[str, Any], top: int = 12, out=sys.stdout) -> None:
    w = out.write
    n = max(1, s["envs"])
    w(f"catalog: {s['envs']} environments, {s['tools']} tools, {s['tasks']} tasks")
    if s["source"]:
        w(f"  (synthesized from {s['specs']} specs of {s['source']})")
    w("\n\n")
    w(f"{'L1 category':<44} {'envs':>5} {'share':>6} {'tools':>6}\n")
    for l1 in sorted(s["l1_envs"]):
        w(f"{l1:<44} {s['l1_envs'][l1]:>5} {s['l1_envs'][l1] / n:>6.1%} {s['l1_tools'][l1]:>6}\n")
    w(f"\ntop L2 groups ({len(s['l2_envs'])} used):\n")
    for l2, count in s["l2_envs"].most_common(top):
        w(f"  {l2:<56} {count:>5}\n")
    w(f"\ntools per env:   {_summary(s['tools_per_env'])}\n")
    w(f"records per env: {_summary(s['records_per_env'])}\n")
    if s["providers"]:
        name, count = s["providers"].most_common(1)[0]
        w(f"largest provider share: {name} {count} ({count / n:.1%})\n")
    if s["rejections"]:
        w("\nrejected specs/environments by reason:\n")
        for reason, count in list(s["rejections"].items())[:top]:
            w(f"  {reason:<44} {count:>6}\n")
    if s["dropped_tools"]:
        w("\noperations not compiled into tools, by reason:\n")
        for reason, count in Counter(s["dropped_tools"]).most_common(top):
            w(f"  {reason[:60]:<60} {count:>6}\n")
    if s["famous"]:
        w("\nwell-known providers (envs kept from specs; weak specs are named here):\n")
        for provider, info in sorted(s["famous"].items()):
            why = ", ".join(
                f"{k} {v}" for k, v in sorted(info["rejections"].items(), key=lambda kv: -kv[1])[:3]
            )
            w(
                f"  {provider:<18} specs {info['specs']:>4}  envs {info['envs']:>4}  "
                f"tools {info['tools']:>5}  {('rejected: ' + why) if why else ''}\n"
            )


def draw(s: dict[str, Any], path: Path, top: int = 12) -> bool:
    """Draw the statistics as one PNG; ``False`` when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(2, 3, figsize=(20, 11))
    l1 = sorted(s["l1_envs"])
    axes[0, 0].barh(l1, [s["l1_envs"][k] for k in l1])
    axes[0, 0].set_title("environments per L1")
    axes[0, 1].barh(l1, [s["l1_tools"][k] for k in l1])
    axes[0, 1].set_title("tools per L1")
    axes[0, 1].set_yticklabels([])
    l2 = s["l2_envs"].most_common(top * 2)
    axes[0, 2].barh([k[:40] for k, _ in l2][::-1], [v for _, v in l2][::-1])
    axes[0, 2].set_title("environments per L2 (top)")
    axes[1, 0].hist(s["tools_per_env"], bins=30)
    axes[1, 0].set_title("tools per environment")
    axes[1, 1].hist(s["records_per_env"], bins=30)
    axes[1, 1].set_title("records per environment")
    reasons = list(s["rejections"].items())[:top]
    axes[1, 2].barh([k[:40] for k, _ in reasons][::-1], [v for _, v in reasons][::-1])
    axes[1, 2].set_title("rejections by reason")
    fig.suptitle(f"{s['envs']} environments, {s['tools']} tools, {s['tasks']} tasks")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def cmd_stats(args: argparse.Namespace) -> int:
    stats = collect(args.root)
    print_stats(stats, args.top)
    if args.png:
        if draw(stats, args.png, args.top):
            print(f"\nwrote {args.png}")
        else:
            print("\n(matplotlib is not installed: no PNG drawn)")
    return 0

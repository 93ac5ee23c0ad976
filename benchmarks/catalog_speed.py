"""Catalog scale: import time, ``gym.make`` time per environment, catalog size on disk.

    python benchmarks/catalog_speed.py [--sample 200] [--imports 5]

``import agentworld_gym`` is timed in fresh interpreters (it registers the whole catalog);
``gym.make`` is timed on a deterministic sample of catalog environments plus the ones with
the most tools and records, each made for the first time in the process (the cost a user
pays: reading the folder, compiling the tools, loading the database). Targets: import
< 0.5 s, make < 50 ms for any catalog environment, catalog < 100 MB.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym

import agentworld_gym  # noqa: F401  (registers the catalog)
import agentworld_gym.ops  # noqa: F401  (the "op" tool runtime, until the package imports it)
from agentworld_gym.registry import DEFAULT_ROOT, list_envs

IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import agentworld_gym; print(time.perf_counter() - t)"
)


def import_times(n: int) -> list[float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return sorted(
        float(
            subprocess.run(
                [sys.executable, "-c", IMPORT_SNIPPET],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
        )
        for _ in range(n)
    )


def catalog_size(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def make_times(ids: list[str]) -> dict[str, float]:
    out = {}
    for gym_id in ids:
        t0 = time.perf_counter()
        env = gym.make(gym_id)
        out[gym_id] = time.perf_counter() - t0
        env.close()
    return out


def _row(name: str, values: list[float], unit: float = 1e3, suffix: str = "ms") -> str:
    values = sorted(values)
    p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
    return (
        f"{name:<34} {statistics.median(values) * unit:>9.1f} {p95 * unit:>9.1f} "
        f"{values[-1] * unit:>9.1f}  {suffix}  (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", type=int, default=200, help="environments to make")
    parser.add_argument("--imports", type=int, default=5, help="fresh imports to time")
    args = parser.parse_args()

    entries = list_envs()
    step = max(1, len(entries) // max(1, args.sample))
    sample = [e.gym_id for e in entries[::step]][: args.sample]
    largest = sorted(entries, key=lambda e: -e.n_tools)[:5]
    sample += [e.gym_id for e in largest if e.gym_id not in sample]

    size, n_files = catalog_size(DEFAULT_ROOT)
    imports = import_times(args.imports)
    makes = make_times(sample)
    slowest = max(makes, key=makes.get)

    print(
        f"catalog: {len(entries)} environments, {sum(e.n_tools for e in entries)} tools, "
        f"{size / 1e6:.1f} MB in {n_files} files ({DEFAULT_ROOT})\n"
    )
    print(f"{'measure':<34} {'median':>9} {'p95':>9} {'max':>9}")
    print(_row("import agentworld_gym", imports))
    print(_row("gym.make (first time)", list(makes.values())))
    print(_row("gym.make, 5 largest envs", [makes[e.gym_id] for e in largest]))
    print(f"\nslowest make: {slowest} ({makes[slowest] * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()

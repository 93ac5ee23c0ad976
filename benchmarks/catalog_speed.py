"""Catalog scale: import time, ``gym.make`` time per environment, catalog size on disk.

    python benchmarks/catalog_speed.py [--sample 200] [--imports 5] [--compare ../other]

``import agentworld_gym`` is timed in fresh interpreters (it registers the whole catalog).
``gym.make`` is timed on a deterministic sample of catalog environments plus the ones with
the most tools, each made for the first time, all in one process, as a user's script would:
nothing is imported beforehand, so the first make pays for loading the tool runtime (its own
row says how much). Each make's garbage-collector pauses are recorded, since a generation-2
collection grows with everything loaded so far and lands on whichever make triggers it.
Targets: import < 0.5 s; every make <= 20 ms (max over the sample); catalog < 100 MB.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchlib import (
    Load,
    Series,
    load_line,
    package_line,
    parse,
    parser_for,
    table,
    write_json,
)

IMPORT_SNIPPET = (
    "import time; w = time.perf_counter_ns(); c = time.process_time_ns(); "
    "import agentworld_gym; print(time.process_time_ns() - c, time.perf_counter_ns() - w)"
)
TARGET_MB = 100.0
TARGET_MAKE_MS = 20.0


def import_times(n: int) -> Series:
    """Fresh interpreters, so nothing is cached in the process (the OS file cache is)."""
    series = Series("import agentworld_gym (fresh interpreter)")
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(n):
        out = subprocess.run(
            [sys.executable, "-c", IMPORT_SNIPPET],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        ).stdout.split()
        series.add(int(out[0]), int(out[1]))
    return series


def catalog_size(root: Path) -> tuple[int, int, int]:
    """Bytes, files, and bytes of the database folders."""
    files = [p for p in root.rglob("*") if p.is_file()]
    db = sum(p.stat().st_size for p in files if "db" in p.relative_to(root).parts[1:2])
    return sum(p.stat().st_size for p in files), len(files), db


class GCPauses:
    """Collector pauses as they happen (``gc.callbacks``): total ns and gen-2 count."""

    def __init__(self) -> None:
        self.ns = self.gen2 = 0
        self._t0 = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._t0 = time.perf_counter_ns()
        else:
            self.ns += time.perf_counter_ns() - self._t0
            self.gen2 += info.get("generation") == 2


def make_times(ids: list[str]) -> dict[str, tuple[int, int, int, int]]:
    """``gym_id -> (cpu_ns, wall_ns, gc_pause_ns, gen2 collections)`` of its first make."""
    import gymnasium as gym

    pauses = GCPauses()
    gc.callbacks.append(pauses)
    out = {}
    try:
        for gym_id in ids:
            ns, gen2 = pauses.ns, pauses.gen2
            c0, w0 = time.thread_time_ns(), time.perf_counter_ns()
            env = gym.make(gym_id)
            w1, c1 = time.perf_counter_ns(), time.thread_time_ns()
            out[gym_id] = (c1 - c0, w1 - w0, pauses.ns - ns, pauses.gen2 - gen2)
            env.close()
    finally:
        gc.callbacks.remove(pauses)
    return out


def main() -> None:
    parser = parser_for(__doc__)
    parser.add_argument("--sample", type=int, default=200, help="environments to make")
    parser.add_argument("--imports", type=int, default=5, help="fresh imports to time")
    parsed = parse(parser, __file__)
    if parsed is None:
        return
    args, pinned = parsed
    imports = import_times(args.imports)

    import agentworld_gym  # noqa: F401  (registers the catalog; the op runtime is not loaded)
    from agentworld_gym.registry import DEFAULT_ROOT, list_envs

    entries = list_envs()
    step = max(1, len(entries) // max(1, args.sample))
    sample = [e.gym_id for e in entries[::step]][: args.sample]
    largest = sorted(entries, key=lambda e: -e.n_tools)[:5]
    sample += [e.gym_id for e in largest if e.gym_id not in sample]
    with Load() as load:
        makes = make_times(sample)
    size, n_files, db_bytes = catalog_size(DEFAULT_ROOT)

    all_makes, big = Series("gym.make, first time, all sampled"), Series("gym.make, 5 largest")
    first = Series(f"gym.make, first in the process ({sample[0]})")
    rest = Series("gym.make, all but the first")
    for gym_id, (cpu, wall, _, _) in makes.items():
        all_makes.add(cpu, wall)
        (first if gym_id == sample[0] else rest).add(cpu, wall)
        if gym_id in {e.gym_id for e in largest}:
            big.add(cpu, wall)
    slowest = max(makes, key=lambda k: makes[k][1])
    cpu, wall, pause, gen2 = makes[slowest]
    total_pause = sum(v[2] for v in makes.values()) / 1e6
    rows = [imports.summary(), all_makes.summary(), first.summary(), rest.summary(), big.summary()]
    over = (size / 1e6 / TARGET_MB - 1) * 100
    verdict = f"{over:.0f}% over" if over > 0 else f"{-over:.0f}% under"
    print(
        f"\ncatalog: {len(entries)} environments, {sum(e.n_tools for e in entries)} tools, "
        f"{size / 1e6:.1f} MB in {n_files} files (databases {db_bytes / 1e6:.1f} MB) at "
        f"{DEFAULT_ROOT}; target < {TARGET_MB:.0f} MB: {verdict}"
    )
    print(f"{package_line()}; {pinned}; µs per operation\n{load_line(load.as_dict())}\n")
    print(table(rows))
    print(
        f"\ngym.make max over {len(makes)} envs in one process: {wall / 1e6:.1f} ms wall, "
        f"{cpu / 1e6:.1f} ms CPU ({slowest}; GC pauses inside it {pause / 1e6:.1f} ms, "
        f"{gen2} gen-2 collections); target <= {TARGET_MAKE_MS:.0f} ms: "
        f"{'met' if wall / 1e6 <= TARGET_MAKE_MS else 'missed'}"
    )
    print(f"GC pauses during all makes: {total_pause:.1f} ms in total")
    write_json(
        args.json,
        rows,
        load.as_dict(),
        package=package_line(),
        catalog_mb=size / 1e6,
        make_max_ms=wall / 1e6,
    )


if __name__ == "__main__":
    main()

"""Shared timing for the benchmark scripts: CPU and wall time per sample, median / p95, the
machine's load while they ran, and alternating A/B runs of two checkouts (``--compare``).

Why CPU time: on a small shared machine, wall time swings 2-5x between identical runs
(another process takes the core), while the CPU time a call burns in its own thread does
not. Both are printed; ratios between checkouts are taken on medians of alternating rounds.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
"""This checkout (the one ``--compare`` calls "this")."""


def timed(fn: Callable[[], Any]) -> tuple[Any, int, int]:
    """``(result, cpu_ns, wall_ns)`` of one call; CPU time is this thread's only."""
    c0 = time.thread_time_ns()
    w0 = time.perf_counter_ns()
    result = fn()
    w1 = time.perf_counter_ns()
    c1 = time.thread_time_ns()
    return result, c1 - c0, w1 - w0


def _pct(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(len(ordered) * q))])


@dataclass
class Series:
    """Samples of one named operation, in nanoseconds."""

    name: str
    cpu: list[int] = field(default_factory=list)
    wall: list[int] = field(default_factory=list)

    def add(self, cpu_ns: int, wall_ns: int) -> None:
        self.cpu.append(cpu_ns)
        self.wall.append(wall_ns)

    def extend(self, other: Series) -> None:
        self.cpu += other.cpu
        self.wall += other.wall

    def summary(self) -> dict[str, Any]:
        """Microseconds: median, p95 and mean of CPU and wall time."""
        if not self.cpu:
            return {"name": self.name, "n": 0}
        return {
            "name": self.name,
            "n": len(self.cpu),
            "cpu_med": statistics.median(self.cpu) / 1e3,
            "cpu_p95": _pct(self.cpu, 0.95) / 1e3,
            "cpu_mean": statistics.fmean(self.cpu) / 1e3,
            "wall_med": statistics.median(self.wall) / 1e3,
            "wall_p95": _pct(self.wall, 0.95) / 1e3,
            "wall_mean": statistics.fmean(self.wall) / 1e3,
        }


def timer_floor(n: int = 2000) -> Series:
    """What timing an empty call costs: the floor under every row."""
    series = Series("timer floor (empty call)")
    for _ in range(n):
        series.add(*timed(lambda: None)[1:])
    return series


# -- machine load -----------------------------------------------------------------------------
def _proc_stat() -> tuple[int, int] | None:
    """``(busy, total)`` jiffies over all cores, or None off Linux."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except OSError:
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is already inside user
    return total - idle, total


class Load:
    """The machine's load during a block: loadavg before and after, and how busy all cores
    were (from ``/proc/stat``), split into this process and everyone else."""

    def __enter__(self) -> Load:
        self.loadavg_start = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
        self.stat_start = _proc_stat()
        self.own_start = time.process_time()
        self.wall_start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self.wall_start
        self.own = time.process_time() - self.own_start
        self.loadavg_end = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
        stat_end = _proc_stat()
        self.busy = None
        if self.stat_start and stat_end and stat_end[1] > self.stat_start[1]:
            busy = stat_end[0] - self.stat_start[0]
            self.busy = busy / (stat_end[1] - self.stat_start[1])

    def as_dict(self) -> dict[str, Any]:
        cores = os.cpu_count() or 1
        own_cores = self.own / self.wall if self.wall else 0.0
        busy_cores = self.busy * cores if self.busy is not None else None
        return {
            "cores": cores,
            "loadavg_start": self.loadavg_start[0],
            "loadavg_end": self.loadavg_end[0],
            "busy": self.busy,
            "own_cores": own_cores,
            "others_cores": None if busy_cores is None else max(0.0, busy_cores - own_cores),
            "seconds": self.wall,
        }


def load_line(load: dict[str, Any]) -> str:
    """One line for the table's header."""
    text = (
        f"load: loadavg(1m) {load['loadavg_start']:.2f} -> {load['loadavg_end']:.2f} on "
        f"{load['cores']} cores over {load['seconds']:.1f} s"
    )
    if load.get("busy") is not None:
        text += (
            f"; CPU busy {load['busy'] * 100:.0f}% (this process {load['own_cores']:.2f} "
            f"cores, others {load['others_cores']:.2f} cores)"
        )
    return text


# -- tables ------------------------------------------------------------------------------------
HEADER = (
    f"| {'operation':<60} | {'n':>6} | {'CPU med':>8} | {'CPU p95':>8} | {'CPU mean':>8} "
    f"| {'wall med':>8} | {'wall p95':>8} |"
)


def table(rows: Iterable[dict[str, Any]]) -> str:
    """A Markdown table of summaries (µs)."""
    lines = [HEADER, "|" + "|".join("-" * (len(c) + 0) for c in HEADER.split("|")[1:-1]) + "|"]
    for r in rows:
        if not r.get("n"):
            lines.append(
                f"| {r['name']:<60} | {0:>6} | {'-':>8} | {'-':>8} | {'-':>8} "
                f"| {'-':>8} | {'-':>8} |"
            )
            continue
        lines.append(
            f"| {r['name']:<60} | {r['n']:>6} | {r['cpu_med']:>8.1f} | {r['cpu_p95']:>8.1f} "
            f"| {r['cpu_mean']:>8.1f} | {r['wall_med']:>8.1f} | {r['wall_p95']:>8.1f} |"
        )
    return "\n".join(lines)


# -- command line ------------------------------------------------------------------------------
def add_common_args(parser: argparse.ArgumentParser) -> None:
    """``--pin``, ``--json``, ``--compare``, ``--ab-rounds``: the same in every script."""
    parser.add_argument(
        "--pin", action="store_true", help="pin this process to one CPU (off: the OS schedules)"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON here")
    parser.add_argument(
        "--compare",
        metavar="CHECKOUT",
        help="run this same script on this checkout and on CHECKOUT (PYTHONPATH), in "
        "alternating rounds, and print the ratios",
    )
    parser.add_argument(
        "--ab-rounds", type=int, default=4, help="A/B rounds with --compare (order alternates)"
    )


def parser_for(doc: str) -> argparse.ArgumentParser:
    """A script's parser: its docstring's first line as description, the rest as epilog."""
    return argparse.ArgumentParser(
        description=doc.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=doc.split("\n", 2)[2],
    )


def parse(parser: argparse.ArgumentParser, script: str) -> tuple[argparse.Namespace, str] | None:
    """Add the common options and parse. ``--compare`` runs its A/B rounds here and gives
    None (the script is done); otherwise the arguments and the pinning line."""
    add_common_args(parser)
    args = parser.parse_args()
    if args.compare:
        run_compare(script, sys.argv[1:], args.compare, args.ab_rounds)
        return None
    return args, pin_if_asked(args)


def pin_if_asked(args: argparse.Namespace) -> str:
    """Pin to the first allowed CPU with ``--pin``; say which."""
    if args.pin and hasattr(os, "sched_setaffinity"):
        cpu = sorted(os.sched_getaffinity(0))[0]
        os.sched_setaffinity(0, {cpu})
        return f"pinned to CPU {cpu}"
    return "not pinned"


def package_line() -> str:
    """Which ``agentworld_gym`` this process imported (``--compare`` must show two)."""
    import agentworld_gym

    return f"agentworld_gym from {Path(agentworld_gym.__file__).parent.parent}"


def write_json(path: str | None, rows: list[dict[str, Any]], load: dict[str, Any], **meta: Any):
    if path:
        Path(path).write_text(json.dumps({"rows": rows, "load": load, "meta": meta}, indent=1))


def _strip(argv: list[str], options: dict[str, bool]) -> list[str]:
    """``argv`` without the options named (``True``: the option takes a value)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in options:
            skip = options[name] and "=" not in arg
            continue
        out.append(arg)
    return out


def run_compare(script: str, argv: list[str], other: str, rounds: int) -> None:
    """Run ``script`` with ``argv`` on this checkout and ``other`` in alternating order
    (A B, B A, A B, ...) and print per-row medians over rounds and other/this ratios."""
    argv = _strip(argv, {"--compare": True, "--ab-rounds": True, "--json": True})
    trees = {"this": str(ROOT), "other": str(Path(other).resolve())}
    results: dict[str, list[dict[str, Any]]] = {"this": [], "other": []}
    for r in range(rounds):
        order = ["this", "other"] if r % 2 == 0 else ["other", "this"]
        for name in order:
            with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
                out = tmp.name
            env = {
                **os.environ,
                "PYTHONPATH": os.pathsep.join(
                    [trees[name], *filter(None, [os.environ.get("PYTHONPATH")])]
                ),
            }
            proc = subprocess.run(
                [sys.executable, script, *argv, "--json", out],
                env=env,
                capture_output=True,
                text=True,
            )
            if proc.returncode != 0:
                sys.exit(f"{name} ({trees[name]}) failed:\n{proc.stderr[-3000:]}")
            data = json.loads(Path(out).read_text())
            os.unlink(out)
            results[name].append(data)
            print(
                f"round {r} {name}: {data['meta'].get('package', '')}; {load_line(data['load'])}",
                flush=True,
            )
    names = [row["name"] for row in results["this"][0]["rows"]]

    def med(name: str, row: str, key: str) -> float | None:
        vals = [
            x[key] for run in results[name] for x in run["rows"] if x["name"] == row and x.get("n")
        ]
        return statistics.median(vals) if vals else None

    print(
        f"\nthis = {trees['this']}, other = {trees['other']}; medians over {rounds} rounds "
        "of each row's median (µs); ratio > 1: this checkout is faster\n"
    )
    print(
        f"| {'operation':<60} | {'CPU this':>9} | {'CPU other':>9} | {'other/this':>10} "
        f"| {'wall this':>9} | {'wall other':>10} | {'other/this':>10} |"
    )
    print(f"|{'-' * 62}|{'-' * 11}|{'-' * 11}|{'-' * 12}|{'-' * 11}|{'-' * 12}|{'-' * 12}|")
    for row in names:
        cells = []
        for key in ("cpu_med", "wall_med"):
            a, b = med("this", row, key), med("other", row, key)
            ratio = f"{b / a:.2f}x" if a and b else "-"
            cells += [f"{a:9.1f}" if a else f"{'-':>9}", f"{b:9.1f}" if b else f"{'-':>9}", ratio]
        print(
            f"| {row:<60} | {cells[0]:>9} | {cells[1]:>9} | {cells[2]:>10} "
            f"| {cells[3]:>9} | {cells[4]:>10} | {cells[5]:>10} |"
        )


# -- gold chains (ours) ------------------------------------------------------------------------
def gold_calls(task: Any) -> list[dict[str, Any]]:
    """The task's gold tool chain (empty when its gold solution is not a chain)."""
    gold = task.gold or {}
    return list(gold.get("calls", [])) if gold.get("type") == "tool_chain" else []


def gold_action(call: dict[str, Any], outputs: list[Any]) -> str:
    """One gold call as the JSON action text ``replay_gold`` sends, with ``$i.path``
    references resolved against this episode's earlier outputs (ids can differ per episode)."""
    import orjson

    from agentworld_gym.replay import resolve_refs

    arguments = resolve_refs(call.get("arguments", {}), outputs)
    return orjson.dumps({"name": call["name"], "arguments": arguments}).decode()


def answer_action(task: Any) -> str:
    """The gold final answer as a ``submit`` call (what ends the episode and verifies)."""
    import orjson

    answer = (task.gold or {}).get("answer", task.reference_answer) or "(done)"
    return orjson.dumps({"name": "submit", "arguments": {"answer": answer}}).decode()


def parse_output(text: str) -> Any:
    """A tool result as JSON where it is JSON (what later references walk into)."""
    import orjson

    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text


def play_prefix(env: Any, task: Any, k: int) -> list[Any] | None:
    """Reset to ``task`` and play its first ``k`` gold calls; their outputs, or None when one
    of them failed (the context the next call needs is then not there)."""
    env.reset(options={"task_id": task.id})
    outputs: list[Any] = []
    for call in gold_calls(task)[:k]:
        obs, *_, info = env.step(gold_action(call, outputs))
        if not info["tool_results"][0]["ok"]:
            return None
        outputs.append(parse_output(obs))
    return outputs

"""Sandbox latency: one-shot ``run_function`` and persistent ``SandboxWorker.call``.

    python benchmarks/sandbox_speed.py [--n 200]

Prints median / p90 latencies. ``run_function`` is on the RL reward path (one call per
verified episode), so it should cost a few ms -- the zygote's fork, not an interpreter start,
which the "subprocess" row (``AGENTWORLD_SANDBOX_ZYGOTE=0``) shows for comparison.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from agentworld_gym.sandbox import SandboxWorker, run_function

VERIFY = "def verify(initial, final, answer):\n    return final['done'] and answer == 'ok'"
TOOLS = "import os\nDB = os.environ['MCP_DB_DIR']\n\ndef ping(x):\n    return {'x': x}\n"


def _measure(fn: Callable[[], object], n: int) -> tuple[float, float]:
    fn()  # warm-up (starts the zygote / worker)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    samples.sort()
    return statistics.median(samples) * 1e3, samples[int(0.9 * (n - 1))] * 1e3


def _check(result) -> None:
    if not result.ok:
        raise SystemExit(f"sandbox call failed: {result.error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200, help="calls per row")
    n = parser.parse_args().n
    state = {"rows": [{"id": i, "title": f"page {i}", "done": i % 2 == 0} for i in range(1000)]}
    rows: list[tuple[str, float, float]] = []

    def verify() -> None:
        _check(run_function(VERIFY, "verify", [{"done": False}, {"done": True}, "ok"]))

    def verify_big() -> None:
        _check(run_function(VERIFY, "verify", [state, {**state, "done": True}, "ok"]))

    rows.append(("run_function, trivial verify", *_measure(verify, n)))
    rows.append(("run_function, two ~50 KB states", *_measure(verify_big, n)))

    workdir = Path(tempfile.mkdtemp(prefix="sandbox-bench-"))
    try:
        env = {"MCP_DB_DIR": str(workdir)}
        with SandboxWorker(workdir, TOOLS, env=env) as worker:
            rows.append(
                (
                    "SandboxWorker.call, trivial",
                    *_measure(lambda: worker.call("ping", {"x": 1}), n * 5),
                )
            )

            def recycle() -> None:
                worker.restart(workdir)
                _check(worker.call("ping", {"x": 1}))

            rows.append(("SandboxWorker restart + first call", *_measure(recycle, n)))
            isolation = worker.isolation
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    os.environ["AGENTWORLD_SANDBOX_ZYGOTE"] = "0"
    rows.append(("run_function, subprocess (no zygote)", *_measure(verify, max(n // 10, 5))))

    print(f"{'case':<40} {'median ms':>10} {'p90 ms':>10}")
    for name, median, p90 in rows:
        print(f"{name:<40} {median:>10.2f} {p90:>10.2f}")
    print(f"isolation: {isolation}")


if __name__ == "__main__":
    main()

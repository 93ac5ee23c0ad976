"""What ``dtype: auto`` and ``threads: auto`` decide on this machine, and why (a table).

Times one Linear(576→1536) forward+backward on 4,096 tokens (a training-sized step of the
embedded model) in float32 and bfloat16, and a generation-sized step (batch 4) on 1 and on
all cores, each with and without one busy process beside it. Run:
``python benchmarks/cpu_threads.py``.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time

import torch

from agentworld_gym.llm.hardware import auto_dtype, auto_threads, busy_cores


def _spin(stop) -> None:  # a competing job
    while not stop.is_set():
        pass


def _train_ms(dtype: torch.dtype, repeats: int = 3) -> float:
    x = torch.randn(4096, 576).to(dtype).requires_grad_()
    layer = torch.nn.Linear(576, 1536).to(dtype)
    layer(x).sum().backward()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        layer(x).sum().backward()
        times.append(time.perf_counter() - t)
    return 1000 * statistics.median(times)


def _generate_us(steps: int = 1000) -> float:
    x = torch.randn(4, 576)
    up, down = torch.nn.Linear(576, 1536), torch.nn.Linear(1536, 576)
    with torch.no_grad():
        t = time.perf_counter()
        for _ in range(steps):
            x = down(torch.relu(up(x))) * 0.01 + x
    return 1e6 * (time.perf_counter() - t) / steps


def main() -> None:
    cores = len(os.sched_getaffinity(0))
    choice = auto_dtype("cpu")
    print(f"CPU capability: {torch.backends.cpu.get_cpu_capability()}, {cores} usable cores")
    print(f"dtype auto -> {choice.name} ({choice.reason})")
    print(f"threads auto -> {auto_threads(load=busy_cores())} now\n")
    print(f"{'case':<52} {'value':>10}")
    torch.set_num_threads(cores)
    for dtype in (torch.float32, torch.bfloat16):
        label = "train step, " + str(dtype).split(".")[-1]
        print(f"{label:<52} {_train_ms(dtype):>8.0f} ms")
    for busy in (0, 1):
        stop = multiprocessing.Event()
        jobs = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(busy)]
        for j in jobs:
            j.start()
        try:
            for threads in sorted({1, cores}):
                torch.set_num_threads(threads)
                label = f"generation step, {threads} thread(s), {busy} busy process(es)"
                print(f"{label:<52} {_generate_us():>8.0f} us")
        finally:
            stop.set()
            for j in jobs:
                j.join()


if __name__ == "__main__":
    main()

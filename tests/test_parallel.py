"""The synthesis process pool: results in job order, with and without other threads alive
(a forked worker can inherit a lock another thread holds; workers then come from a fork
server)."""

from __future__ import annotations

import threading

from agentworld_gym.synthesis.parallel import ordered_map


def square(x: int) -> int:
    return x * x


def test_results_come_in_job_order():
    assert list(ordered_map(square, list(range(12)), 2)) == [x * x for x in range(12)]


def test_a_lock_held_by_another_thread_does_not_hang_the_workers():
    lock, release = threading.Lock(), threading.Event()

    def hold() -> None:
        with lock:  # held across the pool's start, as a library's background thread might
            release.wait(30)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        assert list(ordered_map(square, list(range(6)), 2)) == [x * x for x in range(6)]
    finally:
        release.set()
        thread.join()

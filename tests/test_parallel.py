"""The synthesis process pool: results in job order, forked from a single-threaded process
and, with another thread alive (holding a lock a forked worker could inherit), from the fork
server."""

from __future__ import annotations

import threading

from agentworld_gym.synthesis.parallel import ordered_map


def square(x: int) -> int:
    return x * x


def test_results_come_in_job_order():
    assert list(ordered_map(square, list(range(12)), 2)) == [x * x for x in range(12)]


def test_results_come_in_order_from_the_fork_server_while_another_thread_holds_a_lock():
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

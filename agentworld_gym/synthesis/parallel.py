"""Process-pool map shared by catalog and task synthesis.

Results come back in job order whatever finishes first, so a run's output cannot depend on
scheduling (the catalogs are byte-for-byte reproducible with any number of workers).
"""

from __future__ import annotations

import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any


def ordered_map(fn: Callable[[Any], Any], jobs: list[Any], workers: int) -> Iterator[Any]:
    """``fn`` over ``jobs`` in worker processes (in this process when ``workers <= 1`` or
    there is one job), yielding results in job order as they become available.

    Workers are forked from this process while it runs one thread. With other threads alive
    (a test runner's, a trainer's, a library's background thread) one of them can hold a lock
    at the moment of the fork, and the forked worker then waits on it forever; workers then
    come from a fork server (a clean process that imports the work's module once), which
    needs the caller's script to guard its entry point with ``if __name__ == "__main__"``."""
    if workers <= 1 or len(jobs) <= 1:
        yield from map(fn, jobs)
        return
    if threading.active_count() == 1:
        ctx = multiprocessing.get_context("fork")
    else:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([fn.__module__])
    pool = ctx.Pool(workers, initializer=_default_signals, maxtasksperchild=100)
    try:
        yield from pool.imap(fn, jobs, chunksize=1)
        pool.close()
    finally:
        pool.terminate()
        pool.join()


def _default_signals() -> None:
    """A worker dies on the pool's SIGTERM whatever handler the parent had installed (a
    library's teardown handler, inherited through fork, can hang a worker the pool is
    terminating, and with it the whole run)."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)

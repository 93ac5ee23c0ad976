"""Pooled workers: a persistent sandbox process over a working folder, module state kept.

The tool-execution path of released and synthesised environments: the sources are exec'd once
per episode (or after a fatal error), then each tool call is one request on the open process.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from pathlib import Path
from typing import Any

from agentworld_gym.errors import SandboxError
from agentworld_gym.sandbox.channel import _ChannelError, _failure, _Proc
from agentworld_gym.sandbox.framing import _REPLY_SLACK
from agentworld_gym.sandbox.host import _give_to, _user_plan
from agentworld_gym.sandbox.limits import (
    DEFAULT_LIMITS,
    SandboxErrorType,
    SandboxLimits,
    SandboxResult,
)
from agentworld_gym.sandbox.messages import _call_message, _init_message, _result

_FATAL = frozenset({SandboxErrorType.TIMEOUT, SandboxErrorType.MEMORY, SandboxErrorType.CRASH})


class SandboxWorker:
    """A persistent sandbox process over ``workdir``; module state persists between calls.

    ``sources`` is one source (named ``"main"``) or a mapping ``name -> source``; each is exec'd
    in order as a module of that name, after ``env`` is set (module-level code may read it), and
    later sources may import earlier ones. A source that fails to compile or to run its module
    code does not stop the others: calling one of its functions returns that failure (see
    :attr:`load_errors`). Call a function by name, or as ``"source:function"`` when several
    sources define it.

    After a timeout, memory error or crash the process is killed, and the next call starts a
    fresh one (the sources exec'd again, module state lost). As root, ``workdir`` is chowned to
    ``nobody``. Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        workdir: Path,
        sources: dict[str, str] | str,
        *,
        env: dict[str, str] | None = None,
        limits: SandboxLimits = DEFAULT_LIMITS,
    ) -> None:
        self._sources = {"main": sources} if isinstance(sources, str) else dict(sources)
        self._env, self._limits, self._workdir = dict(env or {}), limits, Path(workdir)
        self._proc: _Proc | None = None
        self._pending: _Proc | None = None  # started, its load reply not read yet
        self._init: bytes | None = None  # the init message: the same for every process
        self._isolation: dict[str, Any] = {}
        self._load_errors: dict[str, str] = {}
        self._lock, self._closed = threading.Lock(), False
        _WORKERS.add(self)

    @property
    def load_errors(self) -> dict[str, str]:
        """``source name -> error`` for the sources that failed to load in the current process."""
        return dict(self._load_errors)

    @property
    def isolation(self) -> dict[str, Any]:
        """The isolation layers in force in the current process (empty before the first call)."""
        return dict(self._isolation)

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def call(self, function: str, kwargs: dict[str, Any] | None = None) -> SandboxResult:
        """Call ``function(**kwargs)`` in the worker, starting (or restarting) it if needed."""
        with self._lock:
            if self._closed:
                raise SandboxError("SandboxWorker.call on a closed worker")
            started, limits = time.monotonic(), self._limits
            request = _call_message(function, [], dict(kwargs or {}))
            if self._proc is None:
                failure = self._handshake(self._pending or self._launch(), started)
                if failure is not None:
                    return failure
            deadline = time.monotonic() + limits.wall_s
            try:
                self._proc.send(request, deadline)
                reply = self._proc.recv(deadline, limits.output_bytes + _REPLY_SLACK, limits.cpu_s)
                result = _result(reply, started, self._isolation)
            except _ChannelError as err:
                result = _failure(self._proc, err, limits, started, self._isolation)
            if result.error_type in _FATAL:
                self._stop()
            return result

    def start(self) -> None:
        """Start the process now, without waiting: it loads the sources while the caller works.

        The next :meth:`call` then only reads its load reply (what ``reset`` uses, so that an
        episode's first tool call finds its fresh process ready).
        """
        with self._lock:
            if self._closed or self._proc is not None or self._pending is not None:
                return
            self._pending = self._launch()

    def _launch(self) -> _Proc:
        if not self._workdir.is_dir():
            raise SandboxError(f"the worker's working folder {self._workdir} is not a directory")
        plan = _user_plan(self._workdir)
        _give_to(self._workdir, plan)
        if self._init is None:  # sources can be large: encoded once, not per episode
            self._init = _init_message(
                self._workdir.resolve(),
                self._sources,
                self._env,
                limits=self._limits,
                oneshot=False,
                user=plan,
            )
        return _Proc(self._limits.network, preload=self._init)

    def _handshake(self, proc: _Proc, started: float) -> SandboxResult | None:
        """Finish sending the init message and read the load reply."""
        self._pending = None
        limits = self._limits
        try:
            deadline = time.monotonic() + limits.wall_s
            proc.send(b"", deadline)
            reply = proc.recv(deadline, _REPLY_SLACK, limits.cpu_s)
        except _ChannelError as err:
            result = _failure(proc, err, limits, started, {})
            result.error = f"{result.error} (while loading the sources)"
            proc.close()
            return result
        except BaseException:
            proc.kill()
            proc.close()
            raise
        self._proc, self._isolation = proc, reply.get("isolation", {})
        self._load_errors = reply.get("load_errors", {})
        return None

    def _stop(self) -> None:
        for proc in (self._proc, self._pending):
            if proc is not None:
                proc.kill()
                proc.close()
        self._proc = self._pending = None

    def _abandon(self) -> None:
        """In a forked copy of the trainer: forget (never kill) the parent's process."""
        self._lock = threading.Lock()
        for proc in (self._proc, self._pending):
            if proc is not None:
                proc.owner = -1
                proc.close()
        self._proc = self._pending = None

    def restart(self, workdir: Path | None = None, env: dict[str, str] | None = None) -> None:
        """Recycle for a new episode: stop the process; the next call starts a fresh one.

        ``workdir`` and ``env`` replace the current ones when given (a new database copy and its
        ``MCP_DB_DIR``, say).
        """
        with self._lock:
            self._stop()
            if workdir is not None:
                self._workdir, self._init = Path(workdir), None
            if env is not None:
                self._env, self._init = dict(env), None

    def close(self) -> None:
        """Kill the worker process; later calls raise :class:`SandboxError`."""
        with self._lock:
            self._stop()
            self._closed = True

    def __enter__(self) -> SandboxWorker:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if any(p is not None and p.owner == os.getpid() for p in (self._proc, self._pending)):
                self._stop()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass


_WORKERS: weakref.WeakSet[SandboxWorker] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked trainer process must not share its parent's workers."""
    for worker in list(_WORKERS):
        worker._abandon()


os.register_at_fork(after_in_child=_after_fork_in_child)

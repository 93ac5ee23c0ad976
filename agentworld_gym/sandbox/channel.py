"""Parent side of one sandbox process: start it, talk to it with deadlines, explain its death.

Every read and write has a deadline, the child's CPU time is polled where ``cpu_s < wall_s``,
and a process that does not answer properly is killed and described (:func:`_failure`), so the
parent never hangs and never raises for the child's misbehaviour.
"""

from __future__ import annotations

import fcntl
import math
import os
import select
import signal
import subprocess
import time
from typing import Any

from agentworld_gym.errors import SandboxError
from agentworld_gym.sandbox.boot import _popen
from agentworld_gym.sandbox.framing import _HEADER, _loads
from agentworld_gym.sandbox.host import _netns_prefix
from agentworld_gym.sandbox.limits import SandboxErrorType, SandboxLimits, SandboxResult
from agentworld_gym.sandbox.zygote import _drop_zygote, _zygote_for

_F_SETPIPE_SZ = 1031


class _ChannelError(Exception):
    """No proper answer: ``timeout``, ``cpu``, ``closed``, ``too_large`` or ``protocol``."""

    def __init__(self, kind: str, size: int = 0) -> None:
        super().__init__(kind)
        self.kind, self.size = kind, size


class _Proc:
    """Parent handle of one sandbox process: its pid, two pipe ends, and how to reap it."""

    def __init__(self, network: bool, preload: bytes = b"") -> None:
        """Start it; ``preload`` goes into the request pipe first, so the child starts at once."""
        req_r, self.to_child = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.from_child, resp_w = os.pipe2(os.O_CLOEXEC)
        self.owner, self._popen = os.getpid(), None
        if len(preload) > 65536:  # room for the whole init message: the child starts at once
            try:
                fcntl.fcntl(self.to_child, _F_SETPIPE_SZ, min(len(preload), 1 << 20))
            except OSError:
                pass
        self._unsent = memoryview(preload)
        try:
            self._unsent = self._unsent[os.write(self.to_child, self._unsent) :]
        except BlockingIOError:
            pass
        os.set_blocking(req_r, True)  # pipe2 made both ends non-blocking; the child's must block
        try:
            self._zygote = _zygote_for(network)
            if self._zygote is not None:
                try:
                    self.pid, self.via = self._zygote.fork((req_r, resp_w)), "zygote"
                except OSError:  # dead or stuck: drop it; the next sandbox starts a new one
                    _drop_zygote(network, self._zygote)
                    self._zygote = None
            if self._zygote is None:
                netns = None if network else _netns_prefix()
                fds = (req_r, resp_w)
                try:
                    self._popen = _popen(
                        netns, fds, "serve", *map(str, fds), stderr=subprocess.DEVNULL
                    )
                except OSError as exc:
                    raise SandboxError(f"could not start a sandbox process: {exc}") from exc
                self.pid, self.via = self._popen.pid, "subprocess"
        except BaseException:
            os.close(self.to_child)
            os.close(self.from_child)
            raise
        finally:
            os.close(req_r)
            os.close(resp_w)
        os.set_blocking(self.from_child, False)

    def send(self, data: bytes, deadline: float) -> None:
        """Write what ``preload`` left unsent, then ``data``."""
        poller = select.poll()
        poller.register(self.to_child, select.POLLOUT)
        view = self._unsent
        if data:
            view = memoryview(bytes(view) + data) if view else memoryview(data)
        self._unsent = memoryview(b"")
        while view:
            try:
                view = view[os.write(self.to_child, view) :]
                continue
            except BlockingIOError:
                pass
            except OSError:  # EPIPE: it died
                raise _ChannelError("closed") from None
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _ChannelError("timeout")
            poller.poll(math.ceil(remaining * 1000))

    def _stat(self) -> list[bytes]:
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as handle:
                return handle.read().rpartition(b")")[2].split()
        except OSError:
            return []

    def state(self) -> str:
        """The process state letter (R, S, Z, ...); empty once it is reaped."""
        fields = self._stat()
        return fields[0].decode() if fields else ""

    def cpu_seconds(self) -> float:
        fields = self._stat()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") if fields else 0.0

    def recv(self, deadline: float, max_bytes: int, cpu_s: float | None = None) -> dict[str, Any]:
        """One framed JSON reply; polls the child's CPU time when ``cpu_s`` is below the wall."""
        poller = select.poll()
        poller.register(self.from_child, select.POLLIN)
        start = time.monotonic()
        cpu_start = self.cpu_seconds() if cpu_s is not None and cpu_s < deadline - start else None
        next_check = start + cpu_s if cpu_start is not None else math.inf
        buffer, filled, header_done = bytearray(_HEADER.size), 0, False
        while True:
            now = time.monotonic()
            if now >= deadline:
                raise _ChannelError("timeout")
            if now >= next_check:  # one thread: its CPU time cannot outrun the wall clock
                used = self.cpu_seconds() - cpu_start
                if used >= cpu_s:
                    raise _ChannelError("cpu")
                next_check = now + max(cpu_s - used, 0.02)
            if not poller.poll(math.ceil((min(deadline, next_check) - now) * 1000)):
                continue
            try:
                count = os.readv(self.from_child, [memoryview(buffer)[filled:]])
            except BlockingIOError:
                continue
            except OSError:
                raise _ChannelError("closed") from None
            if count == 0:
                raise _ChannelError("closed")
            filled += count
            if filled < len(buffer):
                continue
            if not header_done:
                (size,) = _HEADER.unpack(buffer)
                if size > max_bytes:
                    raise _ChannelError("too_large", size)
                buffer, filled, header_done = bytearray(size), 0, True
            if header_done and filled == len(buffer):
                try:
                    reply = _loads(buffer)
                except (ValueError, RecursionError):  # the code wrote to the protocol pipe
                    raise _ChannelError("protocol") from None
                if not isinstance(reply, dict):
                    raise _ChannelError("protocol")
                return reply

    def kill(self) -> None:
        if self.owner != os.getpid():
            return
        for kill in (os.killpg, os.kill):  # the code may have left its process group
            try:
                kill(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def exit_info(self) -> tuple[int, float] | None:
        """(wait status, CPU seconds) once the process has ended; None if unknown."""
        if self._zygote is not None:
            return self._zygote.exit_info(self.pid)
        if self._popen is None or self.owner != os.getpid():
            return None
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            try:
                pid, status, usage = os.wait4(self.pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid:
                self._popen.returncode = os.waitstatus_to_exitcode(status)
                return status, usage.ru_utime + usage.ru_stime
            time.sleep(0.002)
        return None

    def close(self) -> None:
        for fd in (self.to_child, self.from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._popen is not None and self.owner == os.getpid():
            try:
                self._popen.wait(timeout=1.0)  # EOF on its request pipe ends it
            except subprocess.TimeoutExpired:
                self.kill()
                self._popen.wait()


def _still_running(proc: _Proc, grace_s: float = 0.1) -> bool:
    """Whether the process outlives its closed pipe (an exiting one is a zombie within ms)."""
    deadline = time.monotonic() + grace_s
    while proc.state() not in ("", "Z", "X"):
        if time.monotonic() >= deadline:
            return True
        time.sleep(0.002)
    return False


def _failure(
    proc: _Proc,
    err: _ChannelError,
    limits: SandboxLimits,
    started: float,
    isolation: dict[str, Any],
) -> SandboxResult:
    """Kill the process and say precisely why it did not answer."""
    alive = err.kind == "closed" and _still_running(proc)
    proc.kill()
    kind, cpu_error = SandboxErrorType.CRASH, f"exceeded the {limits.cpu_s:g} s CPU-time limit"
    if err.kind == "too_large":
        kind = SandboxErrorType.OUTPUT_TOO_LARGE
        error = f"result of {err.size} bytes exceeds the {limits.output_bytes}-byte output cap"
    elif err.kind == "timeout":
        kind, error = SandboxErrorType.TIMEOUT, f"timed out after {limits.wall_s:g} s wall-clock"
    elif err.kind == "cpu":
        kind, error = SandboxErrorType.TIMEOUT, cpu_error
    elif err.kind == "protocol":
        error = "the sandbox process answered garbage (the code wrote to the protocol pipe?)"
    elif alive:
        error = "the sandbox process closed its protocol pipe (the code closed fds it should not)"
    else:
        info, error = proc.exit_info(), "the sandbox process died before answering"
        if info is not None and os.WIFSIGNALED(info[0]):
            sig = os.WTERMSIG(info[0])
            if sig == signal.SIGXCPU or (sig == signal.SIGKILL and info[1] >= limits.cpu_s):
                kind, error = SandboxErrorType.TIMEOUT, cpu_error
            else:
                hint = (
                    f" (the {limits.memory_mb} MB memory limit?)" if sig != signal.SIGKILL else ""
                )
                error = f"the sandbox process was killed by {signal.Signals(sig).name}{hint}"
        elif info is not None:
            code = os.waitstatus_to_exitcode(info[0])
            error = f"the sandbox process exited with status {code} before answering"
    return SandboxResult(False, None, error, kind, time.monotonic() - started, isolation)

"""Parent side of the forkserver: one zygote per network setting and trainer process.

Started lazily and restarted when it dies; where it cannot start at all, sandboxes fall back to
one fresh interpreter each (with a warning). A forked trainer drops its copies of the handles.
"""

from __future__ import annotations

import errno
import os
import socket
import struct
import tempfile
import threading
import warnings

from agentworld_gym.errors import SandboxError
from agentworld_gym.sandbox.boot import _popen
from agentworld_gym.sandbox.host import _netns_prefix


class _Zygote:
    """Parent handle of the forkserver (one per network setting and trainer process)."""

    def __init__(self, netns: tuple[str, ...] | None) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._stderr = tempfile.TemporaryFile()
        try:
            fd = theirs.fileno()
            self._popen = _popen(netns, (fd,), "zygote", str(fd), stderr=self._stderr)
        finally:
            theirs.close()
        self._sock, self._lock = ours, threading.Lock()
        ours.settimeout(30.0)
        try:
            ready = ours.recv(16)
        except OSError:
            ready = b""
        if ready != b"R":
            self._popen.kill()
            self._popen.wait()
            self._stderr.seek(0)
            detail = self._stderr.read().decode(errors="replace")[-2000:] or "no output"
            self.close()
            raise SandboxError(f"the sandbox zygote did not start: {detail}")
        ours.settimeout(10.0)

    def alive(self) -> bool:
        return self._popen.poll() is None

    def fork(self, fds: tuple[int, int]) -> int:
        with self._lock:
            socket.send_fds(self._sock, [b"F"], list(fds))
            reply = self._sock.recv(16)
        if len(reply) != 8:
            raise OSError(errno.EPIPE, "the sandbox zygote is gone")
        (pid,) = struct.unpack("!q", reply)
        if pid < 0:
            raise OSError(-pid, f"the sandbox zygote could not fork: {os.strerror(-pid)}")
        return pid

    def exit_info(self, pid: int) -> tuple[int, float] | None:
        try:
            with self._lock:
                self._sock.sendall(b"S" + struct.pack("!q", pid))
                reply = self._sock.recv(32)
        except OSError:
            return None
        if len(reply) != 16:
            return None
        status, cpu = struct.unpack("!qd", reply)
        return None if status < 0 else (status, cpu)

    def close(self) -> None:
        self._sock.close()
        self._stderr.close()
        if self._popen.poll() is None:
            self._popen.kill()
            self._popen.wait()


_ZYGOTE_LOCK = threading.Lock()
_ZYGOTES: dict[tuple[bool, bool], _Zygote] = {}  # (network allowed?, confined?) -> its zygote
_ZYGOTE_BROKEN: set[tuple[bool, bool]] = set()


def _after_fork_in_child() -> None:
    """A forked trainer process must not share its parent's zygotes."""
    global _ZYGOTE_LOCK
    _ZYGOTE_LOCK = threading.Lock()
    for zygote in _ZYGOTES.values():
        zygote._sock.close()  # our copy only: the zygote keeps serving the parent
    _ZYGOTES.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _zygote_for(network: bool) -> _Zygote | None:
    if os.environ.get("AGENTWORLD_SANDBOX_ZYGOTE") == "0":
        return None
    key = (network, os.environ.get("AGENTWORLD_SANDBOX_CONFINE") != "0")
    with _ZYGOTE_LOCK:
        zygote = _ZYGOTES.pop(key, None)
        if zygote is not None and zygote.alive():
            _ZYGOTES[key] = zygote
            return zygote
        if zygote is not None:
            zygote.close()
        if key in _ZYGOTE_BROKEN:
            return None
        try:
            _ZYGOTES[key] = zygote = _Zygote(None if network else _netns_prefix())
        except (SandboxError, OSError) as exc:
            _ZYGOTE_BROKEN.add(key)
            warnings.warn(f"{exc}; starting one interpreter per sandbox instead", stacklevel=4)
            return None
        return zygote


def _drop_zygote(network: bool, zygote: _Zygote) -> None:
    """Forget a dead or stuck zygote; the next sandbox starts a new one."""
    with _ZYGOTE_LOCK:
        for key in [k for k, known in _ZYGOTES.items() if known is zygote]:
            del _ZYGOTES[key]
    zygote.close()

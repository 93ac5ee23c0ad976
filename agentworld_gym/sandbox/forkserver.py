"""Inside the zygote: the forkserver loop that turns two pipe fds into a sandbox child.

The zygote is an interpreter started once with the runtime imported, so a sandbox is a fork
(milliseconds) rather than an interpreter start. It reaps its children and reports their exit
status and CPU time, which only it can see.
"""

from __future__ import annotations

import collections
import errno
import os
import select
import signal
import socket
import struct
import time

from agentworld_gym.sandbox import confine
from agentworld_gym.sandbox.isolation import _detach
from agentworld_gym.sandbox.program import _serve

SPARES = 2
"""Spare children kept ready: a burst of sandboxes does not wait for one to be built."""


def _zygote_main(sock_fd: int) -> None:
    """Forkserver loop: ``F`` + two fds -> a sandbox child's pid; ``S`` + pid -> its exit status.

    *Spare* children are forked ahead of requests (and build their confined root while they
    wait), so that serving one is a hand-over of two file descriptors rather than a fork.
    """
    sock = socket.socket(fileno=sock_fd)
    parent, exits, next_spare = os.getppid(), {}, 0.0
    spares: collections.deque[tuple[int, socket.socket]] = collections.deque()
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the loop, so killed children are reaped at once
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    sock.sendall(b"R")
    while os.getppid() == parent:  # the trainer died: so do we (and our idle children, by EOF)
        _reap(exits)
        for dead in [s for s in spares if s[0] in exits]:
            spares.remove(dead)
            dead[1].close()
        want_spare = len(spares) < SPARES and time.monotonic() >= next_spare
        ready = select.select([sock, wake_r], [], [], 0 if want_spare else 1.0)[0]
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock not in ready:
            if want_spare:
                if (spare := _fork_spare()) is None:
                    next_spare = time.monotonic() + 1.0  # fork failed (EAGAIN?): retry later
                else:
                    spares.append(spare)
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 64, 2)
        except OSError:
            return
        if not msg:
            return
        if msg == b"F" and len(fds) == 2:
            pid = _hand_over(spares.popleft() if spares else None, fds)  # the oldest: ready
            sock.sendall(struct.pack("!q", pid))
            continue
        for fd in fds:
            os.close(fd)
        if msg[:1] == b"S":
            (pid,) = struct.unpack("!q", msg[1:9])
            deadline = time.monotonic() + 2.0
            while pid not in exits and time.monotonic() < deadline:
                time.sleep(0.002)
                _reap(exits)
            sock.sendall(struct.pack("!qd", *exits.pop(pid, (-1, 0.0))))


def _fork_spare() -> tuple[int, socket.socket] | None:
    """Fork a child that detaches, then waits for the two fds of its job."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        pid = os.fork()
    except OSError:
        pid = -1
    if pid == 0:
        code = 0
        try:
            _detach({theirs.fileno()})
            confine.stage()  # the namespace is built while no job waits for it
            _, fds, _, _ = socket.recv_fds(theirs, 16, 2)  # EOF if the zygote dies first
            if len(fds) == 2:
                theirs.close()
                _serve(fds[0], fds[1], "zygote", detached=True)
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    theirs.close()
    if pid < 0:
        ours.close()
        return None
    return pid, ours


def _hand_over(spare: tuple[int, socket.socket] | None, fds: list[int]) -> int:
    """Give a job's fds to the spare child (or to a freshly forked one); return its pid."""
    if spare is not None:
        pid, channel = spare
        try:
            socket.send_fds(channel, [b"J"], fds)
        except OSError:  # the spare died
            pid = 0
        channel.close()
        if pid:
            for fd in fds:
                os.close(fd)
            return pid
    return _fork_child(fds)


def _fork_child(fds: list[int]) -> int:
    try:
        pid = os.fork()
    except OSError as exc:
        pid = -(exc.errno or errno.EAGAIN)
    if pid == 0:
        code = 0
        try:
            _serve(fds[0], fds[1], "zygote")
        except BaseException:
            code = 70
        finally:
            os._exit(code)
    for fd in fds:
        os.close(fd)
    return pid


def _reap(exits: dict[int, tuple[int, float]]) -> None:
    while True:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        exits[pid] = (status, usage.ru_utime + usage.ru_stime)
        if len(exits) > 4096:
            exits.pop(next(iter(exits)))

"""The in-process policy of a sandbox child: an audit hook over what the code may touch.

A tripwire, not a boundary (in-process Python can be subverted): it refuses writes outside the
working folder, process creation, signals, ctypes, rlimit changes, known secrets and, unless
``network=True``, the network. Other reads are allowed; the uid decides the rest.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from agentworld_gym.sandbox.errors import (
    SandboxImportBlocked,
    SandboxNetworkDisabled,
    SandboxViolation,
)

_PROCESS_EVENTS = frozenset(
    {
        *("os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty"),
        *("subprocess.Popen", "pty.spawn", "os.startfile", "webbrowser.open"),
    }
)
_OTHER_FORBIDDEN = {
    **dict.fromkeys(("os.kill", "os.killpg", "signal.pthread_kill"), "sending signals"),
    **dict.fromkeys(("resource.setrlimit", "resource.prlimit"), "changing resource limits"),
    **dict.fromkeys(("gc.get_objects", "gc.get_referrers", "gc.get_referents"), "walking the heap"),
    "socket.sethostname": "setting the host name",
}
_PATH_EVENTS = {  # event -> indices of the path arguments that must lie in the working folder
    **dict.fromkeys(
        ("os.remove", "os.rmdir", "os.mkdir", "os.truncate", "os.chmod", "os.chown", "os.utime"),
        (0,),
    ),
    **dict.fromkeys(
        ("os.chflags", "os.lchflags", "os.lchmod", "os.setxattr", "os.removexattr"), (0,)
    ),
    **dict.fromkeys(("shutil.chown", "shutil.rmtree"), (0,)),
    **dict.fromkeys(("os.rename", "os.link", "shutil.move"), (0, 1)),
    **dict.fromkeys(("os.symlink", "shutil.copyfile", "shutil.copytree"), (1,)),
    "shutil.unpack_archive": (1,),
}
_NET_PREFIXES = (
    *("socket.", "urllib.", "http.client.", "ftplib.", "smtplib.", "poplib.", "imaplib."),
    *("nntplib.", "telnetlib."),
)
_BLOCKED_IMPORTS = frozenset({"ctypes", "_ctypes", "_posixsubprocess"})
_SECRET_PREFIXES = (
    "/etc/shadow",
    "/etc/gshadow",
    "/etc/sudoers",
    "/run/secrets",
    "/var/run/secrets",
)
_SECRET_PARTS = frozenset(
    {".ssh", ".aws", ".gnupg", ".netrc", ".docker", ".kube", ".pypirc", ".git-credentials"}
)


def _is_secret(real: str) -> bool:
    return (
        real.startswith(_SECRET_PREFIXES)
        or not _SECRET_PARTS.isdisjoint(real.split("/"))
        or (real.startswith("/proc/") and real.endswith("/environ"))
    )


def _make_audit_hook(workdir: str, network: bool) -> Callable[[str, tuple], None]:
    """The policy; a closure, so the sandboxed code finds no module globals to tamper with."""
    inside_prefix = workdir.rstrip("/") + "/"
    write_flags = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
    realpath, fsdecode, isdir = os.path.realpath, os.fsdecode, os.path.isdir

    def inside(path: Any) -> tuple[bool, str]:
        real = realpath(fsdecode(path))
        return real == workdir or real.startswith(inside_prefix) or real == "/dev/null", real

    def check_write(path: Any, what: str = "writing to") -> None:
        ok, real = inside(path)
        if not ok:
            message = f"{what} {real!r} is not allowed: the sandbox may only write inside its"
            raise SandboxViolation(message + " working folder")

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                (flags or 0) & write_flags
            ):
                check_write(path)
                return
            ok, real = inside(path)
            if _is_secret(real):
                raise SandboxViolation(f"reading {real!r} is not allowed in the sandbox")
            if mode is None and not ok and isdir(real):  # its fd would allow dir_fd= writes
                raise SandboxViolation(f"os.open of the folder {real!r} is not allowed")
        elif event in _PATH_EVENTS:
            for index in _PATH_EVENTS[event]:
                if not isinstance(args[index], int):
                    check_write(args[index], f"{event} on")
        elif event.startswith(_NET_PREFIXES):
            if network or event == "socket.gethostname":
                return
            if event == "socket.__new__" and args[1] == socket.AF_UNIX:
                return  # unconnected local pairs (asyncio's self-pipe); connect/bind are refused
            raise SandboxNetworkDisabled(f"network access is disabled in the sandbox ({event})")
        elif event in _PROCESS_EVENTS:
            raise SandboxViolation(f"starting processes is not allowed in the sandbox ({event})")
        elif event.startswith("ctypes."):
            raise SandboxViolation(f"ctypes is not allowed in the sandbox ({event})")
        elif event == "import" and args[0] in _BLOCKED_IMPORTS:
            raise SandboxImportBlocked(f"importing {args[0]} is not allowed in the sandbox")
        elif event in _OTHER_FORBIDDEN:
            raise SandboxViolation(f"{_OTHER_FORBIDDEN[event]} is not allowed in the sandbox")
        elif event == "sqlite3.connect":
            database = fsdecode(args[0])
            if database.startswith("file:"):
                database = database[5:].split("?", 1)[0]
            if database not in ("", ":memory:"):
                check_write(database, "opening the SQLite database")

    return hook

"""Child-side setup: every isolation layer a sandbox process applies before running any code.

Order matters: clean environment and signals, the kernel's confinement (a mount namespace of
its own, see :mod:`.confine`), rlimits, then the drop of every privilege (a user id of its own,
no capabilities, ``no_new_privs``, seccomp), then ctypes is forgotten and the audit hook
installed, so the untrusted code never sees the privileged tools.

Where the kernel's confinement is unavailable, the child refuses to run the code (it answers
every request with that error) unless the caller allowed it (``AGENTWORLD_SANDBOX_UNCONFINED=1``),
in which case the older layers apply alone: ``nobody`` (keeping ``CAP_DAC_READ_SEARCH`` where it
cannot otherwise read the interpreter) and the audit hook.
"""

from __future__ import annotations

import errno
import io
import math
import os
import resource
import signal
import sys
import tempfile
from typing import Any

from agentworld_gym.sandbox import confine
from agentworld_gym.sandbox.errors import SandboxCpuLimit, SandboxViolation
from agentworld_gym.sandbox.policy import _make_audit_hook

_LIBC: Any = None  # ctypes' libc, loaded by a root zygote; forgotten before untrusted code runs
_CTYPES_MODULES: tuple[str, ...] = ()
_PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS = 8, 38
_CAPABILITIES = {"same": "unchanged", "nobody+dac_read_search": "dac_read_search"}
_CAP_DAC_READ_SEARCH, _CAP_SETGID, _CAP_SETUID = 2, 6, 7


def _clean_env(home: str = "/") -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home}


def _load_libc() -> None:
    """As root, load libc and libseccomp through ctypes (confinement needs mount, prctl...)."""
    global _LIBC, _CTYPES_MODULES
    before = set(sys.modules)
    try:
        confine.prepare()
    except (ImportError, OSError) as exc:
        confine._state["error"] = f"kernel confinement could not be prepared: {exc}"
    if os.geteuid() == 0:
        try:
            import ctypes

            _LIBC = ctypes.CDLL(None, use_errno=True)
        except (ImportError, OSError):
            _LIBC = None
    _CTYPES_MODULES = tuple(set(sys.modules) - before)


def _capset(mask: int) -> bool:
    import ctypes

    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)(mask, mask, 0, 0, 0, 0)  # effective, permitted, inheritable
    return _LIBC.capset(header, data) == 0


def _drop_privileges(plan: dict[str, Any] | None) -> tuple[str, bool]:
    """Become ``nobody``, keeping only CAP_DAC_READ_SEARCH if asked: (user, no_new_privs)."""
    user = "same"
    if plan is not None:
        keep_read = plan["mode"] == "nobody_read"
        bridge = (1 << _CAP_DAC_READ_SEARCH) | (1 << _CAP_SETGID) | (1 << _CAP_SETUID)
        if not keep_read or (
            _LIBC is not None and _LIBC.prctl(_PR_SET_KEEPCAPS, 1, 0, 0, 0) == 0 and _capset(bridge)
        ):
            try:
                os.setgroups([])
                os.setgid(plan["gid"])
                os.setuid(plan["uid"])
                user = "nobody"
            except OSError:
                pass
            if user == "nobody" and keep_read and _capset(1 << _CAP_DAC_READ_SEARCH):
                user = "nobody+dac_read_search"
    no_new_privs = _LIBC is not None and _LIBC.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    return user, no_new_privs


def _on_sigxcpu(signum: int, frame: Any) -> None:
    raise SandboxCpuLimit("CPU-time limit")


def _on_backstop(signum: int, frame: Any) -> None:
    os._exit(124)  # the parent is gone or stuck: never outlive twice the wall-clock limit


def _refuse_fork_exec(*args: Any, **kwargs: Any) -> None:
    raise SandboxViolation("starting processes is not allowed in the sandbox (fork_exec)")


def _detach(keep: set[int]) -> None:
    """Leave the zygote: close its fds (its socket above all), null stdio, own process group."""
    devnull = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(devnull, target)
    for name in os.listdir("/proc/self/fd"):
        if int(name) > 2 and int(name) not in keep:
            try:
                os.close(int(name))
            except OSError:
                pass
    try:
        os.setpgid(0, 0)  # a group of its own, for killpg (setsid can take milliseconds)
    except OSError:
        pass  # already a group leader (subprocess launch)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.set_wakeup_fd(-1)


def _setup_child(init: dict[str, Any]) -> dict[str, Any]:
    """Apply every isolation layer, in order; return the layers that took effect."""
    global _LIBC
    workdir = init["workdir"]  # resolved by the parent: a staged child no longer sees the host
    os.environ.clear()
    os.environ.update(_clean_env(home=workdir), TMPDIR=workdir, **init["env"])
    tempfile.tempdir = workdir
    sys.dont_write_bytecode = True  # else imports would try (and be refused) to write .pyc files
    sys.stdin = io.StringIO()
    signal.signal(signal.SIGXCPU, _on_sigxcpu)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # oversized writes fail with EFBIG instead
    signal.signal(signal.SIGALRM, _on_backstop)

    limits, applied = init["limits"], []

    def limit(name: str, soft: int, hard: int | None = None) -> None:
        try:
            resource.setrlimit(
                getattr(resource, f"RLIMIT_{name}"), (soft, soft if hard is None else hard)
            )
            applied.append(name)
        except (ValueError, OSError):
            pass

    kernel, refused = "none", None
    try:
        if not init.get("confine", True):
            raise OSError(errno.EPERM, "turned off by AGENTWORLD_SANDBOX_CONFINE=0")
        confine.enter(workdir)
        kernel = "namespace"
    except OSError as exc:
        os.chdir(workdir)
        if not init.get("unconfined"):
            refused = (
                f"kernel confinement is unavailable ({exc.strerror or exc}); refusing to run "
                "untrusted code (set AGENTWORLD_SANDBOX_UNCONFINED=1 to run it with the audit "
                "hook and rlimits alone)"
            )
    memory = limits["memory_mb"] * 1024 * 1024
    for name, value in (("CORE", 0), ("AS", memory), ("DATA", memory), ("NOFILE", 128)):
        limit(name, value)
    limit("FSIZE", int(limits["file_bytes"]))
    if init["oneshot"]:
        cpu = max(1, math.ceil(limits["cpu_s"]))
        limit("CPU", cpu, cpu + 1)  # SIGXCPU at the soft limit, SIGKILL a second later
    seccomp = False
    if kernel == "namespace":
        gid = init["user"]["gid"] if init["user"] else os.getgid()
        os.umask(0o007)  # the working folder is shared with the parent through its group
        user, no_new_privs, seccomp = confine.drop(gid), True, True
    else:
        confine.forget()
        user, no_new_privs = _drop_privileges(init["user"])
    if user != "same" or os.geteuid() != 0:  # root is exempt from RLIMIT_NPROC
        limit("NPROC", 0)
    _LIBC = None
    for name in _CTYPES_MODULES:  # re-importing them is refused by the hook
        sys.modules.pop(name, None)
    spawner = sys.modules.get("_posixsubprocess")
    if spawner is not None:  # subprocess' raw fork_exec raises no audit event of its own
        spawner.fork_exec = _refuse_fork_exec
    network = bool(limits["network"])
    sys.addaudithook(_make_audit_hook(workdir, network))
    isolation = {
        "process": init["via"],
        "mount": kernel,
        "network": "allowed" if network else ("namespace" if init["netns"] else "socket_refusal"),
        "socket_refusal": not network,
        "user": user,
        "capabilities": _CAPABILITIES.get(user, "none"),
        "seccomp": seccomp,
        "no_new_privs": no_new_privs,
        "rlimits": applied,
        "audit_hook": True,
        "clean_env": True,
    }
    if refused:
        isolation["refused"] = refused
    return isolation

"""Kernel confinement of a sandbox process: a private mount namespace, no capabilities, seccomp.

In-process audit hooks can be switched off by the code they watch; the kernel cannot. Before a
sandbox child runs any untrusted code it (still root, forked from the zygote) enters a mount
namespace of its own whose root is a fresh, read-only tmpfs holding only:

* the interpreter, its standard library and site-packages, and this package, bind-mounted
  read-only (nothing else of the host: no home, no checkout, no other sandbox's folder);
* its working folder, read-write but ``noexec,nosuid,nodev`` (no native code from it);
* a private ``/tmp`` (a small ``noexec`` tmpfs) and ``/dev/{null,zero,full,random,urandom}``;
  no ``/proc``, no ``/sys``, no ``/dev/shm``.

Then it takes a user id of its own (so no sandbox can signal or read another), drops every
capability (bounding set included), sets ``no_new_privs`` and loads a seccomp filter that refuses
what namespaces do not cover (``mknod``/``mkfifo``, ``ptrace``, ``mount``, ``unshare``,
``setns``, ``keyctl``, ``bpf``, ``execve``, ``io_uring``, ...) with ``EPERM``. The network stays
the empty network namespace the zygote was started in.

:func:`prepare` runs once in the zygote (as root, before any fork): it loads libc and
libseccomp through ctypes, builds the filter and makes the mount point of the new roots; the
children only apply what it built, so confinement costs about a millisecond per process.
"""

from __future__ import annotations

import errno
import os
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

_CLONE_NEWNS, _CLONE_NEWIPC, _CLONE_NEWUTS = 0x00020000, 0x08000000, 0x04000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS, _PR_SET_DUMPABLE = 24, 38, 4
_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 22, 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_UID_BASE = 1_000_000
"""Sandbox user ids are ``_UID_BASE + pid``: distinct among live sandboxes, owned by nobody."""
_DEVICES = ("null", "zero", "full", "random", "urandom")
_DENIED = (
    *("mknod", "mknodat", "ptrace", "process_vm_readv", "process_vm_writev", "kcmp"),
    *("mount", "umount2", "pivot_root", "chroot", "unshare", "setns", "clone3"),
    *("move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"),
    *("io_uring_setup", "io_uring_enter", "io_uring_register", "fanotify_init"),
    *("execve", "execveat", "kexec_load", "kexec_file_load", "init_module", "finit_module"),
    *("delete_module", "swapon", "swapoff", "reboot", "acct", "quotactl", "syslog"),
    *("name_to_handle_at", "open_by_handle_at", "pidfd_getfd", "pidfd_open", "vhangup"),
    *("settimeofday", "clock_settime", "adjtimex", "clock_adjtime", "sethostname"),
    *("setdomainname", "iopl", "ioperm", "personality", "lookup_dcookie"),
)
"""System calls refused with EPERM (clone3 with ENOSYS: libc then falls back to clone)."""

_HOST = "/.host"
"""Where the staged root keeps the host's tree until the job's folder is bound from it."""
TMP_MB = 16
"""Size of a sandbox's private ``/tmp``."""

_state: dict[str, Any] = {"libc": None, "filter": None, "root": None, "error": None}
_state["staged"] = False


def prepare() -> None:
    """In the zygote, as root: load libc and libseccomp, build the filter, make the mount point.

    Failures are remembered, not raised: a child then reports confinement as unavailable.
    """
    if os.environ.get("AGENTWORLD_SANDBOX_CONFINE") == "0":
        _state["error"] = "turned off by AGENTWORLD_SANDBOX_CONFINE=0"
        return
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        _state["error"] = "kernel confinement needs root (or a user namespace) on Linux"
        return
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong]
    libc.mount.argtypes += [ctypes.c_char_p]
    libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
    _state["libc"] = libc
    try:
        import pyseccomp

        syscall_filter = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
        for name in _DENIED:
            code = errno.ENOSYS if name == "clone3" else errno.EPERM
            try:
                syscall_filter.add_rule(pyseccomp.ERRNO(code), name)
            except (OSError, RuntimeError, ValueError):
                pass  # not a system call on this architecture
        with tempfile.TemporaryFile() as handle:  # compiled once here, loaded by each child
            syscall_filter.export_bpf(handle)
            handle.seek(0)
            program = handle.read()
        buffer = ctypes.create_string_buffer(program, len(program))

        class _Program(ctypes.Structure):  # struct sock_fprog
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        _state["filter"] = (_Program(len(program) // 8, ctypes.addressof(buffer)), buffer)
    except (ImportError, OSError, RuntimeError) as exc:
        _state["error"] = f"seccomp is unavailable ({exc})"
        return
    if os.uname().machine not in _SYS_PIVOT_ROOT:
        _state["error"] = f"pivot_root's system call number is unknown on {os.uname().machine}"
        return
    _state["root"] = tempfile.mkdtemp(prefix="agentworld-sandbox-root-")
    os.chmod(_state["root"], 0o755)


def cleanup() -> None:
    """In the zygote, at exit: remove the (empty) mount point."""
    if _state["root"]:
        try:
            os.rmdir(_state["root"])
        except OSError:
            pass


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str = "") -> None:
    libc = _state["libc"]
    encode = os.fsencode
    result = libc.mount(
        encode(source) if source else None,
        encode(target),
        encode(fstype) if fstype else None,
        flags,
        encode(data) if data else None,
    )
    _check(result, f"mount {target}")


def _bind(source: str, root: str, flags: int) -> None:
    """Bind ``source`` at the same path under ``root``, with ``flags`` (read-only, noexec...)."""
    target = root + source
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()  # noqa: SIM115 - a mount point, created empty
    _mount(source, target, None, _MS_BIND | _MS_REC)
    _mount(None, target, None, _MS_REMOUNT | _MS_BIND | flags)


def readable_paths() -> list[str]:
    """What the sandbox sees read-only: the interpreter's prefixes and this package."""
    package = str(Path(__file__).resolve().parent.parent)
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix, package}
    paths.update(sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib"))
    resolved = sorted({os.path.realpath(p) for p in paths if p and os.path.isdir(p)})
    # a path already under another one (the stdlib under the prefix) needs no mount of its own
    return [p for p in resolved if not any(p.startswith(q + "/") for q in resolved if q != p)]


def stage() -> None:
    """As root: a new mount namespace and its root, all but the working folder.

    The zygote's spare children run this before their job arrives, so only :func:`enter`'s
    few mounts remain on a sandbox's critical path. A failure is remembered for :func:`enter`.
    """
    if _state["staged"] or _state["error"]:
        return
    if _state["libc"] is None:
        _state["error"] = "confinement was not prepared"
        return
    libc, root, ro = _state["libc"], _state["root"], _MS_RDONLY | _MS_NOSUID | _MS_NODEV
    try:
        _check(libc.unshare(_CLONE_NEWNS | _CLONE_NEWIPC | _CLONE_NEWUTS), "unshare")
        _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
        _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=1m,mode=0755")
        os.mkdir(root + "/tmp")
        tmp_flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
        _mount("tmpfs", root + "/tmp", "tmpfs", tmp_flags, f"size={TMP_MB}m,mode=1777")
        for path in readable_paths():
            _bind(path, root, ro)
        for name in ("lib", "lib64", "bin", "sbin"):  # merged-/usr systems: /lib -> usr/lib
            if os.path.islink("/" + name):
                os.symlink(os.readlink("/" + name), root + "/" + name)
            elif os.path.isdir("/" + name):
                _bind("/" + name, root, ro)
        if os.path.isdir("/usr"):
            _bind("/usr", root, ro)
        if os.path.isfile("/etc/ld.so.cache"):  # where the dynamic loader finds libraries
            _bind("/etc/ld.so.cache", root, ro)
        for device in _DEVICES:
            if os.path.exists("/dev/" + device):
                _bind("/dev/" + device, root, _MS_NOSUID | _MS_NOEXEC)
        os.mkdir(root + _HOST)  # the host's tree, kept until the job names its folder
        _mount("/", root + _HOST, None, _MS_BIND | _MS_REC)
        os.chdir(root)
        _check(libc.syscall(_SYS_PIVOT_ROOT[os.uname().machine], b".", b"."), "pivot_root")
        _check(libc.umount2(b".", _MNT_DETACH), "umount of the old root")
        os.chdir("/")
    except OSError as exc:
        _state["error"] = str(exc)
        return
    _state["staged"] = True


def enter(workdir: str) -> None:
    """As root: mount the working folder into the staged root, then hide the host for good.

    Only mounts happen here, no unmount: an unmount waits for an RCU grace period (up to
    milliseconds under load), so :func:`stage` did the one it needs before the job came.
    """
    stage()
    if _state["error"]:
        raise OSError(errno.ENOSYS, _state["error"])
    os.makedirs(workdir, exist_ok=True)  # a mount point in our own root tmpfs
    _mount(_HOST + workdir, workdir, None, _MS_BIND)
    _mount(None, workdir, None, _MS_REMOUNT | _MS_BIND | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    # an empty read-only tmpfs over the host's tree: without capabilities (and with umount
    # refused by seccomp) nothing can take it off again
    _mount("tmpfs", _HOST, "tmpfs", _MS_RDONLY | _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, "size=4k")
    _mount(None, "/", None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    os.chdir(workdir)


def drop(gid: int) -> str:
    """As root: a user id of our own, no capabilities, ``no_new_privs``, the seccomp filter."""
    libc = _state["libc"]
    for cap in range(64):  # the bounding set: nothing can ever be regained
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            break
    uid = _UID_BASE + os.getpid()
    try:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)  # from root without KEEPCAPS: permitted, effective and ambient emptied
        user = f"uid {uid}"
    except OSError:  # root of a user namespace that maps no other id: stay, without capabilities
        _capset_none()
        user = "namespace root without capabilities"
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    import ctypes

    fprog = ctypes.byref(_state["filter"][0])
    _check(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, fprog, 0, 0), "seccomp")
    forget()
    return user


def _capset_none() -> None:
    import ctypes

    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)(0, 0, 0, 0, 0, 0)  # effective, permitted, inheritable: none
    _check(_state["libc"].capset(header, data), "capset")


def forget() -> None:
    """Drop the handles on libc and libseccomp before untrusted code runs."""
    _state["libc"] = _state["filter"] = None

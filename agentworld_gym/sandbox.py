"""Run untrusted Python (LLM-written verifiers and tool implementations) in isolated processes.

Two shapes share one mechanism, a sandbox process that reads length-prefixed JSON requests from a
pipe and answers on another (so nothing the code prints can corrupt the protocol):

* :func:`run_function` -- one-shot: exec a source in a fresh process with a fresh temporary
  working folder, call one function, return its JSON value (the script-verifier reward path).
* :class:`SandboxWorker` -- a persistent process over a working folder (a copy of an
  environment's database); module state persists between :meth:`SandboxWorker.call` calls.

Misbehaviour never raises: it is a :class:`SandboxResult` with ``ok=False`` and a precise
``error``. The parent never hangs: reads have deadlines and a late process group is killed.
Sandboxes are forked from a *zygote*, an interpreter started once (inside an empty network
namespace) with this module imported, so a one-shot call costs milliseconds rather than an
interpreter start; where the zygote cannot run, each sandbox is a fresh ``python -I`` instead.

Isolation layers, reported per result in :attr:`SandboxResult.isolation`:

* network: an empty network namespace (``unshare --net``) where allowed, and an audit hook that
  refuses sockets (``"socket_refusal"`` alone where namespaces are not allowed);
* user: as root, the child becomes ``nobody`` after setup and owns only its working folder. When
  ``nobody`` cannot read the interpreter (a pyenv under ``/root``, say) it keeps the one
  capability ``CAP_DAC_READ_SEARCH`` so imports still work: it reads what root can read, but
  writes only where ``nobody`` may (``"nobody+dac_read_search"``). Not root: ``"same"``;
* rlimits: address space, file size, open files, core dumps, processes (threads too) and, for
  one-shot runs, CPU time; the parent also polls the CPU time when ``cpu_s < wall_s``;
* an audit hook -- a tripwire, not a boundary, as in-process Python can be subverted -- that
  refuses writes outside the working folder, process creation, signals, ctypes, rlimit changes,
  known secrets (``/etc/shadow``, ``.ssh``, ...) and, unless ``network=True``, the network.
  Other reads are allowed: the stdlib must stay importable, and the uid decides the rest.

Limitations: no mount namespace, so world-writable folders (``/tmp``, ``/dev/shm``) are guarded
by the audit hook alone; RLIMIT_CPU counts whole seconds; the address-space limit includes the
~20 MB interpreter.
"""

from __future__ import annotations

import difflib
import errno
import functools
import gc
import io
import json
import linecache
import math
import os
import re
import resource
import select
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
import types
import warnings
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentworld_gym.errors import ConfigError, SandboxError

try:
    import orjson
except ImportError:  # pragma: no cover - orjson is a dependency; json is the fallback
    orjson = None


class SandboxErrorType(StrEnum):
    """Why a sandboxed call failed (``SandboxResult.error_type``)."""

    TIMEOUT = "timeout"
    MEMORY = "memory"
    EXCEPTION = "exception"
    OUTPUT_TOO_LARGE = "output_too_large"
    CRASH = "crash"
    NETWORK = "network"
    FORBIDDEN = "forbidden"
    COMPILE = "compile"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed call (a worker applies them to each call)."""

    wall_s: float = 5.0
    """Wall-clock seconds, enforced by the parent (the process group is killed)."""
    cpu_s: float = 5.0
    """CPU seconds: RLIMIT_CPU (whole seconds) for one-shot runs, polled by the parent."""
    memory_mb: int = 1024
    """Address space (RLIMIT_AS) in MiB, the interpreter's own ~20 MB included."""
    output_bytes: int = 8 * 1024 * 1024
    """Cap on the JSON size of the returned value; larger is an ``output_too_large`` error."""
    file_bytes: int = 16 * 1024 * 1024
    """Largest file the code may write (RLIMIT_FSIZE)."""
    network: bool = False
    """Allow sockets: no network namespace and no socket refusal."""

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "output_bytes", "file_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"SandboxLimits.{name} must be a positive number, got {value!r}")
        if self.memory_mb < 64:
            raise ConfigError(f"SandboxLimits.memory_mb must be at least 64, got {self.memory_mb}")


DEFAULT_LIMITS = SandboxLimits()


@dataclass
class SandboxResult:
    """Outcome of one sandboxed call; ``ok=False`` results say what went wrong in ``error``."""

    ok: bool
    value: Any = None
    error: str | None = None
    error_type: SandboxErrorType | None = None
    wall_s: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    """What the code printed (stdout and stderr, the first 64 KiB)."""
    traceback: str | None = None
    """Traceback of a failed call, without the sandbox runtime's own frames."""


# ------------------------------------------------------------------------------------------------
# Framing, both sides: an 8-byte big-endian length, then JSON.

_HEADER = struct.Struct("!Q")
_STDOUT_CAP = 64 * 1024
_REPLY_SLACK = 1024 * 1024  # room for stdout, traceback and metadata beside the value


def _dumps(obj: Any) -> bytes:
    if orjson is not None:
        try:
            return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # big ints, exotic keys: json's semantics decide
            pass
    return _json(obj)


def _json(obj: Any) -> bytes:
    """The child's encoder: under a tight RLIMIT_AS json raises MemoryError where orjson aborts."""
    return json.dumps(obj, separators=(",", ":")).encode()


_LONG_NUMBER = re.compile(rb"\d{19}")


def _loads(data: bytes) -> Any:
    if orjson is not None and not _LONG_NUMBER.search(data):  # orjson turns big ints to floats
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError:  # NaN and Infinity: let json decide
            pass
    return json.loads(data)


def _frame(payload: bytes) -> bytes:
    return _HEADER.pack(len(payload)) + payload


def _read_exact(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_frame(fd: int) -> bytes | None:
    head = _read_exact(fd, _HEADER.size)
    return None if head is None else _read_exact(fd, _HEADER.unpack(head)[0])


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


# ------------------------------------------------------------------------------------------------
# Child side: the policy (audit hook), setup, and the call loop.


class SandboxViolation(PermissionError):
    """Raised inside the sandbox when the code does something the policy forbids."""


class SandboxNetworkDisabled(SandboxViolation):
    """Raised inside the sandbox on any network use when ``network=False``."""


class SandboxImportBlocked(ImportError):
    """Raised inside the sandbox on importing ctypes or the raw process spawner."""


class SandboxCpuLimit(BaseException):
    """Raised inside the sandbox on SIGXCPU; not an Exception, so ``except Exception`` misses it."""


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


_LIBC: Any = None  # ctypes' libc, loaded by a root zygote; forgotten before untrusted code runs
_CTYPES_MODULES: tuple[str, ...] = ()
_PR_SET_KEEPCAPS, _PR_SET_NO_NEW_PRIVS = 8, 38
_CAP_DAC_READ_SEARCH, _CAP_SETGID, _CAP_SETUID = 2, 6, 7


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
    workdir = os.path.realpath(init["workdir"])
    os.chdir(workdir)
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

    memory = limits["memory_mb"] * 1024 * 1024
    for name, value in (("CORE", 0), ("AS", memory), ("DATA", memory), ("NOFILE", 128)):
        limit(name, value)
    limit("FSIZE", int(limits["file_bytes"]))
    if init["oneshot"]:
        cpu = max(1, math.ceil(limits["cpu_s"]))
        limit("CPU", cpu, cpu + 1)  # SIGXCPU at the soft limit, SIGKILL a second later
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
    return {
        "process": init["via"],
        "network": "allowed" if network else ("namespace" if init["netns"] else "socket_refusal"),
        "socket_refusal": not network,
        "user": user,
        "no_new_privs": no_new_privs,
        "rlimits": applied,
        "audit_hook": True,
        "clean_env": True,
    }


class _Capture(io.TextIOBase):
    """stdout/stderr of the sandboxed code: the first ``cap`` characters are kept."""

    def __init__(self, cap: int = _STDOUT_CAP) -> None:
        self.parts: list[str] = []
        self.room, self.dropped = cap, 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        kept = text[: max(self.room, 0)]
        self.parts.append(kept)
        self.room -= len(kept)
        self.dropped += len(text) - len(kept)
        return len(text)

    def getvalue(self) -> str:
        tail = f"\n[... {self.dropped} more characters dropped]" if self.dropped else ""
        return "".join(self.parts) + tail


def _find_in_chain(exc: BaseException, kinds: tuple[type[BaseException], ...]):
    """``exc`` or the exception it was raised from/during, if of one of ``kinds``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kinds):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _describe(exc: BaseException, limits: dict[str, Any]) -> dict[str, Any]:
    """error_type, error and traceback of an exception raised by sandboxed code."""
    tb, line = exc.__traceback__, None
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next  # hide the runtime's own frames
    walker = tb
    while walker is not None:
        if walker.tb_frame.f_code.co_filename.startswith("<sandbox:"):
            line = walker.tb_lineno
        walker = walker.tb_next
    where = f" (line {line})" if line else ""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    violation = _find_in_chain(exc, (SandboxViolation, SandboxImportBlocked))
    if isinstance(exc, SandboxCpuLimit):
        kind, error = "timeout", f"exceeded the {limits['cpu_s']:g} s CPU-time limit{where}"
    elif _find_in_chain(exc, (MemoryError,)) is not None:
        kind, error = "memory", f"exceeded the {limits['memory_mb']} MB memory limit{where}"
    elif violation is not None:  # also when a library wrapped it (urllib's URLError, ...)
        kind = "network" if isinstance(violation, SandboxNetworkDisabled) else "forbidden"
        error = f"{violation}{where}" + ("" if violation is exc else f" (surfaced as {text})")
    elif isinstance(exc, OSError) and exc.errno == errno.EFBIG:
        kind, error = (
            "forbidden",
            f"exceeded the {limits['file_bytes']}-byte file size limit{where}",
        )
    else:
        kind, error = "exception", text + where
    formatted = "".join(traceback.format_exception(type(exc), exc, tb))
    return {"error_type": kind, "error": error, "traceback": formatted[-16384:]}


_TOP_LEVEL_DEF = re.compile(r"^(?:async\s+)?def\s+([A-Za-z_]\w*)", re.MULTILINE)


class _Program:
    """The sources exec'd as modules, and calls into their functions (child side)."""

    def __init__(self, sources: dict[str, str], limits: dict[str, Any]) -> None:
        self.limits = limits
        self.functions: dict[str, list[tuple[str, types.FunctionType]]] = {}
        self.failed: dict[str, dict[str, Any]] = {}  # source name -> error description
        self.failed_functions: dict[str, str] = {}  # function name -> source that failed
        for name, source in sources.items():
            self._load(name, source)

    def _load(self, name: str, source: str) -> None:
        filename = f"<sandbox:{name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            code = compile(source, filename, "exec")
        except (SyntaxError, ValueError) as exc:  # ValueError: NUL bytes in the source
            message = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            where = f" (line {exc.lineno})" if getattr(exc, "lineno", None) else ""
            error = f"{type(exc).__name__}: {message}{where}"
            self._fail(name, source, {"error_type": "compile", "error": error, "traceback": None})
            return
        module = types.ModuleType(name)
        module.__file__ = filename
        if name.isidentifier() and name not in sys.modules:
            sys.modules[name] = module  # later sources may import earlier ones
        sys.stdout = sys.stderr = _Capture(0)
        try:
            exec(code, module.__dict__)
        except BaseException as exc:  # module-level code is untrusted too: report, never die
            self._fail(name, source, _describe(exc, self.limits))
            return
        for attr, value in vars(module).items():
            if isinstance(value, types.FunctionType) and value.__module__ == name:
                self.functions.setdefault(attr, []).append((name, value))

    def _fail(self, name: str, source: str, description: dict[str, Any]) -> None:
        self.failed[name] = description
        for function in [name, *_TOP_LEVEL_DEF.findall(source)]:  # found even if it won't parse
            self.failed_functions.setdefault(function, name)

    def _resolve(self, qualified: str) -> tuple[Any, dict[str, Any] | None]:
        source, _, name = qualified.rpartition(":")
        entries = [e for e in self.functions.get(name, []) if not source or e[0] == source]
        if len(entries) == 1:
            return entries[0][1], None
        if entries:
            where = ", ".join(e[0] for e in entries)
            error = f"function {name!r} is defined in several sources ({where}): "
            return None, {"error_type": "exception", "error": error + f"call 'source:{name}'"}
        broken = self.failed_functions.get(name)
        if broken is not None and source in ("", broken):
            failure = self.failed[broken]
            error = f"function {name!r} is unavailable: source {broken!r} failed to load: "
            return None, {**failure, "error": error + failure["error"]}
        close = difflib.get_close_matches(name, list(self.functions), n=1)
        error = f"NameError: the sandboxed source defines no function {name!r}"
        error += f"; did you mean {close[0]!r}?" if close else ""
        if self.failed:
            error += " (sources that failed to load: " + ", ".join(self.failed) + ")"
        return None, {"error_type": "compile" if self.failed else "exception", "error": error}

    def call(self, request: dict[str, Any]) -> bytes:
        function, failure = self._resolve(request["function"])
        if failure is not None:
            return _reply(False, **failure)
        capture, cap = _Capture(), self.limits["output_bytes"]
        sys.stdout = sys.stderr = capture
        signal.setitimer(signal.ITIMER_REAL, 2 * self.limits["wall_s"] + 5)
        try:
            value = function(*request["args"], **request["kwargs"])
            if isinstance(value, types.CoroutineType):
                import asyncio

                value = asyncio.run(value)
            if isinstance(value, str) and len(value) + 2 > cap:  # why encode a huge string?
                error = f"result of at least {len(value) + 2} bytes exceeds the {cap}-byte "
                return _reply(False, "output_too_large", error + "output cap", capture.getvalue())
            try:
                payload = _json(value)
            except (TypeError, ValueError, OverflowError, RecursionError) as exc:
                error = f"the return value is not JSON-serialisable: {exc}"
                return _reply(False, "exception", error, capture.getvalue())
        except BaseException as exc:
            return _reply(False, stdout=capture.getvalue(), **_describe(exc, self.limits))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout = sys.stderr = _Capture(0)
        if len(payload) > cap:
            error = f"result of {len(payload)} bytes exceeds the {cap}-byte output cap"
            return _reply(False, "output_too_large", error, capture.getvalue())
        return _reply(True, stdout=capture.getvalue(), value=payload)


def _reply(
    ok: bool,
    error_type: str | None = None,
    error: str | None = None,
    stdout: str = "",
    traceback: str | None = None,
    value: bytes = b"null",
) -> bytes:
    meta = {"ok": ok, "error_type": error_type, "error": error, "stdout": stdout}
    meta["traceback"] = traceback
    return b'{"meta":' + _json(meta) + b',"value":' + value + b"}"


def _serve(req_fd: int, resp_fd: int, via: str, detached: bool = False) -> None:
    """Child main loop: the init message, setup, then one reply per request until EOF."""
    if not detached:
        _detach({req_fd, resp_fd})
    raw = _read_frame(req_fd)
    if raw is None:
        return
    init = _loads(raw)
    isolation = _setup_child({**init, "via": via})
    signal.setitimer(signal.ITIMER_REAL, 2 * init["limits"]["wall_s"] + 5)
    program = _Program(init["sources"], init["limits"])
    signal.setitimer(signal.ITIMER_REAL, 0)
    load_errors = {name: failure["error"] for name, failure in program.failed.items()}
    _write_all(resp_fd, _frame(_json({"isolation": isolation, "load_errors": load_errors})))
    while (raw := _read_frame(req_fd)) is not None:
        _write_all(resp_fd, _frame(program.call(_loads(raw))))
        if init["oneshot"]:
            return


def _zygote_main(sock_fd: int) -> None:
    """Forkserver loop: ``F`` + two fds -> a sandbox child's pid; ``S`` + pid -> its exit status.

    A *spare* child is forked ahead of each request, so that serving one is a hand-over of two
    file descriptors rather than a fork.
    """
    sock = socket.socket(fileno=sock_fd)
    parent, exits, spare, next_spare = os.getppid(), {}, None, 0.0
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)  # SIGCHLD wakes the loop, so killed children are reaped at once
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    sock.sendall(b"R")
    while os.getppid() == parent:  # the trainer died: so do we (and our idle children, by EOF)
        _reap(exits)
        if spare is not None and spare[0] in exits:
            spare = None
        want_spare = spare is None and time.monotonic() >= next_spare
        ready = select.select([sock, wake_r], [], [], 0 if want_spare else 1.0)[0]
        if wake_r in ready:
            os.read(wake_r, 4096)
        if sock not in ready:
            if want_spare and (spare := _fork_spare()) is None:
                next_spare = time.monotonic() + 1.0  # fork failed (EAGAIN?): retry later
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(sock, 64, 2)
        except OSError:
            return
        if not msg:
            return
        if msg == b"F" and len(fds) == 2:
            pid, spare = _hand_over(spare, fds), None
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


def _runtime_main(argv: list[str]) -> None:
    """Entry point of sandbox interpreters: ``zygote FD`` or ``serve REQ_FD RESP_FD``."""
    global _LIBC, _CTYPES_MODULES
    if os.geteuid() == 0:  # privilege dropping needs prctl and capset
        before = set(sys.modules)
        try:
            import ctypes

            _LIBC = ctypes.CDLL(None, use_errno=True)
        except (ImportError, OSError):
            _LIBC = None
        _CTYPES_MODULES = tuple(set(sys.modules) - before)
    gc.freeze()  # forked children then never scan (and copy-on-write) the runtime's objects
    if argv[0] == "zygote":
        _zygote_main(int(argv[1]))
        return
    code = 0
    try:
        _serve(int(argv[1]), int(argv[2]), "subprocess")
    except BaseException:
        code = 70
    finally:
        os._exit(code)


# ------------------------------------------------------------------------------------------------
# Parent side: launching (zygote or subprocess), channels with deadlines, the public API.

_BOOT = (  # imports this module without the package's __init__, which loads the whole library
    "import sys, types\n"
    "pkg = types.ModuleType('agentworld_gym'); pkg.__path__ = [sys.argv[1]]\n"
    "sys.modules['agentworld_gym'] = pkg\n"
    "from agentworld_gym.sandbox import _runtime_main\n"
    "_runtime_main(sys.argv[2:])\n"
)
_FATAL = frozenset({SandboxErrorType.TIMEOUT, SandboxErrorType.MEMORY, SandboxErrorType.CRASH})
_ERROR_TYPES = frozenset(kind.value for kind in SandboxErrorType)


def _clean_env(home: str = "/") -> dict[str, str]:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": home}


def _popen(netns: tuple[str, ...] | None, fds: tuple[int, ...], *args: str, **kw: Any):
    cmd = [*(netns or ()), sys.executable, "-I", "-B", "-c", _BOOT, str(Path(__file__).parent)]
    return subprocess.Popen(
        [*cmd, *args], pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        cwd="/", env=_clean_env(), start_new_session=True, **kw,
    )  # fmt: skip


@functools.lru_cache(maxsize=1)
def _netns_prefix() -> tuple[str, ...] | None:
    """The command prefix that starts a process in an empty network namespace, if allowed."""
    unshare = shutil.which("unshare")
    if unshare is None or os.environ.get("AGENTWORLD_SANDBOX_NETNS") == "0":
        return None
    candidates = [(unshare, "--net")]
    if os.geteuid() != 0:
        candidates.append((unshare, "--user", "--map-root-user", "--net"))
    for prefix in candidates:
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, timeout=10, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        if done.returncode == 0:
            return prefix
    return None


def _others_can_reach(path: Path, read: bool) -> bool:
    """Whether ``nobody`` can traverse every ancestor of ``path`` (and list it, if ``read``)."""
    try:
        for parent in [path, *path.parents]:
            mode = os.stat(parent).st_mode
            if not mode & stat.S_IXOTH or (read and parent == path and not mode & stat.S_IROTH):
                return False
    except OSError:
        return False
    return True


@functools.lru_cache(maxsize=1)
def _nobody_can_read_python() -> bool:
    paths = {sysconfig.get_path(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    paths.add(str(Path(__file__).parent))
    return all(_others_can_reach(Path(p).resolve(), read=True) for p in paths if p)


@functools.lru_cache(maxsize=1)
def _nobody_ids() -> tuple[int, int]:
    import pwd

    try:
        entry = pwd.getpwnam("nobody")
        return entry.pw_uid, entry.pw_gid
    except KeyError:
        return 65534, 65534


def _user_plan(workdir: Path) -> dict[str, Any] | None:
    """How the child drops privileges (None: it keeps ours, which are not root's)."""
    if os.geteuid() != 0 or os.environ.get("AGENTWORLD_SANDBOX_USER") == "same":
        return None
    uid, gid = _nobody_ids()
    plain = _nobody_can_read_python() and _others_can_reach(workdir.resolve(), read=False)
    return {"uid": uid, "gid": gid, "mode": "nobody" if plain else "nobody_read"}


def _give_to(workdir: Path, plan: dict[str, Any] | None, recursive: bool = True) -> None:
    """Make the working folder the sandbox user's, so it can write there and nowhere else."""
    if plan is None:
        return
    os.lchown(workdir, plan["uid"], plan["gid"])
    for root, dirs, files in os.walk(workdir) if recursive else ():
        for name in dirs + files:
            os.lchown(os.path.join(root, name), plan["uid"], plan["gid"])


class _ChannelError(Exception):
    """No proper answer: ``timeout``, ``cpu``, ``closed``, ``too_large`` or ``protocol``."""

    def __init__(self, kind: str, size: int = 0) -> None:
        super().__init__(kind)
        self.kind, self.size = kind, size


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
_ZYGOTES: dict[bool, _Zygote] = {}  # network allowed? -> its zygote
_ZYGOTE_BROKEN: set[bool] = set()
_WORKERS: weakref.WeakSet[SandboxWorker] = weakref.WeakSet()


def _after_fork_in_child() -> None:
    """A forked trainer process must not share its parent's zygotes or workers."""
    global _ZYGOTE_LOCK
    _ZYGOTE_LOCK = threading.Lock()
    for zygote in _ZYGOTES.values():
        zygote._sock.close()  # our copy only: the zygote keeps serving the parent
    _ZYGOTES.clear()
    for worker in list(_WORKERS):
        worker._abandon()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _zygote_for(network: bool) -> _Zygote | None:
    if os.environ.get("AGENTWORLD_SANDBOX_ZYGOTE") == "0":
        return None
    with _ZYGOTE_LOCK:
        zygote = _ZYGOTES.pop(network, None)
        if zygote is not None and zygote.alive():
            _ZYGOTES[network] = zygote
            return zygote
        if zygote is not None:
            zygote.close()
        if network in _ZYGOTE_BROKEN:
            return None
        try:
            _ZYGOTES[network] = zygote = _Zygote(None if network else _netns_prefix())
        except (SandboxError, OSError) as exc:
            _ZYGOTE_BROKEN.add(network)
            warnings.warn(f"{exc}; starting one interpreter per sandbox instead", stacklevel=4)
            return None
        return zygote


class _Proc:
    """Parent handle of one sandbox process: its pid, two pipe ends, and how to reap it."""

    def __init__(self, network: bool, preload: bytes = b"") -> None:
        """Start it; ``preload`` goes into the request pipe first, so the child starts at once."""
        req_r, self.to_child = os.pipe2(os.O_CLOEXEC | os.O_NONBLOCK)
        self.from_child, resp_w = os.pipe2(os.O_CLOEXEC)
        self.owner, self._popen = os.getpid(), None
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
                    with _ZYGOTE_LOCK:
                        if _ZYGOTES.get(network) is self._zygote:
                            del _ZYGOTES[network]
                    self._zygote.close()
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

    def recv(self, deadline: float, max_bytes: int, cpu_s: float | None = None) -> dict:
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
                except ValueError:  # the code wrote to the protocol pipe itself
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
    proc: _Proc, err: _ChannelError, limits: SandboxLimits, started: float, isolation: dict
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


def _result(reply: dict, started: float, isolation: dict[str, Any]) -> SandboxResult:
    meta = reply.get("meta") or {}
    kind = meta.get("error_type")
    return SandboxResult(
        ok=meta.get("ok") is True,
        value=reply.get("value"),
        error=meta.get("error"),
        error_type=SandboxErrorType(kind) if kind in _ERROR_TYPES else None,
        wall_s=time.monotonic() - started,
        isolation=isolation,
        stdout=meta.get("stdout") or "",
        traceback=meta.get("traceback"),
    )


def _init_message(workdir: Path, sources: dict, env: dict | None, **fields: Any) -> bytes:
    env = dict(env or {})
    bad = [k for k, v in env.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise SandboxError(f"sandbox env must map str to str; bad entries: {bad!r}")
    bad = [name for name, source in sources.items() if not isinstance(source, str)]
    if bad:
        raise SandboxError(f"sandbox sources must be str; not so for {bad!r}")
    limits = fields["limits"]
    fields.update(limits=asdict(limits), netns=not limits.network and _netns_prefix() is not None)
    return _frame(_dumps({"workdir": str(workdir), "env": env, "sources": sources, **fields}))


def _call_message(function: str, args: list[Any], kwargs: dict[str, Any]) -> bytes:
    if not isinstance(function, str):
        raise SandboxError(f"function must be a name (str), got {function!r}")
    try:
        return _frame(_dumps({"function": function, "args": list(args), "kwargs": kwargs}))
    except (TypeError, ValueError, OverflowError) as exc:
        raise SandboxError(f"arguments of {function!r} are not JSON-serialisable: {exc}") from exc


def run_function(
    source: str,
    function: str,
    args: list[Any],
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    env: dict[str, str] | None = None,
) -> SandboxResult:
    """Exec ``source`` in a fresh sandbox process, call ``function(*args)``, return its value.

    The process is forked from a warm zygote (a few ms) and works in a fresh temporary folder,
    removed afterwards. Misbehaviour never raises: it is a result with ``ok=False``.

    >>> run_function("def verify(a, b):\\n    return a + b", "verify", [1, 2]).value
    3
    """
    started = time.monotonic()
    request = _call_message(function, args, {})
    workdir = Path(tempfile.mkdtemp(prefix="agentworld-sandbox-"))
    try:
        plan = _user_plan(workdir)
        _give_to(workdir, plan, recursive=False)
        init = _init_message(workdir, {"main": source}, env, limits=limits, oneshot=True, user=plan)
        proc = _Proc(limits.network, preload=init + request)
        try:
            deadline, isolation = time.monotonic() + limits.wall_s, {}
            try:
                proc.send(b"", deadline)
                isolation = proc.recv(deadline, _REPLY_SLACK, limits.cpu_s).get("isolation", {})
                reply = proc.recv(deadline, limits.output_bytes + _REPLY_SLACK, limits.cpu_s)
            except _ChannelError as err:
                return _failure(proc, err, limits, started, isolation)
            return _result(reply, started, isolation)
        finally:
            proc.close()
    finally:
        try:
            os.rmdir(workdir)
        except OSError:  # the code left files behind
            shutil.rmtree(workdir, ignore_errors=True)


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
                failure = self._start(started)
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

    def _start(self, started: float) -> SandboxResult | None:
        if not self._workdir.is_dir():
            raise SandboxError(f"the worker's working folder {self._workdir} is not a directory")
        plan = _user_plan(self._workdir)
        _give_to(self._workdir, plan)
        limits = self._limits
        init = _init_message(
            self._workdir.resolve(),
            self._sources,
            self._env,
            limits=limits,
            oneshot=False,
            user=plan,
        )
        proc = _Proc(limits.network, preload=init)
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
        if self._proc is not None:
            self._proc.kill()
            self._proc.close()
            self._proc = None

    def _abandon(self) -> None:
        """In a forked copy of the trainer: forget (never kill) the parent's process."""
        self._lock = threading.Lock()
        if self._proc is not None:
            self._proc.owner = -1
            self._proc.close()
            self._proc = None

    def restart(self, workdir: Path | None = None, env: dict[str, str] | None = None) -> None:
        """Recycle for a new episode: stop the process; the next call starts a fresh one.

        ``workdir`` and ``env`` replace the current ones when given (a new database copy and its
        ``MCP_DB_DIR``, say).
        """
        with self._lock:
            self._stop()
            if workdir is not None:
                self._workdir = Path(workdir)
            if env is not None:
                self._env = dict(env)

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
            if self._proc is not None and self._proc.owner == os.getpid():
                self._stop()
        except Exception:  # interpreter shutdown: modules may already be gone
            pass

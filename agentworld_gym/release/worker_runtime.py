"""Worker side of the code-tool runtime: exec'd first in every tool worker, before any tool.

This file is *source*, not an import of the trainer: :mod:`agentworld_gym.release.runtime` sends
its text to a :class:`~agentworld_gym.sandbox.SandboxWorker`, which execs it as the module
``aw_runtime`` inside the isolated process (working folder = the episode's database copy). It
installs itself only there (``AGENTWORLD_TOOL_WORKER=1``), so importing it elsewhere is inert.

What it adds to the sandbox's isolation, for code written against the Agent-World release
contract (``MCP_DB_DIR`` files, wall-clock reads):

* a pinned clock: ``datetime.datetime.now/utcnow/today``, ``datetime.date.today``,
  ``time.time/time_ns/gmtime/localtime/ctime/strftime`` read the time the parent sends with
  each call (``ctx.now()``), so rewards do not depend on when training ran; ``random``,
  ``uuid.uuid4/uuid1`` and ``os.urandom`` are seeded per call for the same reason;
* reads confined to the database folder and the interpreter's own files (the sandbox already
  confines writes);
* a per-call undo log: every file in the folder is backed up before the call first opens it for
  writing (or renames, truncates or removes it), and restored when the call raises, so a tool
  that fails after writing leaves the folder as it was (a call that dies, or whose result is
  refused, is undone by the parent instead, from the episode's database). The names written
  are returned with the result so the parent can mirror them into the episode's ``Database``.
"""

from __future__ import annotations

import datetime as _dt
import os
import random
import sys
import sysconfig
import time as _time
import uuid
from typing import Any

_ROOT = os.path.realpath(os.getcwd())
_PREFIX = _ROOT + "/"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_TRUNC
_PATH_EVENTS = {  # mutating events -> indices of their path arguments
    "os.remove": (0,),
    "os.truncate": (0,),
    "os.rename": (0, 1),
    "shutil.move": (0, 1),
    "shutil.copyfile": (1,),
}
_READ_EVENTS = ("os.listdir", "os.scandir")
_EXTRA_READABLE = ("/dev/null", "/dev/urandom", "/etc/localtime", "/etc/mime.types")
_READ_PREFIXES = ("/usr/share/zoneinfo/",)

_state: dict[str, Any] = {
    "now": float(os.environ.get("AGENTWORLD_CLOCK", "0") or 0),
    "backups": None,
    "busy": False,
}
_real_open = open
_realpath = os.path.realpath
_fsdecode = os.fsdecode
_sandbox = sys.modules.get("agentworld_gym.sandbox")
_Violation: type[Exception] = getattr(_sandbox, "SandboxViolation", PermissionError)


def _readable_roots() -> tuple[str, ...]:
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots.update(p for p in sysconfig.get_paths().values() if p)
    roots.update(p for p in sys.path if p and os.path.isabs(p))
    return tuple(sorted({_realpath(p).rstrip("/") + "/" for p in roots}))


# -- the pinned clock ---------------------------------------------------------------------------
_RealDateTime, _RealDate = _dt.datetime, _dt.date


class _Pinned(type):
    """``isinstance(real_datetime, datetime.datetime)`` stays true after the swap."""

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls.__mro__[1])

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.__mro__[1])


class PinnedDateTime(_RealDateTime, metaclass=_Pinned):
    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> PinnedDateTime:
        return cls.fromtimestamp(_state["now"], tz)

    @classmethod
    def utcnow(cls) -> PinnedDateTime:
        return cls.fromtimestamp(_state["now"], _dt.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> PinnedDateTime:
        return cls.fromtimestamp(_state["now"])


class PinnedDate(_RealDate, metaclass=_Pinned):
    @classmethod
    def today(cls) -> PinnedDate:
        return cls.fromtimestamp(_state["now"])


def _pin_clock() -> None:
    gmtime, localtime, ctime, strftime = _time.gmtime, _time.localtime, _time.ctime, _time.strftime
    _dt.datetime, _dt.date = PinnedDateTime, PinnedDate  # type: ignore[misc]
    _time.time = lambda: _state["now"]
    _time.time_ns = lambda: int(_state["now"] * 1e9)
    _time.gmtime = lambda secs=None: gmtime(_state["now"] if secs is None else secs)
    _time.localtime = lambda secs=None: localtime(_state["now"] if secs is None else secs)
    _time.ctime = lambda secs=None: ctime(_state["now"] if secs is None else secs)
    _time.strftime = lambda fmt, t=None: strftime(fmt, localtime(_state["now"]) if t is None else t)
    _time.asctime = lambda t=None: _time.strftime("%a %b %d %H:%M:%S %Y", t)


def _seeded_bytes(n: int) -> bytes:
    return random.getrandbits(8 * n).to_bytes(n, "little") if n > 0 else b""


def _pin_randomness() -> None:
    uuid.uuid4 = lambda: uuid.UUID(int=random.getrandbits(128), version=4)
    uuid.uuid1 = lambda node=None, clock_seq=None: uuid.UUID(int=random.getrandbits(128), version=1)
    os.urandom = _seeded_bytes
    random._urandom = _seeded_bytes  # type: ignore[attr-defined]  # SystemRandom, secrets


# -- the audit hook: read confinement and the undo log --------------------------------------------
def _make_hook() -> Any:
    readable = _readable_roots()

    def inside(real: str) -> bool:
        return real == _ROOT or real.startswith(_PREFIX)

    def check_read(path: Any) -> None:
        real = _realpath(_fsdecode(path))
        if inside(real) or real.startswith(readable) or real in _EXTRA_READABLE:
            return
        if real.startswith(_READ_PREFIXES) or real + "/" in readable:
            return
        raise _Violation(f"reading {real!r} is not allowed: tools may only read their database")

    def backup(path: Any) -> None:
        backups = _state["backups"]
        if backups is None or isinstance(path, int):
            return
        real = _realpath(_fsdecode(path))
        if not real.startswith(_PREFIX) or real in backups:
            return
        _state["busy"] = True
        try:
            with _real_open(real, "rb") as handle:
                backups[real] = handle.read()
        except FileNotFoundError:
            backups[real] = None
        except IsADirectoryError:
            pass
        finally:
            _state["busy"] = False

    def hook(event: str, args: tuple) -> None:
        if _state["busy"]:
            return
        if event == "open":
            path, mode, flags = args
            if isinstance(path, int):
                return
            if (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                (flags or 0) & _WRITE_FLAGS
            ):
                backup(path)
            else:
                check_read(path)
        elif event in _PATH_EVENTS:
            for index in _PATH_EVENTS[event]:
                backup(args[index])
        elif event in _READ_EVENTS and args and args[0] is not None:
            if not isinstance(args[0], int):
                check_read(args[0])

    return hook


def _restore(backups: dict[str, bytes | None]) -> None:
    _state["busy"] = True
    try:
        for path, data in backups.items():
            if data is None:
                if os.path.lexists(path):
                    os.remove(path)
            else:
                with _real_open(path, "wb") as handle:
                    handle.write(data)
    finally:
        _state["busy"] = False


def _finish(backups: dict[str, bytes | None]) -> list[str]:
    return sorted(os.path.relpath(path, _ROOT) for path in backups)


def _call_guarded(fn: Any, kwargs: dict[str, Any], always_undo: bool) -> Any:
    backups: dict[str, bytes | None] = {}
    _state["backups"] = backups
    try:
        value = fn(**kwargs)
    except BaseException:
        _state["backups"] = None
        try:
            _restore(backups)
        except BaseException:  # cannot undo: die, and the parent rebuilds the folder
            os._exit(70)
        raise
    _state["backups"] = None
    written = _finish(backups)
    if always_undo:
        _restore(backups)
    return value, written


def _function(module: str, function: str) -> Any:
    mod = sys.modules.get(module)
    fn = getattr(mod, function, None) if mod is not None else None
    if not callable(fn):
        raise LookupError(f"tool function {module}:{function} is not defined (did it load?)")
    return fn


def dispatch(
    module: str,
    function: str,
    kwargs: dict[str, Any],
    now: float,
    seed: str,
) -> dict[str, Any]:
    """Call one tool at the pinned time ``now``; return its value and the files it wrote.

    The process serves one episode (module state dies with it). A result the sandbox then
    refuses (too large, not JSON) is not undone here: the parent rebuilds the folder from the
    episode's database after any failure of that kind.
    """
    _state["now"] = now
    random.seed(seed)
    value, written = _call_guarded(_function(module, function), kwargs, always_undo=False)
    return {"r": value, "w": written}


def run_test(module: str, function: str, now: float, seed: str) -> dict[str, Any]:
    """Run one unit test (a function that raises on failure); its writes are always undone."""
    _state["now"] = now
    random.seed(seed)
    _call_guarded(_function(module, function), {}, always_undo=True)
    return {"passed": True}


def ping() -> bool:
    return True


if os.environ.get("AGENTWORLD_TOOL_WORKER") == "1":
    os.environ.setdefault("TZ", "UTC")
    _time.tzset()
    _pin_clock()
    _pin_randomness()
    sys.addaudithook(_make_hook())

"""Child side: exec the sources as modules, serve calls into their functions, describe failures.

Everything the untrusted code does -- module-level code included -- is caught and turned into a
reply; the child answers every request and only the parent decides to kill it.
"""

from __future__ import annotations

import base64
import difflib
import errno
import io
import linecache
import marshal
import os
import re
import signal
import sys
import traceback
import types
from typing import Any

from agentworld_gym.sandbox.errors import (
    SandboxCpuLimit,
    SandboxImportBlocked,
    SandboxNetworkDisabled,
    SandboxViolation,
)
from agentworld_gym.sandbox.framing import _frame, _json, _loads, _read_frame, _write_all
from agentworld_gym.sandbox.isolation import _detach, _setup_child

_STDOUT_CAP = 64 * 1024
_RUNTIME_PREFIX = os.path.dirname(__file__) + os.sep  # frames of the sandbox runtime itself


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


def _find_in_chain(
    exc: BaseException, kinds: tuple[type[BaseException], ...]
) -> BaseException | None:
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
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_RUNTIME_PREFIX):
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

    def __init__(
        self,
        sources: dict[str, str],
        limits: dict[str, Any],
        compiled: dict[str, str | None] | None = None,
    ) -> None:
        self.limits = limits
        self.functions: dict[str, list[tuple[str, types.FunctionType]]] = {}
        self.failed: dict[str, dict[str, Any]] = {}  # source name -> error description
        self.failed_functions: dict[str, str] = {}  # function name -> source that failed
        for name, source in sources.items():
            self._load(name, source, (compiled or {}).get(name))

    def _load(self, name: str, source: str, compiled: str | None = None) -> None:
        filename = f"<sandbox:{name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        try:
            if compiled is not None:  # compiled by the parent (same interpreter)
                code = marshal.loads(base64.b64decode(compiled))
            else:
                code = compile(source, filename, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # NUL, nesting
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


class _Refusal:
    """Stands in for the program where the kernel's confinement is unavailable: runs nothing."""

    def __init__(self, reason: str) -> None:
        self.reason, self.failed = reason, {}

    def call(self, request: dict[str, Any]) -> bytes:
        return _reply(False, "forbidden", self.reason)


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
    if isolation.get("refused"):
        program: _Program | _Refusal = _Refusal(isolation["refused"])
    else:
        signal.setitimer(signal.ITIMER_REAL, 2 * init["limits"]["wall_s"] + 5)
        program = _Program(init["sources"], init["limits"], init.get("compiled"))
        signal.setitimer(signal.ITIMER_REAL, 0)
    load_errors = {name: failure["error"] for name, failure in program.failed.items()}
    _write_all(resp_fd, _frame(_json({"isolation": isolation, "load_errors": load_errors})))
    while (raw := _read_frame(req_fd)) is not None:
        _write_all(resp_fd, _frame(program.call(_loads(raw))))
        if init["oneshot"]:
            return

"""Run code-implemented tools (the Agent-World release contract) out of process.

A tool whose ``implementation.type`` is ``"release"`` is Python written against the contract of
the published Agent-World environments: a module that finds its database folder in the
``MCP_DB_DIR`` variable (read at import), reads and rewrites one JSON file per collection, and
exposes the tool as ``<name with - replaced by _>(**arguments, **_extra)``, returning in-band
``{"error": ...}`` objects for API errors::

    {"type": "release", "source": "<python source>", "function": "create_task"}
    {"type": "release", "file": "tools/create_task.py", "function": "create_task"}
    {"type": "release", ..., "module": "aw_create_task_2"}  # when two tools share a function
    {"type": "release", ..., "limits": {"wall_s": 5, "cpu_s": 5, "memory_mb": 1024}}
    {"type": "release", ..., "disabled": "why"}   # never run; calls answer this error

Each source runs as its own module (``aw_<function>`` unless ``module`` says otherwise).

Imported environments (:mod:`agentworld_gym.release.importer`) and LLM-synthesized ones
(:mod:`agentworld_gym.synthesis.llm_env`) both use it, so one runtime serves both.

How an episode runs (see :class:`ToolRuntime`):

* The episode's :class:`~agentworld_gym.tools.ToolContext` gets a *slot* from a per-environment
  pool on its first call: a private copy of the database folder and a
  :class:`~agentworld_gym.sandbox.SandboxWorker` over it (empty network namespace, rlimits,
  ``nobody``, audit hook; CPU-time, wall-clock, memory and output caps per call). The slot goes
  back to the pool when the context is closed or garbage-collected, i.e. when ``reset`` starts
  the next episode or the env is closed. A worker that ran an episode's code never serves
  another: the next episode gets a new process, forked from the zygote (which never runs tool
  code) and confined by the kernel (see :mod:`agentworld_gym.sandbox.confine`); the folder,
  cleaned of anything that is not the database, is the only state carried over.
* The folder is the tools' source of truth while the episode runs, and the episode's
  :class:`~agentworld_gym.database.Database` mirrors it with every file as a *document* (release
  collections often have no primary key). After each call, the files the call wrote are read
  back and stored with ``set_document`` inside the call's transaction, so verifiers, snapshots
  and ``Toolbox.call``'s rollback keep working.
* Before each call, every file whose document is no longer the object the folder was last
  synced to (a rollback, a new episode, a fork) is rewritten from the database: a few identity
  checks, so the folder can never silently drift from the state the verifier sees.
* The parent does not trust the worker's account of what it wrote: after every call it stats
  the folder's entries (inode, ctime, size, type; ctime cannot be forged) and reads back every
  collection file that changed. A call that fails after writing is undone inside the worker
  (files are backed up on first open for writing), and if anything changed all the same, or the
  call killed the worker or its result was refused, the slot is *stale* and its folder is
  rebuilt from the database before the next call. Files are read and written without
  following links or opening special files.
"""

from __future__ import annotations

import atexit
import collections
import dataclasses
import datetime as dt
import itertools
import os
import re
import shutil
import stat
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentworld_gym.database import Database
from agentworld_gym.errors import ConfigError, ToolExecutionError
from agentworld_gym.release.files import (
    RUNTIME_MODULE,
    WORKER_SOURCE,
    copy_plain,
    copy_plain_file,
    document,
    documents_database,
    load_json,
    remove_entry,
    slot_folder,
    write_doc,
)
from agentworld_gym.release.verifier import install as install_verifier
from agentworld_gym.sandbox import SandboxErrorType, SandboxLimits, SandboxResult, SandboxWorker
from agentworld_gym.spec import EnvSpec, ToolSpec
from agentworld_gym.tools import ToolContext, ToolFn, register_implementation

IMPLEMENTATION_TYPE = "release"
DEFAULT_LIMITS = SandboxLimits(wall_s=5.0, cpu_s=5.0, memory_mb=1024, output_bytes=1 << 20)
"""Per-call limits of imported tools: 5 s, 1 GiB address space, 1 MiB result."""
_SELF_RESTORED = frozenset(
    {
        SandboxErrorType.EXCEPTION,
        SandboxErrorType.FORBIDDEN,
        SandboxErrorType.NETWORK,
        SandboxErrorType.COMPILE,
    }
)
"""Failures after which the worker has undone the call itself; anything else: rebuild."""


def function_name(tool_name: str) -> str:
    """``"update-task-status"`` -> ``"update_task_status"`` (the release's convention)."""
    name = re.sub(r"\W", "_", tool_name)
    return f"_{name}" if name[:1].isdigit() else name


@dataclass(frozen=True)
class RuntimeOptions:
    """How an environment's code tools run."""

    limits: SandboxLimits = DEFAULT_LIMITS
    """Per-call limits; a limit set in the tools' ``implementation.limits`` replaces the
    default (the largest value across the environment's tools: one worker serves them all)."""
    max_idle: int = 8
    """Idle slots kept per environment; more are closed when they come back."""


@dataclass
class _ToolCode:
    module: str
    function: str
    disabled: str | None = None


@dataclass(eq=False)
class _Slot:
    folder: Path
    worker: SandboxWorker
    mirror: dict[str, Any]
    owner: int = field(default_factory=os.getpid)
    keep: frozenset[str] = frozenset()
    """Names of the folder's entries at creation: anything else a tool leaves is removed."""
    stats: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    """Entry name -> (mode, inode, ctime ns, size) as of the parent's last look."""
    stale: bool = False
    closed: bool = False


class ToolRuntime:
    """The code tools of one :class:`~agentworld_gym.spec.EnvSpec` and their worker pool.

    Built once per spec by the ``"release"`` implementation factory (see :func:`runtime_for`);
    it also installs the documents-only initial database as ``spec.database``.
    """

    def __init__(self, env: EnvSpec, options: RuntimeOptions | None = None) -> None:
        self.env = env
        self.sources: dict[str, str] = {RUNTIME_MODULE: WORKER_SOURCE}
        self.tools: dict[str, _ToolCode] = {}
        base = options or RuntimeOptions()
        merged = dataclasses.asdict(base.limits)
        declared: dict[str, Any] = {}
        for spec in self._code_tools():
            for key, value in (spec.implementation.get("limits") or {}).items():
                if key not in merged or key == "network":
                    raise ConfigError(f"tool {spec.name!r}: unknown sandbox limit {key!r}")
                declared[key] = max(declared.get(key, value), value)
        merged.update(declared)
        self.options = RuntimeOptions(SandboxLimits(**merged), base.max_idle)
        for spec in self._code_tools():
            self._add_tool(spec)
        self.base = self._install_database()
        clock = env.runtime.clock.replace("Z", "+00:00")
        self.clock_start = dt.datetime.fromisoformat(clock).timestamp()
        self._idle: collections.deque[_Slot] = collections.deque()
        self._slots: list[_Slot] = []
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._tmp: Path | None = None
        self._key = f"_tool_runtime_slot_{id(self)}"
        _RUNTIMES.add(self)

    # -- setup ------------------------------------------------------------------------------
    def _code_tools(self) -> list[ToolSpec]:
        return [t for t in self.env.tools if t.implementation.get("type") == IMPLEMENTATION_TYPE]

    def _add_tool(self, spec: ToolSpec) -> None:
        impl = spec.implementation
        function = impl.get("function") or function_name(spec.name)
        module = impl.get("module") or f"aw_{function_name(function)}"
        if not module.startswith("aw_") or not module.isidentifier():
            raise ConfigError(f"tool {spec.name!r}: module {module!r} must look like 'aw_name'")
        if "source" in impl:
            source = impl["source"]
        elif "file" in impl:
            if self.env.root is None:
                raise ConfigError(f"tool {spec.name!r}: 'file' needs an environment folder")
            path = Path(self.env.root) / impl["file"]
            try:
                source = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise ConfigError(f"tool {spec.name!r}: cannot read {path}: {exc}") from exc
        else:
            raise ConfigError(f"tool {spec.name!r}: a 'release' tool needs 'file' or 'source'")
        if not isinstance(source, str):
            raise ConfigError(f"tool {spec.name!r}: source must be text")
        disabled = impl.get("disabled")
        if not disabled:
            known = self.sources.setdefault(module, source)
            if known != source:
                raise ConfigError(f"tool {spec.name!r}: module {module!r} has two sources")
        self.tools[spec.name] = _ToolCode(module, function, disabled or None)

    def _install_database(self) -> Database:
        current = self.env.__dict__.get("database")
        if isinstance(current, Database) and not current.collections:
            return current  # already documents-only (e.g. the spec loaded it that way)
        base = documents_database(self.env)
        self.env.__dict__["database"] = base  # functools.cached_property's slot
        return base

    # -- the hot path -----------------------------------------------------------------------
    def call(self, ctx: ToolContext, tool: str, arguments: dict[str, Any]) -> Any:
        """Run ``tool`` for the episode of ``ctx``; mirror the files it wrote into ``ctx.db``."""
        code = self.tools[tool]
        if code.disabled:
            raise _error(tool, "disabled", f"the tool is disabled: {code.disabled}")
        slot = self._session(ctx)
        self._sync(slot, ctx.db)
        request = {
            "module": code.module,
            "function": code.function,
            "kwargs": arguments,
            "now": ctx.now().timestamp(),
            "seed": f"{ctx.env_id}|{ctx.task_id}|{ctx.calls}|{tool}",
        }
        result = slot.worker.call(f"{RUNTIME_MODULE}:dispatch", request)
        changed = self._changed(slot)
        if not result.ok:
            if changed:  # the worker's own undo did not cover it: rebuild from the database
                slot.stale = True
            raise self._failure(slot, tool, code, result)
        value, written = result.value["r"], result.value["w"]
        if isinstance(written, list):
            changed.update(name for name in written if isinstance(name, str))
        if changed:
            updates = self._read_back(slot, tool, changed)
            for name, doc in updates.items():
                ctx.db.set_document(name, doc)
                slot.mirror[name] = doc
        return value

    def _failure(
        self, slot: _Slot, tool: str, code: _ToolCode, result: SandboxResult
    ) -> ToolExecutionError:
        if result.error_type not in _SELF_RESTORED:
            slot.stale = True
        load_error = slot.worker.load_errors.get(code.module)
        if load_error is not None:
            return _error(tool, "compile", f"the tool's source failed to load: {load_error}")
        reason = result.error_type.value if result.error_type else "crash"
        return _error(tool, reason, _point_at_tool(result, code.module))

    def _changed(self, slot: _Slot) -> set[str]:
        """Names of the folder's entries that appeared, vanished or changed since the last look."""
        before, now = slot.stats, _scan(slot.folder)
        slot.stats = now
        return {name for name in before.keys() | now.keys() if before.get(name) != now.get(name)}

    def _read_back(self, slot: _Slot, tool: str, names: set[str]) -> dict[str, Any]:
        updates: dict[str, Any] = {}
        for rel in sorted(names):
            if "/" in rel or not rel.endswith(".json"):
                continue  # only top-level JSON files are collections
            path = slot.folder / rel
            try:
                exists = os.path.lexists(path)
                limit = self.options.limits.file_bytes
                updates[rel[:-5]] = load_json(path, limit) if exists else None
            except (OSError, ValueError) as exc:
                slot.stale = True
                message = f"the tool left {rel} unreadable: {exc}"
                raise _error(tool, "corrupt_state", message) from None
        return updates

    # -- episodes -------------------------------------------------------------------------------
    def begin(self, ctx: ToolContext) -> None:
        """At ``reset``: take a slot and start its fresh worker, which loads while the agent
        thinks, so that the episode's first call finds it ready."""
        self._session(ctx)

    def end(self, ctx: ToolContext, *, close: bool = False) -> None:
        """The episode is over: its worker is stopped at once and its slot returns to the pool
        (``close``: the slot, and every idle one, is removed with its folder)."""
        entry = ctx.__dict__.pop(self._key, None)
        if entry is None:
            return
        slot, finalizer = entry
        finalizer.detach()
        if slot.owner != os.getpid() or slot.closed:
            return
        if close:
            self._close_slot(slot)
            while self._idle:
                idle = self._idle.popleft()
                if idle.owner == os.getpid() and not idle.closed:
                    self._close_slot(idle)
            return
        slot.worker.restart()  # nothing of the episode's code outlives it
        self._idle.append(slot)

    # -- slots: one per live episode ----------------------------------------------------------
    def _session(self, ctx: ToolContext) -> _Slot:
        entry = ctx.__dict__.get(self._key)
        if entry is not None and entry[0].owner == os.getpid() and not entry[0].closed:
            return entry[0]
        slot = self._acquire()
        finalizer = weakref.finalize(ctx, self._idle.append, slot)  # deque.append: GC-safe
        ctx.__dict__[self._key] = (slot, finalizer)
        self._full_sync(slot, ctx.db)
        slot.worker.start()  # the fresh process loads the sources while we return
        return slot

    def _acquire(self) -> _Slot:
        while True:
            try:
                slot = self._idle.popleft()
            except IndexError:
                return self._new_slot()
            if slot.owner != os.getpid() or slot.closed:
                continue
            if len(self._idle) >= self.options.max_idle:
                self._close_slot(slot)
                continue
            # every idle slot served an episode (its worker loaded the tools' code, at least):
            # that process never serves another, and what the code left is cleaned away
            slot.worker.restart()
            self._clean(slot)
            return slot

    def _new_slot(self) -> _Slot:
        with self._lock:
            if self._tmp is None:
                self._tmp = slot_folder(self.env.id)
                weakref.finalize(self, shutil.rmtree, self._tmp, ignore_errors=True)
            folder = self._tmp / f"slot{next(self._numbers)}"
        source = Path(self.env.root) / "db" if self.env.root is not None else None
        if source is not None and source.is_dir():
            copy_plain(source, folder)
        else:
            folder.mkdir()
        mirror: dict[str, Any] = {}
        for name in self.base.snapshot():
            doc = self.base.document(name)
            if not (folder / f"{name}.json").exists():
                write_doc(folder, name, doc)
            mirror[name] = doc
        env = {
            "MCP_DB_DIR": str(folder.resolve()),
            "AGENTWORLD_TOOL_WORKER": "1",
            "AGENTWORLD_CLOCK": repr(self.clock_start),
            "TZ": "UTC",
        }
        worker = SandboxWorker(folder, self.sources, env=env, limits=self.options.limits)
        stats = _scan(folder)
        slot = _Slot(folder, worker, mirror, keep=frozenset(stats), stats=stats)
        with self._lock:
            self._slots.append(slot)
        return slot

    def _close_slot(self, slot: _Slot) -> None:
        slot.closed = True
        slot.worker.close()
        shutil.rmtree(slot.folder, ignore_errors=True)
        with self._lock:
            if slot in self._slots:
                self._slots.remove(slot)

    # -- keeping the folder equal to the episode's database -----------------------------------
    def _sync(self, slot: _Slot, db: Database) -> None:
        if slot.stale:
            self._full_sync(slot, db)
            return
        wrote = False
        for name, synced in slot.mirror.items():
            current = document(db, name)
            if current is not synced:
                write_doc(slot.folder, name, current)
                slot.mirror[name] = current
                wrote = True
        if wrote:
            slot.stats = _scan(slot.folder)

    def _clean(self, slot: _Slot) -> None:
        """Between episodes: remove what the tools added; rebuild what they changed."""
        for name, entry in _scan(slot.folder).items():
            if name not in slot.keep or not stat.S_ISREG(entry[0]):
                remove_entry(slot.folder / name)
            elif slot.stats.get(name) != entry:  # changed behind our back: rebuild it
                slot.stale = True
                if not name.endswith(".json") and self.env.root is not None:
                    remove_entry(slot.folder / name)
                    copy_plain_file(Path(self.env.root) / "db" / name, slot.folder / name)

    def _full_sync(self, slot: _Slot, db: Database) -> None:
        """Rewrite every file that differs from ``db`` and drop JSON files it does not have."""
        state = db.snapshot() if db.dirty or slot.stale else {}
        names = set(slot.mirror) | set(state) | set(self.base.snapshot())
        if slot.stale:
            names |= {p.stem for p in slot.folder.glob("*.json")}
        for name in names:
            current = document(db, name)
            if slot.stale or slot.mirror.get(name, _ABSENT) is not current:
                write_doc(slot.folder, name, current)
            slot.mirror[name] = current
        slot.stale = False
        slot.stats = _scan(slot.folder)

    def close(self) -> None:
        """Stop every worker and remove the slot folders."""
        for slot in list(self._slots):
            slot.closed = True
            slot.worker.close()
        self._slots.clear()
        self._idle.clear()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def _forget(self) -> None:
        """In a forked child: the parent's slots are not ours (their folders neither)."""
        self._lock = threading.Lock()
        self._idle.clear()
        self._slots = []
        self._tmp = None

    @property
    def isolation(self) -> dict[str, Any]:
        """The isolation layers reported by the last worker that ran (empty before)."""
        for slot in reversed(self._slots):
            if slot.worker.isolation:
                return slot.worker.isolation
        return {}


_ABSENT: Any = object()


def _scan(folder: Path) -> dict[str, tuple[int, int, int, int]]:
    """The folder's entries as (mode, inode, ctime ns, size): what a write cannot hide."""
    entries = {}
    with os.scandir(folder) as listing:
        for entry in listing:
            info = entry.stat(follow_symlinks=False)
            entries[entry.name] = (info.st_mode, info.st_ino, info.st_ctime_ns, info.st_size)
    return entries


_LINE = re.compile(r" \(line \d+\)")


def _point_at_tool(result: SandboxResult, module: str) -> str:
    """The error with its ``(line N)`` taken from the tool's own frame, not the runtime's."""
    message = result.error or "the tool failed"
    lines = re.findall(rf'File "<sandbox:{re.escape(module)}>", line (\d+)', result.traceback or "")
    where = f" (line {lines[-1]})" if lines else ""
    return _LINE.sub(where, message, count=1) if _LINE.search(message) else message


def _error(tool: str, reason: str, message: str) -> ToolExecutionError:
    text = f"Tool {tool} failed: {message}"
    body = {"error": {"type": "tool_execution_error", "reason": reason, "message": text}}
    return ToolExecutionError(text, body=body)


# -- the implementation type ---------------------------------------------------------------------
_RUNTIMES: weakref.WeakSet[ToolRuntime] = weakref.WeakSet()
_RUNTIME_ATTR = "_tool_runtime"


def runtime_for(env: EnvSpec, options: RuntimeOptions | None = None) -> ToolRuntime:
    """The spec's runtime, built on first use (``options`` only apply then)."""
    runtime = env.__dict__.get(_RUNTIME_ATTR)
    if runtime is None:
        runtime = env.__dict__[_RUNTIME_ATTR] = ToolRuntime(env, options)
    return runtime


def release_factory(tool: ToolSpec, env: EnvSpec) -> ToolFn:
    """The ``"release"`` implementation: ``fn(ctx, **arguments)`` runs in the env's workers."""
    runtime = runtime_for(env)
    name = tool.name

    def call(ctx: ToolContext, **arguments: Any) -> Any:
        return runtime.call(ctx, name, arguments)

    call.__name__ = call.__qualname__ = function_name(name)
    call.episode = runtime  # type: ignore[attr-defined]  # Toolbox.begin / end / isolation
    return call


def _close_all() -> None:
    for runtime in list(_RUNTIMES):
        runtime.close()


def _after_fork() -> None:
    for runtime in list(_RUNTIMES):
        runtime._forget()


register_implementation(IMPLEMENTATION_TYPE, release_factory)
install_verifier()
atexit.register(_close_all)
os.register_at_fork(after_in_child=_after_fork)

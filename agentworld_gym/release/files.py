"""Files of the code-tool runtime: database folders, slot folders, documents on disk."""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import SpecError
from agentworld_gym.sandbox import SandboxLimits, SandboxWorker
from agentworld_gym.spec import EnvSpec

RUNTIME_MODULE = "aw_runtime"
WORKER_SOURCE = (Path(__file__).with_name("worker_runtime.py")).read_text(encoding="utf-8")
"""The worker side of the runtime, exec'd first in every tool worker as ``aw_runtime``."""


def load_json(path: Path, max_bytes: int | None = None) -> Any:
    """Parse a JSON file; in a sandbox's folder, never through a link or a special file.

    A tool may leave a symlink, FIFO or device where a collection was (its folder is its own):
    the file is opened without following links and without blocking, and must be a regular
    file of at most ``max_bytes``.
    """
    data = read_regular(path, max_bytes)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)  # NaN, Infinity: json accepts what Python wrote


def documents_database(env: EnvSpec) -> Database:
    """The env's initial state with every file as a document (list files included)."""
    if env.records is not None:
        return Database({}, {}, dict(env.records))
    if env.root is None:
        raise SpecError(f"environment {env.id!r} has neither records nor a folder")
    folder = Path(env.root) / "db"
    if not folder.is_dir():
        raise SpecError(f"database folder {folder} does not exist")
    docs = {}
    for path in sorted(folder.glob("*.json")):
        try:
            docs[path.stem] = load_json(path)
        except (OSError, ValueError) as exc:
            raise SpecError(f"{path}: not a readable JSON file: {exc}") from exc
    return Database({}, {}, docs)


def slot_root() -> str | None:
    """Where slot folders live: ``AGENTWORLD_TOOL_TMP``, else ``/dev/shm``, else the temp dir.

    A memory file system matters: on ext4, rewriting a file in place (what release tools do on
    every call) costs ~4 ms because of ``auto_da_alloc``; on tmpfs it costs ~10 µs.
    """
    chosen = os.environ.get("AGENTWORLD_TOOL_TMP")
    if chosen:
        return chosen
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


_PREFIX = "agentworld-tools-"


def slot_folder(env_id: str) -> Path:
    """A fresh folder for an environment's slots, named after this process.

    Folders of processes that died without cleaning up (killed, say) are removed first.
    """
    root = slot_root() or tempfile.gettempdir()
    for stale in Path(root).glob(f"{_PREFIX}*"):
        pid = stale.name[len(_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_PREFIX}{os.getpid()}-{env_id}-", dir=root))
    os.chmod(folder, 0o755)
    return folder


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def copy_plain(source: Path, target: Path) -> None:
    """Copy a folder's files without their permissions (release copies can be read-only)."""
    target.mkdir(mode=0o755, parents=True, exist_ok=True)
    for entry in os.scandir(source):
        if entry.is_dir(follow_symlinks=False):
            copy_plain(Path(entry.path), target / entry.name)
        elif entry.is_file(follow_symlinks=False):
            copy_plain_file(Path(entry.path), target / entry.name)


def copy_plain_file(source: Path, target: Path) -> None:
    """Copy one file's bytes (not its permissions); a missing source copies nothing."""
    try:
        shutil.copyfile(source, target, follow_symlinks=False)
    except FileNotFoundError:
        return
    os.chmod(target, 0o644)


def document(db: Database, name: str) -> Any:
    try:
        return db.document(name)
    except KeyError:
        return None


def read_regular(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file, never following a link nor blocking on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if max_bytes is not None and info.st_size > max_bytes:
            raise OSError(f"{path.name} holds {info.st_size} bytes, over {max_bytes}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def remove_entry(path: Path) -> None:
    """Remove whatever is at ``path`` (file, link, FIFO or folder) without following links."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass


def write_doc(folder: Path, name: str, value: Any) -> None:
    """Write one document as ``<name>.json`` (``None``: no file), owned like its folder.

    Whatever a tool left at that name that is not a regular file (a symlink to a host file, a
    FIFO, a folder) is removed first and never written through.
    """
    path = folder / f"{name}.json"
    if value is None:
        remove_entry(path)
        return
    try:
        data = orjson.dumps(value, option=orjson.OPT_INDENT_2)
    except TypeError:
        data = json.dumps(value, indent=2).encode()
    try:
        existed = stat.S_ISREG(os.lstat(path).st_mode)
        if not existed:
            remove_entry(path)
    except FileNotFoundError:
        existed = False
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(path, flags, 0o660)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    if not existed and os.geteuid() == 0:
        owner = folder.stat()
        os.chown(path, owner.st_uid, owner.st_gid)
        os.chmod(path, 0o660)


def unloadable(sources: dict[str, str], db: Path, limits: SandboxLimits) -> dict[str, str]:
    """``module -> error`` for the sources whose module code never finishes loading.

    Compile errors and exceptions at load are not fatal (the worker reports them per call), but
    a module that hangs or kills the process while loading would take down every tool that
    shares its worker; those are found here, by loading all sources at once and, only when that
    fails, each one alone.
    """

    def error(chosen: dict[str, str]) -> str | None:
        work = Path(tempfile.mkdtemp(prefix="agentworld-probe-", dir=slot_root()))
        os.chmod(work, 0o755)
        try:
            if db.is_dir():
                copy_plain(db, work)
            env = {"MCP_DB_DIR": str(work.resolve()), "AGENTWORLD_TOOL_WORKER": "1"}
            sources = {RUNTIME_MODULE: WORKER_SOURCE, **chosen}
            with SandboxWorker(work, sources, env=env, limits=limits) as worker:
                result = worker.call(f"{RUNTIME_MODULE}:ping")
            return None if result.ok else result.error
        finally:
            shutil.rmtree(work, ignore_errors=True)

    if error(sources) is None:
        return {}
    found = {module: error({module: source}) for module, source in sources.items()}
    return {module: why for module, why in found.items() if why is not None}

"""What the host allows, probed once by the parent: an empty network namespace and a user.

As root, a sandbox runs as ``nobody`` and owns only its working folder; when ``nobody`` cannot
read the interpreter (a pyenv under ``/root``, say), it keeps ``CAP_DAC_READ_SEARCH``.
"""

from __future__ import annotations

import functools
import os
import shutil
import stat
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

_RUNTIME_DIRS = (Path(__file__).parent.parent, Path(__file__).parent)  # what the child imports


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
    paths.update(str(folder) for folder in _RUNTIME_DIRS)
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
    """Make the working folder the sandbox's, so it can write there and nowhere else.

    Owner ``nobody``, group ``nogroup`` with read-write rights: under kernel confinement each
    sandbox process has a user id of its own but that group, so the workers of successive
    episodes share the folder (and only it: no other folder is mounted in their namespace).
    """
    if plan is None:
        return
    uid, gid = plan["uid"], plan["gid"]
    os.lchown(workdir, uid, gid)
    os.chmod(workdir, 0o2770)
    for root, dirs, files in os.walk(workdir) if recursive else ():
        for name in dirs + files:
            path = os.path.join(root, name)
            os.lchown(path, uid, gid)
            if not os.path.islink(path):
                os.chmod(path, 0o2770 if name in dirs else 0o660)

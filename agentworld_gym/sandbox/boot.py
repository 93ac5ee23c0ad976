"""How a sandbox interpreter starts: the parent's command line and the child's entry point.

Sandbox interpreters run ``python -I`` with a stub ``agentworld_gym`` package, so that they
import this subpackage (and :mod:`agentworld_gym.errors`) without the package's ``__init__``,
which would load the whole library into every zygote.
"""

from __future__ import annotations

import gc
import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agentworld_gym.sandbox.forkserver import _zygote_main
from agentworld_gym.sandbox.isolation import _clean_env, _load_libc
from agentworld_gym.sandbox.program import _serve

_PRELOADED = (
    *("copy", "datetime", "random", "uuid", "sysconfig", "json", "re", "math", "hashlib"),
    *("collections", "typing", "itertools", "functools", "string", "dataclasses", "enum"),
    *("decimal", "statistics", "bisect", "heapq", "base64", "asyncio"),
)
"""Modules tool code commonly imports (the code-tool runtime among them)."""
_PACKAGE_DIR = Path(__file__).parent.parent  # agentworld_gym/, the stub package's __path__
_BOOT = (  # imports the sandbox runtime without the package's __init__, which loads the library
    "import sys, types\n"
    "pkg = types.ModuleType('agentworld_gym'); pkg.__path__ = [sys.argv[1]]\n"
    "sys.modules['agentworld_gym'] = pkg\n"
    "from agentworld_gym.sandbox.boot import _runtime_main\n"
    "_runtime_main(sys.argv[2:])\n"
)


def _popen(
    netns: tuple[str, ...] | None, fds: tuple[int, ...], *args: str, **kw: Any
) -> subprocess.Popen:
    cmd = [*(netns or ()), sys.executable, "-I", "-B", "-c", _BOOT, str(_PACKAGE_DIR)]
    return subprocess.Popen(
        [*cmd, *args], pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        cwd="/", env=_clean_env() | _knobs(), start_new_session=True, **kw,
    )  # fmt: skip


def _knobs() -> dict[str, str]:
    """The settings a sandbox interpreter reads itself (its environment is otherwise clean)."""
    off = os.environ.get("AGENTWORLD_SANDBOX_CONFINE") == "0"
    return {"AGENTWORLD_SANDBOX_CONFINE": "0"} if off else {}


def _runtime_main(argv: list[str]) -> None:
    """Entry point of sandbox interpreters: ``zygote FD`` or ``serve REQ_FD RESP_FD``."""
    _load_libc()
    for name in _PRELOADED:  # trusted stdlib, imported once here rather than in every child
        try:
            importlib.import_module(name)
        except ImportError:
            pass
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

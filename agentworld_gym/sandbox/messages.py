"""Parent side of the protocol: build the init and call requests, read a reply into a result.

Requests are validated here, in the caller's process, so bad arguments raise
:class:`~agentworld_gym.errors.SandboxError` at once instead of failing inside the child.
"""

from __future__ import annotations

import base64
import functools
import marshal
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentworld_gym.errors import SandboxError
from agentworld_gym.sandbox.framing import _dumps, _frame
from agentworld_gym.sandbox.host import _netns_prefix
from agentworld_gym.sandbox.limits import SandboxErrorType, SandboxResult

_ERROR_TYPES = frozenset(kind.value for kind in SandboxErrorType)


def _result(reply: dict[str, Any], started: float, isolation: dict[str, Any]) -> SandboxResult:
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


def _init_message(
    workdir: Path, sources: dict[str, Any], env: dict[str, Any] | None, **fields: Any
) -> bytes:
    env = dict(env or {})
    bad = [k for k, v in env.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise SandboxError(f"sandbox env must map str to str; bad entries: {bad!r}")
    bad = [name for name, source in sources.items() if not isinstance(source, str)]
    if bad:
        raise SandboxError(f"sandbox sources must be str; not so for {bad!r}")
    limits = fields["limits"]
    fields.update(limits=asdict(limits), netns=not limits.network and _netns_prefix() is not None)
    fields["confine"] = os.environ.get("AGENTWORLD_SANDBOX_CONFINE") != "0"
    fields["unconfined"] = os.environ.get("AGENTWORLD_SANDBOX_UNCONFINED") == "1"
    compiled = {name: _compiled(name, source) for name, source in sources.items()}
    folder = os.path.realpath(workdir)
    message = {"workdir": folder, "env": env, "sources": sources, "compiled": compiled}
    return _frame(_dumps({**message, **fields}))


@functools.lru_cache(maxsize=1024)
def _compiled(name: str, source: str) -> str | None:
    """The source's code object, marshalled (base64): compiled once here, not in every child.

    Compiling runs none of the code; the child, the same interpreter, only unmarshals it.
    ``None`` where it does not compile: the child then reports the error itself.
    """
    try:
        code = compile(source, f"<sandbox:{name}>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # absurd nesting, NUL bytes
        return None
    return base64.b64encode(marshal.dumps(code)).decode("ascii")


def _call_message(function: str, args: list[Any], kwargs: dict[str, Any]) -> bytes:
    if not isinstance(function, str):
        raise SandboxError(f"function must be a name (str), got {function!r}")
    try:
        return _frame(_dumps({"function": function, "args": list(args), "kwargs": kwargs}))
    except (TypeError, ValueError, OverflowError) as exc:
        raise SandboxError(f"arguments of {function!r} are not JSON-serialisable: {exc}") from exc

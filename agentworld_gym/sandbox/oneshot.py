"""One-shot runs: exec a source in a fresh sandbox, call one function, return its JSON value.

The script-verifier reward path: a fresh process and a fresh temporary working folder per call,
so no state leaks between rewards.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from agentworld_gym.sandbox.channel import _ChannelError, _failure, _Proc
from agentworld_gym.sandbox.framing import _REPLY_SLACK
from agentworld_gym.sandbox.host import _give_to, _user_plan
from agentworld_gym.sandbox.limits import DEFAULT_LIMITS, SandboxLimits, SandboxResult
from agentworld_gym.sandbox.messages import _call_message, _init_message, _result


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

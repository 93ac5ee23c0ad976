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
namespace) with this package imported, so a one-shot call costs milliseconds rather than an
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

Modules, parent side: :mod:`.limits` (what to ask, what comes back), :mod:`.oneshot` and
:mod:`.worker` (the two shapes), :mod:`.channel` (one process, with deadlines), :mod:`.messages`,
:mod:`.zygote` and :mod:`.host` (namespaces, the sandbox user). Child side: :mod:`.boot` (entry
point), :mod:`.forkserver`, :mod:`.isolation` (setup), :mod:`.policy` (the audit hook),
:mod:`.program` (exec and call) and :mod:`.errors`. :mod:`.framing` is shared.
"""

from __future__ import annotations

from agentworld_gym.sandbox.errors import (
    SandboxCpuLimit,
    SandboxImportBlocked,
    SandboxNetworkDisabled,
    SandboxViolation,
)
from agentworld_gym.sandbox.limits import (
    DEFAULT_LIMITS,
    SandboxErrorType,
    SandboxLimits,
    SandboxResult,
)
from agentworld_gym.sandbox.oneshot import run_function
from agentworld_gym.sandbox.worker import SandboxWorker

__all__ = [
    "DEFAULT_LIMITS",
    "SandboxCpuLimit",
    "SandboxErrorType",
    "SandboxImportBlocked",
    "SandboxLimits",
    "SandboxNetworkDisabled",
    "SandboxResult",
    "SandboxViolation",
    "SandboxWorker",
    "run_function",
]

"""What this machine runs fast: the dtype behind ``dtype: auto`` and the torch thread count.

bfloat16 is fast only where the hardware has it: CUDA GPUs that report bf16, and CPUs with
AVX512-BF16 or AMX tiles. Everywhere else (AVX2-only CPUs: most laptops, many cloud CPUs)
torch emulates it, and one Linear(576→1536) forward+backward on 4,096 tokens was measured at
219 ms in float32 against 10,407 ms in bfloat16 — 47× slower. On a CPU whose flags torch
cannot read (not x86), a one-off micro-benchmark decides and its result is cached per machine.

Threads: OpenMP threads spin against other jobs' processes. Measured on 2 cores (AMD EPYC,
``benchmarks/cpu_threads.py``): with one other busy process, a generation-sized step
took 1.43 ms on 2 threads against 0.38 ms on 1, while a training-sized matmul was 10% faster on
2. ``auto`` therefore takes the cores other processes leave free right now (at least 1).

Every choice is logged with its reason (logger ``agentworld_gym.llm.hardware``).
"""

from __future__ import annotations

import json
import logging
import math
import os
import platform
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agentworld_gym.errors import ConfigError

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

DTYPES = ("auto", "bfloat16", "float16", "float32")


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype ``auto`` resolved to, and why."""

    name: str
    reason: str


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise ConfigError("This needs torch: pip install agentworld-gym[train]") from exc
    return torch


def cpu_bf16_flags() -> bool | None:
    """Whether the CPU has native bf16 (AVX512-BF16 or AMX), as torch reports it; ``None``
    where torch has no such report (non-x86 CPUs)."""
    cpu = _torch().cpu
    names = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    probes = [p for n in names if callable(p := getattr(cpu, n, None))]
    if not probes or platform.machine().lower() not in ("x86_64", "amd64", "i686", "x86"):
        return None
    return any(bool(p()) for p in probes)


def _time_matmul(dtype: Any, n: int = 256, repeats: int = 5) -> float:
    torch = _torch()
    a = torch.randn(n, n).to(dtype)
    b = torch.randn(n, n).to(dtype)
    a @ b  # warm up
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return best


def cpu_bf16_benchmark() -> bool:
    """Time one small matmul in float32 and bfloat16; cached per machine under the cache root
    (``$AGENTWORLD_CACHE`` or ``~/.cache/agentworld``)."""
    from agentworld_gym.llm.embedded import cache_root

    key = f"{platform.machine()}|{platform.processor()}|{os.cpu_count()}"
    path = cache_root() / "cpu_bf16.json"
    try:
        cached = json.loads(path.read_text())
        if cached.get("key") == key:
            return bool(cached["bf16_fast"])
    except (OSError, ValueError, KeyError):
        pass
    torch = _torch()
    fp32, bf16 = _time_matmul(torch.float32), _time_matmul(torch.bfloat16)
    fast = bf16 <= fp32
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "bf16_fast": fast, "fp32_s": fp32, "bf16_s": bf16}))
    except OSError:
        pass
    return fast


def auto_dtype(device: str | None = None) -> DtypeChoice:
    """What ``dtype: auto`` means on ``device`` (``None``: cuda when available, else cpu)."""
    torch = _torch()
    on_cuda = device.startswith("cuda") if device else torch.cuda.is_available()
    if on_cuda:
        if torch.cuda.is_bf16_supported():
            return DtypeChoice("bfloat16", "CUDA device with bf16 support")
        return DtypeChoice("float16", "CUDA device without bf16 support")
    flags = cpu_bf16_flags()
    capability = torch.backends.cpu.get_cpu_capability()
    if flags is True:
        return DtypeChoice("bfloat16", f"CPU has native bf16 (AVX512-BF16/AMX; {capability})")
    if flags is False:
        return DtypeChoice(
            "float32", f"CPU has no native bf16 ({capability}, no AVX512-BF16/AMX): emulated"
        )
    if cpu_bf16_benchmark():
        return DtypeChoice("bfloat16", f"bf16 matmul measured no slower than fp32 ({capability})")
    return DtypeChoice("float32", f"bf16 matmul measured slower than fp32 ({capability})")


def resolve_dtype(name: str | None, device: str | None = None) -> torch.dtype:
    """``"auto"`` / ``"bfloat16"`` / ``"float16"`` / ``"float32"`` → a torch dtype.

    ``auto`` is bfloat16 where ``device`` runs it natively, else float32 (float16 on CUDA GPUs
    without bf16); the choice and its reason are logged.
    """
    torch = _torch()
    if name in (None, "auto"):
        choice = auto_dtype(device)
        log.info("dtype auto -> %s (%s)", choice.name, choice.reason)
        name = choice.name
    if name not in DTYPES:
        raise ConfigError(f"Unknown dtype {name!r}; expected one of {', '.join(DTYPES)}.")
    return getattr(torch, name)


def _cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def busy_cores(seconds: float = 0.25) -> float:
    """How many cores other processes keep busy right now, from two readings of
    ``/proc/stat`` (the 1-minute load average where there is none: it lags, and counts
    whatever just finished, such as the install before ``make demo``)."""

    def read() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
        return sum(fields) - idle, sum(fields)

    try:
        busy0, total0 = read()
        time.sleep(seconds)
        busy1, total1 = read()
    except (OSError, ValueError, IndexError):
        return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    if total1 <= total0:
        return 0.0
    return (busy1 - busy0) / (total1 - total0) * (os.cpu_count() or 1)


def auto_threads(cores: int | None = None, load: float | None = None) -> int:
    """Torch CPU threads for this machine now: the usable cores minus those other processes
    keep busy (a core counts as taken from 0.7 of it busy), at least 1."""
    cores = int(cores or _cores())
    if load is None:
        load = busy_cores()
    return max(1, min(cores, cores - math.floor(load + 0.3)))


def set_threads(threads: int | str | None) -> int:
    """Apply a ``threads`` setting (an int, ``"auto"`` or ``None`` = auto) to torch; returns
    the count used and logs why. With auto, :func:`refresh_threads` re-reads the load later."""
    torch = _torch()
    if threads in (None, "auto"):
        load = busy_cores()
        count = auto_threads(load=load)
        log.info(
            "threads auto -> %d (%d usable cores, %.1f kept busy by others)", count, _cores(), load
        )
        _AUTO.update(on=True, mark=_cpu_mark(), when=time.monotonic())
    else:
        count = int(threads)
        if count < 1:
            raise ConfigError(f"threads must be >= 1 or 'auto', got {threads!r}")
        _AUTO.update(on=False)
    torch.set_num_threads(count)
    return count


_AUTO: dict[str, Any] = {"on": False}
"""State of the last ``set_threads(auto)``: whether it was auto, and the CPU counters then."""


def _cpu_mark() -> tuple[int, int, float] | None:
    """``(busy ticks, all ticks, this process's CPU seconds)`` now, or ``None``."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    own = os.times()
    return sum(fields) - idle, sum(fields), own.user + own.system


def refresh_threads(min_interval_s: float = 5.0) -> int | None:
    """Re-apply auto threads inside a long phase (every decoding step, SFT step and rollout
    turn calls it), at most every ``min_interval_s``; returns the new count, or ``None`` when
    nothing was re-read. A phase-level choice is not enough: measured in ``make demo``, a
    turn that began on 2 threads when the others went quiet ran 4 min instead of ~1 when they
    came back.

    Other jobs come and go within a phase, and oversubscription is lopsided: on 2 cores
    with two other busy processes a 1,024-token prefill ran at 85 GFLOP/s on 1 thread and
    15-26 on 2, while on idle cores 2 threads gain less than 2x. The load of the *others* is
    read without sleeping, from the machine's busy ticks since the last reading minus this
    process's own CPU time. Does nothing unless the last :func:`set_threads` was auto.
    """
    if not _AUTO.get("on") or time.monotonic() - _AUTO["when"] < min_interval_s:
        return None
    before, now = _AUTO.get("mark"), _cpu_mark()
    _AUTO.update(mark=now, when=time.monotonic())
    if before is None or now is None or now[1] <= before[1]:
        return None
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    cpus = os.cpu_count() or 1
    share = (now[0] - before[0]) / (now[1] - before[1])
    own_cores = (now[2] - before[2]) * hz / ((now[1] - before[1]) / cpus)
    others = max(0.0, share * cpus - own_cores)
    count = auto_threads(load=others)
    torch = _torch()
    if count != torch.get_num_threads():
        log.info("threads auto -> %d (%.1f cores kept busy by others)", count, others)
        torch.set_num_threads(count)
    return count

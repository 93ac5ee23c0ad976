"""What a caller asks of a sandboxed call (:class:`SandboxLimits`) and what it gets back.

Kept apart from the machinery so that configs (release importer, synthesis pipelines) can name
limits without reading how they are enforced.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from agentworld_gym.errors import ConfigError


class SandboxErrorType(StrEnum):
    """Why a sandboxed call failed (``SandboxResult.error_type``)."""

    TIMEOUT = "timeout"
    MEMORY = "memory"
    EXCEPTION = "exception"
    OUTPUT_TOO_LARGE = "output_too_large"
    CRASH = "crash"
    NETWORK = "network"
    FORBIDDEN = "forbidden"
    COMPILE = "compile"


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandboxed call (a worker applies them to each call)."""

    wall_s: float = 5.0
    """Wall-clock seconds, enforced by the parent (the process group is killed)."""
    cpu_s: float = 5.0
    """CPU seconds: RLIMIT_CPU (whole seconds) for one-shot runs, polled by the parent."""
    memory_mb: int = 1024
    """Address space (RLIMIT_AS) in MiB, the interpreter's own ~20 MB included."""
    output_bytes: int = 8 * 1024 * 1024
    """Cap on the JSON size of the returned value; larger is an ``output_too_large`` error."""
    file_bytes: int = 16 * 1024 * 1024
    """Largest file the code may write (RLIMIT_FSIZE)."""
    network: bool = False
    """Allow sockets: no network namespace and no socket refusal."""

    def __post_init__(self) -> None:
        for name in ("wall_s", "cpu_s", "memory_mb", "output_bytes", "file_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ConfigError(f"SandboxLimits.{name} must be a positive number, got {value!r}")
        if self.memory_mb < 64:
            raise ConfigError(f"SandboxLimits.memory_mb must be at least 64, got {self.memory_mb}")


DEFAULT_LIMITS = SandboxLimits()


@dataclass
class SandboxResult:
    """Outcome of one sandboxed call; ``ok=False`` results say what went wrong in ``error``."""

    ok: bool
    value: Any = None
    error: str | None = None
    error_type: SandboxErrorType | None = None
    wall_s: float = 0.0
    isolation: dict[str, Any] = field(default_factory=dict)
    stdout: str = ""
    """What the code printed (stdout and stderr, the first 64 KiB)."""
    traceback: str | None = None
    """Traceback of a failed call, without the sandbox runtime's own frames."""

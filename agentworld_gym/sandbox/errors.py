"""Exceptions raised *inside* the sandbox; the parent only ever sees them described in a result.

Their types decide the reported ``error_type`` (``network``, ``forbidden``, ``timeout``), and
tool runtimes exec'd in a worker find :class:`SandboxViolation` on the package to raise
the same kind.
"""

from __future__ import annotations


class SandboxViolation(PermissionError):
    """Raised inside the sandbox when the code does something the policy forbids."""


class SandboxNetworkDisabled(SandboxViolation):
    """Raised inside the sandbox on any network use when ``network=False``."""


class SandboxImportBlocked(ImportError):
    """Raised inside the sandbox on importing ctypes or the raw process spawner."""


class SandboxCpuLimit(BaseException):
    """Raised inside the sandbox on SIGXCPU; not an Exception, so ``except Exception`` misses it."""

"""The one interface every LLM backend implements, its config, and the backend registry.

Everything that talks to a model (rollouts, synthesizers, the LLM judge) depends only on
:class:`LLMBackend`, so swapping a hosted API for vLLM, transformers or the embedded offline
default is a config change. Nothing here imports a model library: backends import theirs lazily.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from agentworld_gym.errors import ConfigError

Message = dict[str, Any]
"""An OpenAI chat message: ``{"role": ..., "content": ..., "tool_calls": [...]}``."""

BackendFactory = Callable[["LLMConfig"], "LLMBackend"]


@runtime_checkable
class LLMBackend(Protocol):
    """A chat model that may call tools, spoken to in the OpenAI chat format.

    Messages and tools are plain OpenAI dicts (tools as
    ``{"type": "function", "function": {"name", "description", "parameters"}}``) so that the
    environment's ``info["messages"]`` and ``info["tools"]`` can be passed straight through.
    """

    def chat(
        self, messages: list[Message], tools: list[dict] | None = None, **sampling: Any
    ) -> Message:
        """Answer the conversation with one assistant message.

        Args:
            messages: The conversation so far, OpenAI chat format.
            tools: Function tools the model may call; ``None`` or empty for none.
            **sampling: Per-call overrides of the configured sampling (``temperature``,
                ``max_tokens``, ``seed``, ``top_p``, ``stop``, ...).

        Returns:
            ``{"role": "assistant", "content": str | None, "tool_calls": [...]}`` where each
            call is ``{"id", "type": "function", "function": {"name", "arguments": <JSON str>}}``;
            the ``tool_calls`` key is absent when the model called no tool.
        """
        ...


@dataclass
class LLMConfig:
    """Which model to talk to and how; the Hydra ``llm`` group is this dataclass."""

    model: str
    """Model name as the server knows it (for vLLM, the ``--served-model-name``)."""
    backend: str = "openai"
    """Registered backend name; see :func:`available_backends`. A ``str`` rather than an Enum
    because the set is open: later backends add themselves with :func:`register_backend`."""
    base_url: str | None = None
    """Server root including ``/v1`` (e.g. ``http://localhost:8000/v1``); ``None`` = the SDK's
    default (``OPENAI_BASE_URL`` or api.openai.com)."""
    api_key: str | None = field(default=None, repr=False)
    """``None`` reads ``OPENAI_API_KEY`` when the backend is built (never stored in the config,
    so it stays out of saved Hydra configs); ``"EMPTY"`` if unset, which local servers accept."""
    timeout_s: float = 60.0
    """Seconds one request may take before it is retried."""
    max_retries: int = 2
    """Retries on connection errors, 408/409/429 and 5xx, with backoff (done by the client)."""
    temperature: float = 1.0
    """Default sampling temperature; 1.0 matches the policy's distribution for RL rollouts."""
    max_tokens: int | None = 1024
    """Default cap on generated tokens per turn; ``None`` leaves it to the server."""
    seed: int | None = None
    """Default sampling seed, for servers that honour it (vLLM does)."""

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ConfigError(f"LLMConfig.timeout_s must be > 0, got {self.timeout_s}.")
        if self.max_retries < 0:
            raise ConfigError(f"LLMConfig.max_retries must be >= 0, got {self.max_retries}.")
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ConfigError(f"LLMConfig.max_tokens must be > 0 or None, got {self.max_tokens}.")

    def resolved_api_key(self) -> str:
        """The key to send: the configured one, else ``OPENAI_API_KEY``, else ``"EMPTY"``."""
        if self.api_key is not None:
            return self.api_key
        return os.environ.get("OPENAI_API_KEY") or "EMPTY"

    def sampling(self) -> dict[str, Any]:
        """The default sampling arguments, leaving out those set to ``None``."""
        values = {
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        return {key: value for key, value in values.items() if value is not None}


_BACKENDS: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory, *, replace: bool = False) -> None:
    """Make ``LLMConfig(backend=name)`` build its backend with ``factory(config)``.

    The factory should import its model library lazily, so that registering costs nothing for
    users who never pick that backend.

    Raises:
        ConfigError: ``name`` is already registered and ``replace`` is false.
    """
    if name in _BACKENDS and not replace:
        raise ConfigError(
            f"LLM backend {name!r} is already registered; pass replace=True to override it."
        )
    _BACKENDS[name] = factory


def available_backends() -> list[str]:
    """Names accepted by ``LLMConfig.backend``, sorted."""
    return sorted(_BACKENDS)


def make_backend(config: LLMConfig) -> LLMBackend:
    """Build the backend that ``config.backend`` names.

    Raises:
        ConfigError: The backend is unknown (the message lists the valid choices), or its
            dependencies are not installed.
    """
    factory = _BACKENDS.get(config.backend)
    if factory is None:
        choices = available_backends()
        close = difflib.get_close_matches(config.backend, choices, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(
            f"Unknown LLM backend {config.backend!r}; expected one of {choices}.{hint}"
        )
    return factory(config)

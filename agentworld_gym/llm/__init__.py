"""LLM backends behind one small interface: ``chat(messages, tools, **sampling) -> message``.

Importing this package imports no model library; each backend imports its own when built.

Example:
    >>> from agentworld_gym.llm import LLMConfig, make_backend
    >>> config = LLMConfig(model="Qwen/Qwen3-8B", base_url="http://localhost:8000/v1")
    >>> backend = make_backend(config)  # doctest: +SKIP
    >>> backend.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
"""

from __future__ import annotations

from agentworld_gym.llm.base import (
    LLMBackend,
    LLMConfig,
    Message,
    available_backends,
    make_backend,
    register_backend,
)
from agentworld_gym.llm.openai_compat import OpenAICompatBackend

# replace=True: a second execution of this module (doctest collection, reload) is harmless.
register_backend("openai", OpenAICompatBackend.from_config, replace=True)

# The local backends register themselves; none imports torch or vllm until it is built.
from agentworld_gym.llm import embedded, transformers_backend, vllm_backend  # noqa: E402, F401

__all__ = [
    "LLMBackend",
    "LLMConfig",
    "Message",
    "OpenAICompatBackend",
    "available_backends",
    "make_backend",
    "register_backend",
]

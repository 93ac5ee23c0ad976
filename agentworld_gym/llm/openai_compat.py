"""A backend for any OpenAI-compatible chat server: vLLM, llama.cpp, SGLang, hosted APIs.

The ``openai`` SDK is imported when a backend is built, not when this module is imported, so
``import agentworld_gym.llm`` stays light and works without the ``llm`` extra installed.
"""

from __future__ import annotations

import json
import threading
from typing import TYPE_CHECKING, Any

from agentworld_gym.errors import ConfigError, LLMRequestError
from agentworld_gym.llm.base import LLMConfig, Message

if TYPE_CHECKING:
    import openai

# Sampling arguments the SDK's ``chat.completions.create`` takes by name; any other keyword
# (vLLM's ``top_k``, ``min_p``, ``repetition_penalty``, ``chat_template_kwargs``, ...) is sent
# in the request body as is, which is how OpenAI-compatible servers expect extensions.
_SDK_SAMPLING_ARGS = frozenset(
    {
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "stop",
        "presence_penalty",
        "frequency_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "user",
    }
)


def _import_openai() -> Any:
    try:
        import openai
    except ImportError as exc:
        raise ConfigError(
            "The 'openai' LLM backend needs the openai SDK: pip install agentworld-gym[llm]"
        ) from exc
    return openai


class OpenAICompatBackend:
    """:class:`~agentworld_gym.llm.base.LLMBackend` over an OpenAI-compatible ``/v1`` server.

    Retries and timeouts are the SDK's own (``max_retries`` with exponential backoff on
    connection errors, 408, 409, 429 and 5xx). Unreachable servers, bad keys and unknown models
    raise :class:`~agentworld_gym.errors.ConfigError` naming the endpoint; other API errors
    (e.g. a 400 for an over-long prompt) propagate as the SDK's exceptions.

    Servers without a tool-call parser (vLLM without ``--enable-auto-tool-choice``, many
    llama.cpp templates) put Hermes-style ``<tool_call>{...}</tool_call>`` text in ``content``
    and no ``tool_calls``. That content is returned untouched: the environment's action parser
    accepts Hermes text, so one parser serves every backend.

    Args:
        model: Model name as the server knows it.
        base_url: Server root including ``/v1``; ``None`` = the SDK's default.
        api_key: Bearer token; local servers accept any, e.g. ``"EMPTY"``.
        timeout_s: Seconds per request attempt.
        max_retries: Retries the SDK makes, with backoff, on transient failures.
        sampling: Default sampling keywords; per-call keywords of :meth:`chat` override them.

    Example:
        >>> backend = OpenAICompatBackend("Qwen/Qwen3-8B", base_url="http://localhost:8000/v1")
        >>> backend.chat([{"role": "user", "content": "hi"}])  # doctest: +SKIP
        {'role': 'assistant', 'content': 'Hello!'}
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str = "EMPTY",
        timeout_s: float = 60.0,
        max_retries: int = 2,
        sampling: dict[str, Any] | None = None,
    ) -> None:
        if not model:
            raise ConfigError("No model name given: set llm.model to the server's model name.")
        openai = _import_openai()
        self.model = model
        self.sampling = dict(sampling or {})
        self._client: openai.OpenAI = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout_s,
            max_retries=max_retries,
        )
        self._transient_errors: tuple[type[Exception], ...] = (
            openai.APITimeoutError,
            openai.InternalServerError,
        )
        self._setup_errors: tuple[type[Exception], ...] = (
            openai.APIConnectionError,  # nothing listens there (timeouts are caught first)
            openai.AuthenticationError,
            openai.PermissionDeniedError,
            openai.NotFoundError,
        )
        self._usage_lock = threading.Lock()
        self.completion_tokens = 0
        """Tokens the server generated for this client so far (``usage``; for throughput)."""

    @classmethod
    def from_config(cls, config: LLMConfig) -> OpenAICompatBackend:
        """Build the backend from an :class:`~agentworld_gym.llm.base.LLMConfig`."""
        return cls(
            config.model,
            base_url=config.base_url,
            api_key=config.resolved_api_key(),
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            sampling=config.sampling(),
        )

    def chat(
        self, messages: list[Message], tools: list[dict] | None = None, **sampling: Any
    ) -> Message:
        """Send one chat-completion request and return the first choice as a plain dict.

        See :meth:`agentworld_gym.llm.base.LLMBackend.chat`. Sampling keywords set to ``None``
        are left out of the request.

        Raises:
            ConfigError: Nothing listens at the URL, or the server rejects the key or does not
                serve ``model``.
            LLMRequestError: The request timed out or the server answered 5xx, after the
                client's retries.
        """
        request = self._request(messages, tools, sampling)
        where = f"{self._client.base_url} (model {self.model!r})"
        try:
            completion = self._client.chat.completions.create(**request)
        except self._transient_errors as exc:
            raise LLMRequestError(
                f"LLM request to {where} failed: {str(exc).rstrip('.')} "
                f"(timeout {self._client.timeout}s, {self._client.max_retries} retries); is the "
                "server fast enough?"
            ) from exc
        except self._setup_errors as exc:
            raise ConfigError(
                f"LLM request to {where} failed: {str(exc).rstrip('.')}. Check llm.base_url, "
                "llm.model, llm.api_key and that the server is running."
            ) from exc
        usage = getattr(completion, "usage", None)
        if usage is not None and getattr(usage, "completion_tokens", None):
            with self._usage_lock:
                self.completion_tokens += int(usage.completion_tokens)
        message = completion.choices[0].message.to_dict(mode="json", warnings=False)
        return to_assistant_message(message)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def _request(
        self,
        messages: list[Message],
        tools: list[dict] | None,
        sampling: dict[str, Any],
    ) -> dict[str, Any]:
        merged = {
            key: value for key, value in {**self.sampling, **sampling}.items() if value is not None
        }
        extra_body = dict(merged.pop("extra_body", None) or {})
        request: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:  # an empty list is a 400 on OpenAI; no tools means leave the key out
            request["tools"] = tools
        for key, value in merged.items():
            if key in _SDK_SAMPLING_ARGS:
                request[key] = value
            else:
                extra_body[key] = value
        if extra_body:
            request["extra_body"] = extra_body
        return request


def to_assistant_message(message: dict[str, Any]) -> Message:
    """Normalise a raw OpenAI-style assistant message dict to the backend contract.

    Mends what some compatible servers get wrong: missing call ids, ``arguments`` sent as an
    object rather than a JSON string. Only function calls are kept (the only kind we offer).
    """
    result: Message = {"role": "assistant", "content": message.get("content")}
    calls = []
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call.get("function")
        if not isinstance(function, dict):
            continue
        arguments = function.get("arguments")
        if arguments is None:
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(
            {
                "id": call.get("id") or f"call_{index}",
                "type": "function",
                "function": {"name": function.get("name", ""), "arguments": arguments},
            }
        )
    if calls:
        result["tool_calls"] = calls
    return result

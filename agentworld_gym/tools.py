"""The tool runtime: validate arguments against the JSON Schema, run the tool as a transaction.

A tool's ``implementation`` names how it runs; each ``type`` has a factory registered with
:func:`register_implementation`:

- ``python``: ``{"type": "python", "entrypoint": "pkg.module:function"}`` — trusted code called
  as ``function(ctx, **arguments)`` with a :class:`ToolContext`.
- further types (declarative operations, sandboxed code) register themselves the same way.

A tool signals an API-level failure (404, 400, 409) by raising
:class:`~agentworld_gym.errors.ToolExecutionError` with the service's error body; any write it
made before raising is rolled back.
"""

from __future__ import annotations

import datetime as dt
import difflib
import functools
import hashlib
import importlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import fastjsonschema
import orjson

from agentworld_gym.database import Database
from agentworld_gym.errors import (
    ConfigError,
    ToolArgumentError,
    ToolError,
    ToolExecutionError,
    ToolNotFound,
)
from agentworld_gym.spec import EnvSpec, ToolSpec
from agentworld_gym.validation import QuickAccept, compile_validator

logger = logging.getLogger(__name__)

ToolFn = Callable[..., Any]
"""``fn(ctx, **arguments) -> JSON-serialisable result`` (or an :class:`Encoded` one)."""


class Encoded:
    """A tool result with pre-encoded JSON inside (``orjson.Fragment`` values).

    A tool that serves the same large records call after call (a database query's pages)
    caches each record's JSON once and returns the list assembled from those fragments, so a
    step writes its observation without re-serialising them. ``Toolbox.call`` hands callers
    that read results the plain value (:meth:`plain`); ``env.step`` asks for it as it is.
    """

    __slots__ = ("value", "_text")

    def __init__(self, value: Any) -> None:
        self.value = value
        self._text: str | None = None

    def json(self) -> bytes:
        """The result's JSON text."""
        return orjson.dumps(self.value)

    def text(self) -> str:
        """:meth:`json` as ``str``, encoded once (a result kept for reuse is never re-encoded:
        its value must not change once this is called)."""
        if self._text is None:
            self._text = orjson.dumps(self.value).decode()
        return self._text

    def plain(self) -> Any:
        """The result as plain JSON values (dicts, lists, ...), decoded from :meth:`json`."""
        return orjson.loads(orjson.dumps(self.value))


@dataclass
class ToolContext:
    """What a tool implementation may use: the episode's database, a pinned clock, ids."""

    db: Database
    env_id: str = ""
    task_id: str = ""
    clock_start: dt.datetime = field(
        default_factory=lambda: dt.datetime(2026, 8, 5, 9, tzinfo=dt.UTC)
    )
    calls: int = 0
    _ids: int = 0

    def now(self) -> dt.datetime:
        """Pinned time: the clock start plus one minute per tool call (reproducible)."""
        return self.clock_start + dt.timedelta(minutes=self.calls)

    def now_iso(self) -> str:
        """``now()`` as ``2026-08-05T09:00:00.000Z``."""
        return self.now().strftime("%Y-%m-%dT%H:%M:%S.000Z")

    def new_id(self) -> str:
        """A UUID4-shaped id derived from (env, task, counter): same episode, same ids.

        Kept across episodes (every episode of a task makes the same ids): the first SHA-256
        of a step costs ~30 µs when the CPU caches are cold (after a sandboxed verification
        or any idle gap), a dict hit a few.
        """
        self._ids += 1
        return _uuid_for(f"{self.env_id}:{self.task_id}:{self._ids}")


class EpisodeHooks(Protocol):
    """What an implementation with per-episode resources offers (as ``fn.episode``)."""

    def begin(self, ctx: ToolContext) -> None: ...

    def end(self, ctx: ToolContext, *, close: bool = False) -> None: ...

    @property
    def isolation(self) -> dict[str, Any]: ...


ImplementationFactory = Callable[[ToolSpec, EnvSpec], ToolFn]


@functools.lru_cache(maxsize=1 << 16)
def _uuid_for(seed: str) -> str:
    """``ToolContext.new_id``'s id for a seed text, shared by episodes."""
    return str(uuid.UUID(bytes=hashlib.sha256(seed.encode()).digest()[:16], version=4))


_FACTORIES: dict[str, ImplementationFactory] = {}
_PROVIDERS = {"op": "agentworld_gym.ops", "release": "agentworld_gym.release.runtime"}
"""Modules that register an implementation type when imported (loaded on first use)."""


def register_implementation(kind: str, factory: ImplementationFactory) -> None:
    """Teach the runtime a new ``implementation.type``."""
    _FACTORIES[kind] = factory


def _python_factory(tool: ToolSpec, env: EnvSpec) -> ToolFn:
    entry = tool.implementation.get("entrypoint", "")
    module_name, _, attr = entry.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"tool {tool.name!r}: entrypoint must look like 'pkg.module:function'")
    try:
        fn = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"tool {tool.name!r}: cannot load {entry!r}: {exc}") from exc
    return fn


register_implementation("python", _python_factory)


def _type_name(value: Any) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        type(None): "null",
        int: "integer",
        float: "number",
    }.get(type(value), type(value).__name__)


class Tool:
    """One tool bound to its implementation and an argument validator compiled on first use.

    Compiling is lazy because it costs milliseconds per schema and an environment may have
    dozens of tools of which an episode calls a few: ``gym.make`` stays fast. Large schemas are
    compiled piece by piece as arguments reach them (:mod:`agentworld_gym.validation`).
    """

    __slots__ = ("spec", "name", "fn", "writes", "_validate", "quick", "_properties", "_closed")

    def __init__(self, spec: ToolSpec, fn: ToolFn) -> None:
        self.spec = spec
        self.name = spec.name
        self.fn = fn
        self.writes = spec.kind != "read"
        params = spec.parameters or {"type": "object", "properties": {}}
        # ordered for messages, hashed for the unknown-argument check (schemas of 600+ names)
        self._properties: dict[str, None] = dict.fromkeys(params.get("properties", {}))
        self._closed = params.get("additionalProperties", False) is False
        self._validate: Callable[[Any], Any] | None = None
        self.quick: QuickAccept | None = None
        """A fast accept test of valid arguments (flat schemas), set with the validator."""

    @property
    def validator(self) -> Callable[[Any], Any]:
        """The compiled JSON Schema validator (raises ``ConfigError`` for a broken schema)."""
        if self._validate is None:
            params = self.spec.parameters or {"type": "object", "properties": {}}
            try:
                self._validate = compile_validator(params)
            except fastjsonschema.JsonSchemaDefinitionException as exc:
                raise ConfigError(
                    f"tool {self.name!r} has an invalid parameter schema: {exc}"
                ) from exc
            self.quick = QuickAccept.of(params, closed=self._closed)  # flat schemas, fast
        return self._validate

    def check_arguments(self, arguments: Any) -> dict[str, Any]:
        """Validate against the schema; the error names the argument and says what is wrong."""
        quick = self.quick  # set with the validator, on the first call
        if quick is not None and quick(arguments):  # also refuses names a closed schema lacks
            return arguments
        if not isinstance(arguments, dict):
            raise ToolArgumentError(
                f"Invalid arguments for {self.name}: expected a JSON object, "
                f"got {_type_name(arguments)}"
            )
        if self._closed and not arguments.keys() <= self._properties.keys():
            extra = [k for k in arguments if k not in self._properties]
            if extra:
                odd = next((k for k in extra if not isinstance(k, str)), None)
                if odd is not None:  # step() refuses these first; direct callers land here
                    raise ToolArgumentError(
                        f"Invalid arguments for {self.name}: argument names must be strings, "
                        f"got {type(odd).__name__} {_short(odd)}"
                    )
                hints = []
                for name in extra:
                    close = difflib.get_close_matches(name, list(self._properties), n=1)
                    hints.append(f"{name!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
                raise ToolArgumentError(
                    f"Invalid arguments for {self.name}: unexpected argument "
                    f"{', '.join(hints)}; accepted: {', '.join(self._properties) or 'none'}"
                )
        validate = self._validate or self.validator
        quick = self.quick
        if quick is not None and quick(arguments):  # (the first call of this tool)
            return arguments
        try:
            validate(arguments)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise ToolArgumentError(
                f"Invalid arguments for {self.name}: {_describe(exc)}"
            ) from None
        except fastjsonschema.JsonSchemaDefinitionException as exc:  # a large schema's part
            raise ConfigError(f"tool {self.name!r} has an invalid parameter schema: {exc}") from exc
        return arguments


def _describe(exc: fastjsonschema.JsonSchemaValueException) -> str:
    """``data.parent.page_id must be string`` → ``argument 'parent.page_id' must be string``."""
    message = exc.message
    path = exc.name or "data"
    if path.startswith("data"):
        where = path[4:].lstrip(".")
        rest = message[len(path) :].strip() if message.startswith(path) else message
        if where:
            got = exc.value
            suffix = f" (got {_type_name(got)} {_short(got)})" if "must be" in rest else ""
            return f"argument {where!r} {rest}{suffix}"
        if "must contain" in rest:
            return (
                "missing required argument(s): "
                + rest.split("must contain", 1)[1].replace(" properties", "").strip()
            )
        return f"arguments {rest}"
    return message


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Toolbox:
    """Every tool of one environment, built once per EnvSpec and shared by its episodes."""

    def __init__(self, env: EnvSpec) -> None:
        self.env = env
        self.tools: dict[str, Tool] = {}
        for spec in env.tools:
            kind = spec.implementation.get("type", "")
            if kind not in _FACTORIES and kind in _PROVIDERS:
                importlib.import_module(_PROVIDERS[kind])
            factory = _FACTORIES.get(kind)
            if factory is None:
                raise ConfigError(
                    f"tool {spec.name!r}: unknown implementation type {kind!r}; "
                    f"known: {', '.join(sorted(_FACTORIES))}"
                )
            if spec.name in self.tools:
                raise ConfigError(f"environment {env.id!r} defines tool {spec.name!r} twice")
            self.tools[spec.name] = Tool(spec, factory(spec, env))
        self.schemas = [t.openai_schema() for t in env.tools]
        hooks = (getattr(tool.fn, "episode", None) for tool in self.tools.values())
        self.episode_hooks: list[EpisodeHooks] = list(dict.fromkeys(h for h in hooks if h))
        """Implementations with per-episode resources (the code tools' sandboxed workers)."""

    def begin(self, ctx: ToolContext) -> None:
        """A new episode starts on ``ctx``: let implementations get its resources ready."""
        for hooks in self.episode_hooks:
            hooks.begin(ctx)

    def end(self, ctx: ToolContext, *, close: bool = False) -> None:
        """The episode of ``ctx`` is over; ``close`` also releases what is kept for reuse."""
        for hooks in self.episode_hooks:
            hooks.end(ctx, close=close)

    def isolation(self) -> dict[str, Any]:
        """How the implementations' untrusted code runs (empty when none does)."""
        for hooks in self.episode_hooks:
            if found := hooks.isolation:
                return found
        return {}

    def get(self, name: str) -> Tool:
        tool = self.tools.get(name)
        if tool is None:
            close = difflib.get_close_matches(str(name), list(self.tools), n=3)
            hint = f" Did you mean {', '.join(close)}?" if close else ""
            raise ToolNotFound(f"Unknown tool {name!r}.{hint}")
        return tool

    def call(
        self,
        ctx: ToolContext,
        name: str,
        arguments: Any,
        *,
        strict: bool = False,
        encoded: bool = False,
    ) -> Any:
        """Run one tool call as a transaction and return its JSON-serialisable result.

        ``encoded=True`` may return an :class:`Encoded` result as it is (the caller only
        writes its JSON); by default it is decoded into plain values.

        Raises:
            ToolError: the agent's mistake or the API's in-band error; the state is unchanged.
                An unexpected exception inside the tool is reported as a
                :class:`ToolExecutionError` too (and logged) so that a buggy tool never crashes
                a training run; ``strict=True`` re-raises it instead (tests use it).
        """
        tool = self.tools.get(name) if type(name) is str else None
        if tool is None:
            tool = self.get(name)  # raises ToolNotFound with the closest names
        quick = tool.quick  # valid arguments of a flat schema pass here (see check_arguments)
        if quick is None or not quick(arguments):
            arguments = tool.check_arguments(arguments)
        ctx.calls += 1
        try:
            if not tool.writes:
                result = tool.fn(ctx, **arguments)
            else:
                with ctx.db.transaction():
                    result = tool.fn(ctx, **arguments)
        except ToolError:
            raise
        except Exception as exc:
            if strict:
                raise
            # the text, not the exception: a kept log record would keep its frames (the episode)
            logger.warning("tool %s raised %s: %s", name, type(exc).__name__, str(exc))
            raise ToolExecutionError(
                f"Tool {name} failed with {type(exc).__name__}: {exc}"
            ) from exc
        if type(result) is Encoded and not encoded:
            return result.plain()
        return result

"""Declarative operations over the database: the runtime of tools compiled from API specs.

A tool whose ``implementation.type`` is ``"op"`` is interpreted here instead of running Python
written for it, so thousands of synthesized environments share one small, tested runtime.
The implementation object is pure JSON::

    {"type": "op",
     "op": "list" | "search" | "get" | "create" | "update" | "delete",
     "collection": "pets",
     "key": "petId",                  # get/update/delete (and create with a client key):
                                      #   the argument holding the primary key
     "parents": [{"arg": "ownerId", "field": "ownerId", "collection": "owners"}],
                                      # path scope: the record's ``field`` must equal the
                                      #   argument; with ``collection`` the parent must exist
     "filters": {"status": "status"}, # list: argument -> field, equality (a list field:
                                      #   membership); a missing field never matches
     "match": {"symbol": "symbol"},   # get without key: the first record matching these
     "search": {"arg": "q", "fields": ["name", "title"]},
                                      # case-insensitive substring over those fields
     "page": {"style": "offset" | "page" | "cursor", "size": "limit", "offset": "offset",
              "page": "page", "cursor": "pageToken", "default": 20, "max": 100, "base": 1},
     "body": {"name": "name"},        # create/update: argument -> field it sets
     "key_gen": "arg" | "uuid" | "hex:<n>" | "int",
                                      # create: the primary key comes from ``key``, a fresh
                                      #   UUID, n hex digits, or the largest integer key + 1
     "upsert": true,                  # update: a missing record is created (PUT semantics)
     "defaults": {...},               # create: fields a new record starts with
     "stamp": {"created": ["createdAt"], "updated": ["updatedAt"]},
                                      # fields set to the pinned clock on create/update
     "unique": ["email"],             # create/update: 409 when another record has the value
     "response": {"wrap": "data", "items": "items", "next": "nextPageToken",
                  "total": "total", "extra": {...}, "body": {...}, "hide": [...],
                  "last": null},
                                      # record -> response: ``wrap`` nests it under a key;
                                      #   lists put the page under ``items`` (absent: a bare
                                      #   array), the next cursor under ``next`` and the match
                                      #   count under ``total``; ``extra`` adds constant
                                      #   fields; ``body`` is returned verbatim instead of
                                      #   the record (acknowledgements, empty 204 answers);
                                      #   ``hide`` lists fields left out of answers, ``last``
                                      #   is the ``next`` value on the last page
     "error": {"error": {"code": "{status}", "message": "{message}"}}}
                                      # the API's error object; "{status}" (an integer),
                                      #   "{reason}" and "{message}" are filled in

API errors are raised as :class:`~agentworld_gym.errors.ToolExecutionError` with that body:
404 for a missing record or parent, 409 for a taken key or unique value, 400 for an invalid
page cursor. Argument types were already checked against the tool's JSON Schema.

Every decision that does not depend on the call's arguments (which fields to compare, where
the key is, how the answer is shaped) is taken once in :func:`build_op`, so a read costs a
dictionary lookup or one filtered scan.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

import orjson

from agentworld_gym.database import Record, copy_record
from agentworld_gym.errors import ConfigError, ToolExecutionError
from agentworld_gym.spec import EnvSpec, ToolSpec
from agentworld_gym.tools import ToolContext, ToolFn, register_implementation

OPS = ("list", "search", "get", "create", "update", "delete")
DEFAULT_ERROR = {"error": {"code": "{status}", "status": "{reason}", "message": "{message}"}}
_REASONS = {400: "BAD_REQUEST", 404: "NOT_FOUND", 409: "CONFLICT"}
_MISSING: Any = object()


# -- errors ---------------------------------------------------------------------------------
def _fill(template: Any, status: int, message: str) -> Any:
    if isinstance(template, str):
        if template == "{status}":
            return status
        return template.replace("{reason}", _REASONS.get(status, "ERROR")).replace(
            "{message}", message
        )
    if isinstance(template, dict):
        return {k: _fill(v, status, message) for k, v in template.items()}
    if isinstance(template, list):
        return [_fill(v, status, message) for v in template]
    return template


def _raiser(template: dict[str, Any]) -> Callable[[int, str], ToolExecutionError]:
    def error(status: int, message: str) -> ToolExecutionError:
        return ToolExecutionError(f"{status}: {message}", body=_fill(template, status, message))

    return error


# -- value helpers --------------------------------------------------------------------------
def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _equal(value: Any, wanted: Any) -> bool:
    """Query-string equality: ``5 == "5"``, ``True == "true"``; a list field matches by
    membership, a list argument (``ids[]=a&ids[]=b``) matches any of its values."""
    if value is _MISSING or value is None:
        return False
    if type(value) is str and type(wanted) is str:  # the common case, decided at once
        return value == wanted
    if isinstance(wanted, list):
        return any(_equal(value, w) for w in wanted)
    if isinstance(value, list):
        return any(_equal(v, wanted) for v in value)
    if value == wanted and type(value) is type(wanted):
        return True
    return _text(value) == _text(wanted)


def _holds(record: Record, checks: list[tuple[str, Any]]) -> bool:
    """Whether every ``(field, wanted)`` matches the record (a loop: a list op runs it on
    every record of the collection)."""
    for field, wanted in checks:
        if not _equal(record.get(field, _MISSING), wanted):
            return False
    return True


def _encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode().rstrip("=")


def _decode_cursor(token: str) -> int | None:
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        return None
    if not text.startswith("o:") or not text[2:].isdigit():
        return None
    return int(text[2:])


# -- the compiled operation -----------------------------------------------------------------
class _Op:
    """One tool's operation with everything argument-independent decided up front."""

    def __init__(self, impl: dict[str, Any], env: EnvSpec, tool: str) -> None:
        self.tool = tool
        self.op = impl.get("op")
        if self.op not in OPS:
            raise ConfigError(f"tool {tool!r}: unknown op {self.op!r}; known: {', '.join(OPS)}")
        self.collection: str = impl.get("collection", "")
        if self.collection not in env.collections:
            raise ConfigError(
                f"tool {tool!r}: collection {self.collection!r} is not declared in env.json"
            )
        self.pk: str = env.collections[self.collection].get("primary_key", "id")
        self.noun = self.collection
        self.key: str | None = impl.get("key")
        self.parents: list[tuple[str, str, str | None]] = [
            (p["arg"], p.get("field", p["arg"]), p.get("collection"))
            for p in impl.get("parents", [])
        ]
        self.filters: list[tuple[str, str]] = list(impl.get("filters", {}).items())
        self.match: list[tuple[str, str]] = list(impl.get("match", {}).items())
        search = impl.get("search") or {}
        self.search_arg: str | None = search.get("arg")
        self.search_fields: list[str] = list(search.get("fields", []))
        self.page: dict[str, Any] = dict(impl.get("page") or {})
        self.body: list[tuple[str, str]] = list(impl.get("body", {}).items())
        self.key_gen: str = impl.get("key_gen", "uuid")
        self.upsert: bool = bool(impl.get("upsert", False))
        self.defaults_json: bytes = orjson.dumps(impl.get("defaults", {}))
        stamp = impl.get("stamp", {})
        self.stamp_created: list[str] = list(stamp.get("created", []))
        self.stamp_updated: list[str] = list(stamp.get("updated", []))
        self.unique: list[str] = list(impl.get("unique", []))
        response = impl.get("response", {})
        self.wrap: str | None = response.get("wrap")
        self.items: str | None = response.get("items")
        self.next: str | None = response.get("next")
        self.total: str | None = response.get("total")
        self.extra: dict[str, Any] = dict(response.get("extra", {}))
        self.last: Any = response.get("last", _MISSING)
        self.hide: frozenset[str] = frozenset(response.get("hide", ()))
        self.fixed_body: Any = response.get("body", _MISSING)
        self.error = _raiser(impl.get("error") or DEFAULT_ERROR)

    # -- shared steps ---------------------------------------------------------------------
    def _check_parents(self, ctx: ToolContext, args: dict[str, Any]) -> None:
        for arg, _, collection in self.parents:
            if collection is not None and arg in args:
                if ctx.db.get(collection, args[arg]) is None:
                    raise self.error(404, f"{collection} {args[arg]!r} not found")

    def _in_scope(self, record: Record, args: dict[str, Any]) -> bool:
        for arg, field, _ in self.parents:
            if arg in args and not _equal(record.get(field, _MISSING), args[arg]):
                return False
        return True

    def _find(self, ctx: ToolContext, args: dict[str, Any]) -> Record | None:
        """The addressed record: by key, by ``match`` fields, or the first one in scope."""
        if self.key is not None:
            record = ctx.db.get(self.collection, args[self.key])
            if record is not None and self._in_scope(record, args):
                return record
            return None
        for record in ctx.db.scan(self.collection):
            if self._in_scope(record, args) and all(
                _equal(record.get(field, _MISSING), args[arg])
                for arg, field in self.match
                if arg in args
            ):
                return record
        return None

    def _missing(self, args: dict[str, Any]) -> ToolExecutionError:
        if self.key is not None:
            return self.error(404, f"{self.noun} {args[self.key]!r} not found")
        shown = ", ".join(f"{a}={args[a]!r}" for a, _ in self.match if a in args)
        return self.error(404, f"no {self.noun} found" + (f" for {shown}" if shown else ""))

    def _check_unique(self, ctx: ToolContext, record: Record) -> None:
        for field in self.unique:
            value = record.get(field)
            if value is None:
                continue
            for other in ctx.db.scan(self.collection):
                if other.get(field) == value and other.get(self.pk) != record.get(self.pk):
                    raise self.error(409, f"a {self.noun} with {field} {value!r} already exists")

    def _visible(self, record: Record) -> Record:
        if not self.hide:
            return record
        return {k: v for k, v in record.items() if k not in self.hide}

    def _shape(self, record: Record) -> Any:
        if self.fixed_body is not _MISSING:
            return self.fixed_body
        record = self._visible(record)
        if self.wrap is None and not self.extra:
            return record
        out = dict(self.extra)
        if self.wrap is None:
            out.update(record)
        else:
            out[self.wrap] = record
        return out

    # -- reads ----------------------------------------------------------------------------
    def get(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        record = self._find(ctx, args)
        if record is None:
            self._check_parents(ctx, args)
            raise self._missing(args)
        return self._shape(record)

    def list(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        self._check_parents(ctx, args)
        filters = [(f, args[a]) for a, f in self.filters if a in args]
        scope = [(f, args[a]) for a, f, _ in self.parents if a in args]
        needle = args.get(self.search_arg) if self.search_arg else None
        needle = _text(needle).casefold() if needle not in (None, "") else None
        checks = scope + filters  # every one must hold (scope first, as the API nests)
        rows = []
        for record in ctx.db.scan(self.collection):
            if checks and not _holds(record, checks):
                continue
            if needle is not None and not any(
                needle in _text(record.get(f, "")).casefold() for f in self.search_fields
            ):
                continue
            rows.append(record)
        start, size = self._window(args)
        page = rows[start : start + size] if size is not None else rows[start:]
        if self.hide:
            page = [self._visible(r) for r in page]
        if self.items is None:
            return page
        out = dict(self.extra)
        out[self.items] = page
        if self.total is not None:
            out[self.total] = len(rows)
        if self.next is not None and size is not None and start + size < len(rows):
            out[self.next] = _encode_cursor(start + size)
        elif self.next is not None and self.last is not _MISSING:
            out[self.next] = self.last
        return out

    def _window(self, args: dict[str, Any]) -> tuple[int, int | None]:
        """(first index, page size or ``None`` for everything) from the paging arguments."""
        page = self.page
        if not page:
            return 0, None
        size = args.get(page.get("size", ""), page.get("default", 20))
        size = max(1, min(int(size), int(page.get("max", 1000))))
        style = page.get("style")
        start = 0
        if style == "offset" and page.get("offset") in args:
            start = max(0, int(args[page["offset"]]))
        elif style == "page" and page.get("page") in args:
            start = max(0, int(args[page["page"]]) - int(page.get("base", 1))) * size
        elif style == "cursor" and args.get(page.get("cursor", "")):
            decoded = _decode_cursor(str(args[page["cursor"]]))
            if decoded is None:
                raise self.error(400, f"invalid page token {args[page['cursor']]!r}")
            start = decoded
        return start, size

    # -- writes ---------------------------------------------------------------------------
    def _apply_body(self, record: Record, args: dict[str, Any]) -> None:
        for arg, field in self.body:
            if arg in args:
                record[field] = args[arg]

    def _new_key(self, ctx: ToolContext) -> Any:
        if self.key_gen == "int":
            keys = [r.get(self.pk) for r in ctx.db.scan(self.collection)]
            return max((k for k in keys if isinstance(k, int)), default=0) + 1
        if self.key_gen.startswith("hex:"):
            digest = hashlib.sha256(ctx.new_id().encode()).hexdigest()
            return digest[: int(self.key_gen[4:])]
        return ctx.new_id()

    def create(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        self._check_parents(ctx, args)
        record: Record = orjson.loads(self.defaults_json)
        self._apply_body(record, args)
        for arg, field, _ in self.parents:
            if arg in args:
                record[field] = args[arg]
        if self.key_gen != "arg":
            record[self.pk] = self._new_key(ctx)
        elif self.key is not None and self.key in args:
            record[self.pk] = args[self.key]
        elif record.get(self.pk) is None:
            raise self.error(400, f"{self.pk} is required to create a {self.noun}")
        now = ctx.now_iso()
        for field in self.stamp_created + self.stamp_updated:
            record[field] = now
        if ctx.db.get(self.collection, record[self.pk]) is not None:
            raise self.error(409, f"{self.noun} {record[self.pk]!r} already exists")
        self._check_unique(ctx, record)
        ctx.db.insert(self.collection, record)
        return self._shape(record)

    def update(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        current = self._find(ctx, args)
        if current is None:
            if self.upsert and self.key is not None:
                return self.create(ctx, args)
            self._check_parents(ctx, args)
            raise self._missing(args)
        record = copy_record(current)
        self._apply_body(record, args)
        now = ctx.now_iso()
        for field in self.stamp_updated:
            record[field] = now
        self._check_unique(ctx, record)
        ctx.db.put(self.collection, record)
        return self._shape(record)

    def delete(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        record = self._find(ctx, args)
        if record is None:
            self._check_parents(ctx, args)
            raise self._missing(args)
        ctx.db.delete(self.collection, record[self.pk])
        return self._shape(record)


def op_tool(
    name: str,
    kind: str,
    properties: dict[str, Any],
    required: list[str],
    implementation: dict[str, Any],
    description: str | None = None,
) -> ToolSpec:
    """A tool run by this module: a strict object schema over ``properties`` and the ``"op"``
    ``implementation`` (its ``type`` is filled in). Default description: the name and op."""
    op, collection = implementation["op"], implementation["collection"]
    return ToolSpec(
        name=name,
        description=description or f"{name} ({op} {collection})",
        parameters={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
        implementation={"type": "op", **implementation},
        kind=kind,
    )


def build_op(tool: ToolSpec, env: EnvSpec) -> ToolFn:
    """The ``"op"`` implementation factory (see the module docstring for the format)."""
    op = _Op(tool.implementation, env, tool.name)
    method = getattr(op, "list" if op.op == "search" else op.op)

    def run(ctx: ToolContext, **arguments: Any) -> Any:
        return method(ctx, arguments)

    run.__name__ = f"op_{op.op}"
    return run


register_implementation("op", build_op)

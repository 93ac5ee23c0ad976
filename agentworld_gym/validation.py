"""Argument validators for tool schemas: fastjsonschema, split into small pieces when large.

fastjsonschema turns a JSON Schema into Python source and compiles it: the fastest validator
per call, but building it is slow for large schemas, because every ``raise`` in the generated
code embeds the sub-schema it checks. A 190 KB schema becomes 3.4 MB of source and costs
0.8 s (seconds on a loaded machine) on the tool's first call. Schemas under
:data:`SPLIT_BYTES` (about 98% of the catalog's tools) are still compiled whole.

A larger schema is validated by a thin tree of *split nodes* that walks the arguments, and
fastjsonschema compiles only the pieces the arguments reach, when they first reach them:

- an object node compiles its own keywords (``type``, ``required``, ...) without its
  properties, then validates each argument present with the property's node, in schema order,
  then checks ``additionalProperties``: the order of the whole-schema validator;
- an array node compiles its own keywords without ``items``, then validates each item;
- anything else (a leaf, or a node with keywords such as ``anyOf`` or ``$ref``) is compiled
  whole, without its annotations (``description``, ``default``), so the catalog's thousands of
  ``{"type": "string"}`` leaves share one compiled function.

Every check still runs in fastjsonschema's generated code, reached through its own
``name_prefix`` argument (how it names errors below a ``$ref``), so the valid/invalid decisions
and the errors (message, path, value, rule) are those of the whole-schema validator; only
``exc.definition`` holds the piece that was checked rather than its whole sub-schema. The
first call pays for the distinct pieces it touches (a few milliseconds at most), and they are
shared by every tool of the process.

Alternatives measured against: caching generated code on disk (a cold cache still pays the
full compile, and the cache is state to manage), compiling in a background thread (it holds
the GIL the episode needs, and a tool called first still waits), ``jsonschema`` (not a
dependency, and different error messages for the agent to read).

A broken sub-schema of a large schema raises ``JsonSchemaDefinitionException`` when the
arguments first reach it, rather than on the first call; catalog imports compile every schema
whole, so a catalog environment never has one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import fastjsonschema
import orjson

Validator = Callable[..., Any]
"""``validate(data, name_prefix=None)`` raises ``JsonSchemaValueException`` or returns ``data``."""

SPLIT_BYTES = 4096
"""Schemas larger than this (sorted-keys JSON) are validated by split nodes."""

ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment"})
"""Keywords that never change a decision (``default`` only acts with ``use_default=True``)."""

_OBJECT_KEYWORDS = frozenset(
    {"type", "enum", "minProperties", "maxProperties", "required", "properties"}
    | {"additionalProperties"}
    | ANNOTATIONS
)
"""The keywords an object node may have: checked before ``properties``, or ``properties``
and ``additionalProperties`` themselves (which the node runs in fastjsonschema's order)."""

_ARRAY_KEYWORDS = frozenset({"type", "enum", "minItems", "maxItems", "uniqueItems", "items"})
_ARRAY_KEYWORDS |= ANNOTATIONS
"""The keywords an array node may have (all checked before ``items``)."""

_GLOBAL_KEYWORDS = (b'"$ref"', b'"$schema"', b'"$id"', b'"$recursiveRef"', b'"$dynamicRef"')
"""Keywords whose meaning depends on the whole document: such schemas are compiled whole."""


def compile_validator(schema: dict[str, Any] | bool) -> Validator:
    """The validator of a tool's parameter schema, shared by every tool with the same schema.

    Raises:
        fastjsonschema.JsonSchemaDefinitionException: the schema (or, for a split schema, its
            top-level object) is not a valid JSON Schema.
    """
    return _compile_schema(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


@functools.lru_cache(maxsize=4096)
def _compile_schema(schema_json: bytes) -> Validator:
    schema = orjson.loads(schema_json)
    if len(schema_json) <= SPLIT_BYTES or any(k in schema_json for k in _GLOBAL_KEYWORDS):
        return fastjsonschema.compile(schema, use_default=False)
    return _node(schema)


@functools.lru_cache(maxsize=8192)
def _compile_piece(piece_json: bytes) -> Validator:
    return fastjsonschema.compile(orjson.loads(piece_json), use_default=False)


def clear_caches() -> None:
    """Forget every compiled validator (benchmarks time first calls with this)."""
    _compile_schema.cache_clear()
    _compile_piece.cache_clear()


def _piece(schema: dict[str, Any] | bool) -> Validator:
    """A sub-schema compiled whole, without annotations (so that equal checks share code)."""
    if isinstance(schema, dict):
        schema = {k: v for k, v in schema.items() if k not in ANNOTATIONS}
    return _compile_piece(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))


def _node(schema: Any) -> Validator:
    """The validator of one sub-schema of a large schema."""
    if isinstance(schema, dict):
        if _is_object_node(schema):
            return _ObjectNode(schema)
        if _is_array_node(schema):
            return _ArrayNode(schema)
    return _piece(schema)


def _is_object_node(schema: dict[str, Any]) -> bool:
    properties = schema.get("properties")
    if not isinstance(properties, dict) or not schema.keys() <= _OBJECT_KEYWORDS:
        return False
    if not all(isinstance(s, dict | bool) for s in properties.values()):
        return False  # fastjsonschema's definition error comes from the whole compile
    extra = schema.get("additionalProperties", True)
    if extra is False and isinstance(schema.get("required"), list):
        # fastjsonschema refuses required properties that additionalProperties forbids
        return all(name in properties for name in schema["required"])
    return isinstance(extra, dict | bool)


def _is_array_node(schema: dict[str, Any]) -> bool:
    items = schema.get("items")
    return isinstance(items, dict) and bool(items) and schema.keys() <= _ARRAY_KEYWORDS


class _ObjectNode:
    """An object schema: its own keywords compiled, its properties validated one by one."""

    __slots__ = ("_own", "_properties", "_rank", "_children", "_extra", "_extra_node")

    def __init__(self, schema: dict[str, Any]) -> None:
        skip = ("properties", "additionalProperties")
        self._own = _piece({k: v for k, v in schema.items() if k not in skip})
        self._properties: dict[str, Any] = schema["properties"]
        self._rank = {name: i for i, name in enumerate(self._properties)}
        self._children: dict[str, Validator] = {}
        extra = schema.get("additionalProperties", True)
        self._extra: dict[str, Any] | bool = True if extra == {} else extra
        self._extra_node: Validator | None = None

    def __call__(self, data: Any, name_prefix: str | None = None) -> Any:
        name = name_prefix or "data"
        self._own(data, name_prefix=name)
        if not isinstance(data, dict):
            return data
        rank = self._rank
        present = [key for key in data if key in rank]
        if len(present) > 1:
            present.sort(key=rank.__getitem__)  # fastjsonschema checks in schema order
        children = self._children
        for key in present:
            child = children.get(key)
            if child is None:
                child = children[key] = _node(self._properties[key])
            child(data[key], name_prefix=f"{name}.{key}")
        if self._extra is not True and len(present) < len(data):
            self._check_extra(data, present, name)
        return data

    def _check_extra(self, data: dict[str, Any], present: list[str], name: str) -> None:
        """``additionalProperties``, on the keys left once the properties are taken out."""
        if self._extra is False:
            # fastjsonschema's message lists a set built as below: let it build it
            shell = {"properties": dict.fromkeys(present, {}), "additionalProperties": False}
            _compile_piece(orjson.dumps(shell))(data, name_prefix=name)
            return
        if self._extra_node is None:
            self._extra_node = _node(self._extra)
        left = set(data.keys())  # the same set, in the same order, as the generated code's
        for key in present:
            left.remove(key)
        for key in left:
            self._extra_node(data.get(key), name_prefix=f"{name}.{key}")


class _ArrayNode:
    """An array schema with one ``items`` schema: its own keywords, then each item."""

    __slots__ = ("_own", "_items", "_item_node")

    def __init__(self, schema: dict[str, Any]) -> None:
        self._own = _piece({k: v for k, v in schema.items() if k != "items"})
        self._items = schema["items"]
        self._item_node: Validator | None = None

    def __call__(self, data: Any, name_prefix: str | None = None) -> Any:
        name = name_prefix or "data"
        self._own(data, name_prefix=name)
        if isinstance(data, list | tuple) and data:
            if self._item_node is None:
                self._item_node = _node(self._items)
            item = self._item_node
            for i, value in enumerate(data):
                item(value, name_prefix=f"{name}[{i}]")
        return data

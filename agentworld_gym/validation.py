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
import re
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


@functools.lru_cache(maxsize=8192)
def _compile_decider(piece_json: bytes) -> Validator:
    """A piece's validator for yes/no only: the same checks, with exceptions that carry no
    value or sub-schema (building those makes a failing ``anyOf`` branch costly)."""
    piece = orjson.loads(piece_json)
    try:
        return fastjsonschema.compile(piece, use_default=False, detailed_exceptions=False)
    except TypeError:  # a fastjsonschema without the option
        return fastjsonschema.compile(piece, use_default=False)


def clear_caches() -> None:
    """Forget every compiled validator (benchmarks time first calls with this)."""
    _compile_schema.cache_clear()
    _compile_piece.cache_clear()
    _compile_decider.cache_clear()


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


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}
"""The Python types a JSON type certainly accepts (tested with ``type(x) in ...``: ``True``
is no integer here, ``3.0`` no integer; the full validator decides such edge cases)."""


def _format_regexes() -> dict[str, re.Pattern[str]]:
    """The string formats :class:`QuickAccept` tests itself, with the regexes of the code
    generator fastjsonschema uses for a schema without ``$schema`` (none if it hides them)."""
    try:
        patterns = fastjsonschema._get_code_generator_class({}).FORMAT_REGEXS
    except AttributeError:
        return {}
    return {name: re.compile(patterns[name]) for name in ("uuid",) if name in patterns}


_FORMATS = _format_regexes()
"""String formats tested here with fastjsonschema's own regex (its default draft's)."""

_TOP_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties"}) | ANNOTATIONS


class QuickAccept:
    """A fast *accept* test for the arguments of a flat object schema, or ``None``.

    ``quick(arguments)`` is ``True`` only if the whole-schema validator would accept the
    arguments too: every required name present and each argument of a declared property of
    a plainly typed kind (``{"type": "string"}``) of exactly that Python type, or accepted by
    its property's own compiled validator (any other property schema). Anything else answers
    ``False`` and the caller runs the full validator, which gives the exact error (or
    accepts an edge case such as ``3.0`` for an integer). A tool's cheapest calls (one id
    argument) so skip most of the generated code's work; the decisions are unchanged.
    """

    __slots__ = ("_required", "_types", "_formats", "_pieces", "_closed", "_accepted")

    def __init__(
        self,
        required: frozenset[str],
        types: dict[str, frozenset[type]],
        formats: dict[str, re.Pattern[str]],
        pieces: dict[str, dict[str, Any] | bool],
        closed: bool,
    ) -> None:
        self._closed = closed
        self._formats = formats
        self._required = required
        self._types = types
        self._pieces: dict[str, Any] = pieces  # sub-schema until first use, then its validator
        self._accepted: dict[tuple[str, bytes], None] = {}
        """(property, JSON text) of object and array values a piece accepted: a pure verdict,
        so the same value (a GRPO group's members repeat their calls) is not walked again."""

    @classmethod
    def of(cls, schema: Any, closed: bool | None = None) -> QuickAccept | None:
        """The test for ``schema``, or ``None`` when it is not a flat object schema.

        ``closed``: whether a name the schema does not declare is refused (a tool refuses
        them even where the schema leaves ``additionalProperties`` out); by default, as the
        schema says.
        """
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return None
        if not schema.keys() <= _TOP_KEYWORDS:
            return None
        if not isinstance(schema.get("additionalProperties", True), bool):
            return None
        required = schema.get("required", [])
        properties = schema.get("properties", {})
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            return None
        if not isinstance(properties, dict):
            return None
        text = orjson.dumps(schema)
        if len(text) > SPLIT_BYTES or b'"$' in text:  # split schemas; $ref needs the whole
            return None
        types: dict[str, frozenset[type]] = {}
        formats: dict[str, re.Pattern[str]] = {}
        pieces: dict[str, dict[str, Any] | bool] = {}
        for name, sub in properties.items():
            if not isinstance(sub, dict | bool):
                return None
            if (
                isinstance(sub, dict)
                and sub.keys() - ANNOTATIONS == {"type", "format"}
                and sub["type"] == "string"
                and sub["format"] in _FORMATS
            ):
                types[name] = frozenset({str})
                formats[name] = _FORMATS[sub["format"]]
                continue
            if isinstance(sub, dict) and sub.keys() - ANNOTATIONS == {"type"}:
                kinds = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
                if kinds and all(isinstance(k, str) and k in _PYTHON_TYPES for k in kinds):
                    types[name] = frozenset(t for k in kinds for t in _PYTHON_TYPES[k])
                    continue
            pieces[name] = sub
        if closed is None:
            closed = schema.get("additionalProperties", True) is False
        return cls(frozenset(required), types, formats, pieces, closed)

    def __call__(self, arguments: Any) -> bool:
        if type(arguments) is not dict or not self._required <= arguments.keys():
            return False
        types, formats, pieces = self._types, self._formats, self._pieces
        for name, value in arguments.items():
            allowed = types.get(name)
            if allowed is not None:
                if type(value) not in allowed:
                    return False
                if formats and name in formats and not formats[name].match(value):
                    return False
            elif name in pieces:
                if not self._piece_accepts(name, value):
                    return False
            elif self._closed:
                return False
        return True

    def _piece_accepts(self, name: str, value: Any) -> bool:
        """Whether the property's own validator accepts ``value`` (compiled on first use);
        an object or array accepted before, by its exact JSON text, is accepted at once."""
        key = None
        if type(value) is dict or type(value) is list:
            try:
                key = (name, orjson.dumps(value))
            except TypeError:  # not JSON text (a big integer): validated every time
                key = None
            if key is not None and key in self._accepted:
                return True
        piece = self._pieces[name]
        if not callable(piece):
            if isinstance(piece, dict):
                piece = {k: v for k, v in piece.items() if k not in ANNOTATIONS}
            text = orjson.dumps(piece, option=orjson.OPT_SORT_KEYS)
            piece = self._pieces[name] = _compile_decider(text)
        try:
            piece(value)
        except fastjsonschema.JsonSchemaException:
            return False
        if key is not None:
            if len(self._accepted) >= _MAX_ACCEPTED:
                self._accepted.clear()
            self._accepted[key] = None
        return True


_MAX_ACCEPTED = 4096
"""Accepted (property, JSON text) verdicts kept per tool (cleared when full)."""

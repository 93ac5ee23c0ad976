"""Make what an agent sends into JSON that every later stage can carry, without recursion.

An agent (an LLM, a fuzzer, a Python policy) can hand ``step`` anything: text with lone
surrogates, dicts with integer keys, sets, ``2**64``, ``nan``, lists nested a million deep.
Downstream code (orjson, the JSON Schema validator, ``repr``, the verifiers, the sandbox wire
format) would raise on each of those, or recurse until Python gives up. This module turns such
a value into plain JSON (``dict`` with ``str`` keys, ``list``, ``str``, ``int`` in the 64-bit
range, finite ``float``, ``bool``, ``None``) or says precisely where and why it cannot, and it
walks with an explicit stack, so no depth of nesting can overflow the interpreter.

What is normalised and what is refused (the README's episode contract says the same):

- lone surrogates (``"\\udcff"``) in text, values or keys: replaced by U+FFFD (a surrogate
  *pair* joins into its character), so the rest of the text survives;
- tuples: read as lists;
- nesting deeper than :data:`MAX_DEPTH` containers: refused;
- non-string object keys, integers outside ``[-2**63, 2**64)``, NaN and ±Infinity, and any
  other type (sets, bytes, objects): refused, since JSON cannot carry them as they are.
"""

from __future__ import annotations

import enum
import math
import reprlib
import uuid
from typing import Any

import orjson

MAX_DEPTH = 64
"""The deepest nesting of objects and arrays one JSON value of an action may have. Real tool
arguments stay under 15 (Notion's nested blocks included); orjson stops at 255 and Python's
recursion at about 1,000, so 64 leaves every recursive consumer a wide margin."""

_INT_MIN, _INT_END = -(2**63), 2**64
_STRICT = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
"""Dataclasses and datetimes are refused on both paths alike, not silently converted."""
_PREVIEW = reprlib.Repr()
_PREVIEW.maxlevel, _PREVIEW.maxstring, _PREVIEW.maxother = 3, 40, 40


class JSONValueError(ValueError):
    """A value cannot be carried as JSON; the message names where (``action.arguments.x``)."""


def clean_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (valid text is returned as is).

    >>> clean_text("caf\\udce9 ok") == "caf\\ufffd ok"
    True
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def preview(value: Any, limit: int = 80) -> str:
    """A short, safe ``repr`` for messages: bounded depth and length, never raises."""
    try:
        text = _PREVIEW.repr(value)
    except Exception:  # an object whose __repr__ fails or recurses: name its type only
        text = f"<{type(value).__name__}>"
    text = clean_text(text)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _where(path: tuple[Any, ...]) -> str:
    """``("action", "arguments", 0, "x")`` → ``action.arguments[0].x``."""
    parts: list[str] = []
    node: Any = path
    while node:
        node, key = node
        if isinstance(key, int):
            parts.append(f"[{key}]")
        else:
            text = key if key.isidentifier() and len(key) <= 40 else preview(key, 40)
            parts.append(f".{text}")
    parts.reverse()
    if len(parts) > 8:  # a path hundreds of levels deep: its ends say enough
        parts = [*parts[:4], f"...({len(parts) - 7} more)", *parts[-3:]]
    return "".join(parts).lstrip(".")


def to_json_text(value: Any, root: str = "action", max_depth: int = MAX_DEPTH) -> tuple[Any, int]:
    """:func:`to_json` and the length of its JSON encoding (for size limits), in one pass on
    the common path."""
    fast = _fast_copy(value, max_depth)
    if fast is not None:
        return fast
    plain = to_json(value, root, max_depth)
    return plain, len(orjson.dumps(plain))


def to_json(value: Any, root: str = "action", max_depth: int = MAX_DEPTH) -> Any:
    """A plain-JSON copy of ``value`` (see the module docstring for what is normalised).

    Raises:
        JSONValueError: the value holds something JSON cannot carry, or nests deeper than
            ``max_depth``; the message names the place and the cause.
    """
    fast = _fast_copy(value, max_depth)
    if fast is not None:
        return fast[0]
    holder: list[Any] = [None]
    # (value, where to put its copy, slot there, depth, path as nested (parent, key) pairs)
    stack: list[tuple[Any, Any, Any, int, Any]] = [(value, holder, 0, 0, ((), root))]
    while stack:
        item, parent, slot, depth, path = stack.pop()
        if isinstance(item, str):
            parent[slot] = clean_text(str.__str__(item))
        elif item is None or isinstance(item, bool):
            parent[slot] = item
        elif isinstance(item, int) and not isinstance(item, bool):
            if not _INT_MIN <= item < _INT_END:
                raise JSONValueError(
                    f"{_where(path)}: the integer {preview(item, 30)} is outside the 64-bit "
                    "range JSON tools accept; send it as a string"
                )
            parent[slot] = int(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise JSONValueError(
                    f"{_where(path)}: {item!r} is not a JSON number (JSON has no NaN or "
                    "Infinity); send a finite number, null or a string"
                )
            parent[slot] = float(item)
        elif isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                raise JSONValueError(
                    f"{_where(path)}: nested deeper than {max_depth} levels of objects and "
                    "arrays; send flatter JSON"
                )
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        raise JSONValueError(
                            f"{_where(path)}: object keys must be strings, got "
                            f"{type(key).__name__} {preview(key, 30)}"
                        )
                copy: Any = dict.fromkeys(clean_text(k) for k in item)
                if len(copy) < len(item):
                    raise JSONValueError(
                        f"{_where(path)}: two keys are the same text once invalid Unicode "
                        "is replaced; send valid UTF-8 keys"
                    )
                pairs = zip(copy, item.values(), strict=True)
            else:
                copy = [None] * len(item)
                pairs = enumerate(item)
            parent[slot] = copy
            for key, child in pairs:
                stack.append((child, copy, key, depth + 1, (path, key)))
        elif isinstance(item, enum.Enum | uuid.UUID):  # what orjson writes by value
            plain = item.value if isinstance(item, enum.Enum) else str(item)
            stack.append((plain, parent, slot, depth, path))
        else:
            raise JSONValueError(
                f"{_where(path)}: {type(item).__name__} {preview(item, 30)} is not a JSON "
                "value (use objects, arrays, strings, numbers, true/false or null)"
            )
    return holder[0]


def _fast_copy(value: Any, max_depth: int) -> tuple[Any, int] | None:
    """orjson's round trip when it is certainly faithful (the common case), else ``None``.

    orjson refuses surrogates, non-string keys, big integers, sets and depth > 255 by itself,
    but writes NaN and ±Infinity as null and nests up to 255: those cases take the careful
    walk (a ``null`` in the output, as OpenAI messages' ``"content": null``, only costs a scan
    of the value's floats).
    """
    try:
        data = orjson.dumps(value, option=_STRICT)
    except TypeError:
        return None
    if b"null" in data and _has_nonfinite(value):
        return None
    copy = orjson.loads(data)
    if data.count(b"[") + data.count(b"{") > max_depth and depth_exceeds(copy, max_depth):
        return None
    return copy, len(data)


def _has_nonfinite(value: Any) -> bool:
    """Whether a value orjson could write holds NaN or ±Infinity (iteratively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)  # exact types first: isinstance with unions is slow on this path
        if kind is str or item is None or kind is int or kind is bool:
            continue
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return False


def depth_exceeds(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """Whether a decoded JSON value nests deeper than ``max_depth`` (iteratively)."""
    if not isinstance(value, dict | list):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def too_deep_text(text: str, max_depth: int = MAX_DEPTH) -> bool:
    """A cheap pre-check for decoded JSON text: a text too short to hold ``max_depth + 1``
    bracket pairs, or with too few opening brackets, cannot be too deep (most tool calls stop
    here); otherwise the decoded value is walked."""
    return len(text) > 2 * max_depth + 1 and text.count("[") + text.count("{") > max_depth


def lenient_json(value: Any) -> Any:
    """A JSON copy of a state a tool wrote, for serialising it: never refuses.

    Surrogates become U+FFFD, non-string keys their ``str``, big integers floats, NaN and
    ±Infinity null, other objects their ``str``; nesting is copied as it is.
    """
    holder: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, str):
            parent[slot] = clean_text(item)
        elif item is None or isinstance(item, bool):
            parent[slot] = item
        elif isinstance(item, int):
            parent[slot] = int(item) if _INT_MIN <= item < _INT_END else float(item)
        elif isinstance(item, float):
            parent[slot] = item if math.isfinite(item) else None
        elif isinstance(item, dict):
            copy: Any = {}
            parent[slot] = copy
            for key, child in item.items():
                key = clean_text(key) if isinstance(key, str) else preview(key, 200)
                copy[key] = None
                stack.append((child, copy, key))
        elif isinstance(item, list | tuple | set | frozenset):
            copy = [None] * len(item)
            parent[slot] = copy
            stack.extend((child, copy, i) for i, child in enumerate(item))
        else:
            parent[slot] = preview(item, 200)
    return holder[0]


def dumps_state(value: Any, option: int = 0) -> bytes:
    """orjson bytes of a state; a state a tool filled with odd values goes through
    :func:`lenient_json` instead of raising (verifiers must read every reachable state)."""
    try:
        return orjson.dumps(value, option=option)
    except TypeError:
        return orjson.dumps(lenient_json(value), option=option)

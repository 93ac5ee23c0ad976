"""Small value helpers shared by synthesis, complexification and re-derivation.

- :func:`shape_of` names the *format* of a value (``uuid``, ``datetime``, ``email``,
  ``prefixed-int``, ``text``...): complexified records must keep every column's formats.
- :func:`coerce_to_schema` fits a record value to a tool argument's JSON Schema.
- :func:`find_record_path` / :func:`find_value_paths` locate values in tool outputs, and
  :func:`read_anchored` re-reads them, so a gold chain's answer can be traced to where it
  was read and read again after the data changed.
"""

from __future__ import annotations

import re
from typing import Any

from agentworld_gym.verifiers.checks import _MISSING, get_path

_SHAPES: list[tuple[str, re.Pattern[str]]] = [
    ("uuid", re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", re.I)),
    (
        "datetime",
        re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$"),
    ),
    ("date", re.compile(r"^\d{4}-\d{2}-\d{2}$")),
    ("email", re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")),
    ("url", re.compile(r"^[a-z][a-z0-9+.-]*://\S+$", re.I)),
    ("int-string", re.compile(r"^-?\d+$")),
    ("hex", re.compile(r"^[0-9a-f]{8,}$")),
    ("prefixed-int", re.compile(r"^([A-Za-z][A-Za-z_-]*?)[-_]?(\d+)$")),
]
PREFIXED = re.compile(r"^(.*?)(\d+)$")


def shape_of(value: Any) -> str:
    """The format class of a JSON value (``text`` for free strings)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "object"
    text = str(value)
    for name, pattern in _SHAPES:
        if pattern.match(text):
            return name
    return "text"


def compatible_shapes(old: set[str], new: str) -> bool:
    """Whether a new value's shape is one the column already had (ints fit numbers)."""
    return new in old or (new == "int" and "number" in old) or (new == "null" and not old)


def answerable(value: Any) -> bool:
    """A value worth asking for: a short one-line string or a number."""
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, str):
        return 2 <= len(value) <= 60 and "\n" not in value
    return isinstance(value, int | float)


def _schema_type(schema: dict[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    return kind


def coerce_to_schema(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` converted to the schema's type, or ``None`` when it cannot fit."""
    kind = _schema_type(schema)
    out: Any = value
    if kind == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, float) and value.is_integer():
            out = int(value)
        elif isinstance(value, str) and re.fullmatch(r"-?\d+", value):
            out = int(value)
        elif not isinstance(value, int):
            return None
    elif kind == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, str):
            try:
                out = float(value)
            except ValueError:
                return None
        elif not isinstance(value, int | float):
            return None
    elif kind == "string":
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            return None
        out = str(value)
    elif kind == "boolean":
        if isinstance(value, str) and value in ("true", "false"):
            out = value == "true"
        elif not isinstance(value, bool):
            return None
    enum = schema.get("enum")
    if enum is not None and out not in enum:
        return None
    return out


def find_record_path(output: Any, pk: str, key: Any, depth: int = 3) -> str | None:
    """The path of the object whose ``pk`` equals ``key`` in a tool output ("" = top)."""
    if isinstance(output, dict):
        if pk in output and str(output[pk]) == str(key):
            return ""
        items = output.items()
    elif isinstance(output, list):
        items = ((str(i), v) for i, v in enumerate(output))
    else:
        return None
    if depth == 0:
        return None
    for name, value in items:
        if isinstance(value, dict | list):
            sub = find_record_path(value, pk, key, depth - 1)
            if sub is not None:
                return f"{name}.{sub}".rstrip(".")
    return None


_AGGREGATE_KEYS = ("count", "total", "size", "length", "num", "n")


def find_value_paths(outputs: list[Any], value: Any, depth: int = 16) -> list[tuple[int, str, str]]:
    """Where ``value`` appears in the outputs, best first, as ``(rank, kind, "$i.path")``.

    Rank 0: an aggregate — a list of that length (kind ``len``) or an equal number under a
    ``count``/``total``-like key; rank 1: an equal scalar (kind ``value``; numbers compare
    as numbers, strings case-insensitively); rank 2: a string containing it (``substr``; for
    a number, ``numtext``: a text that mentions it, "$1,500" for 1500).
    """
    found: list[tuple[int, str, str]] = []
    needle = value.strip().casefold() if isinstance(value, str) else None
    is_number = isinstance(value, int | float) and not isinstance(value, bool)

    def same(a: Any) -> bool:
        if isinstance(a, bool) or isinstance(value, bool):
            return a is value
        if isinstance(a, int | float) and isinstance(value, int | float):
            return abs(a - value) <= 1e-9
        if isinstance(a, str) and needle is not None:
            return a.strip().casefold() == needle
        return False

    def walk(node: Any, path: str, d: int) -> None:
        if isinstance(node, list):
            if isinstance(value, int) and not isinstance(value, bool) and len(node) == value:
                found.append((0, "len", path))
            if d:
                for i, item in enumerate(node):
                    walk(item, f"{path}.{i}", d - 1)
        elif isinstance(node, dict):
            if d:
                for key, item in node.items():
                    walk(item, f"{path}.{key}", d - 1)
        elif same(node):
            last = path.rsplit(".", 1)[-1].lower()
            found.append((0 if last in _AGGREGATE_KEYS else 1, "value", path))
        elif isinstance(node, str) and needle and needle in node.casefold():
            found.append((2, "substr", path))
        elif isinstance(node, str) and is_number and mentions_number(node, value):
            found.append((2, "numtext", path))

    for step, output in enumerate(outputs):
        walk(output, f"${step}", depth)
    found.sort(key=lambda t: t[0])
    return found


_STANDALONE_NUMBER = re.compile(r"(?<![\w.])-?\d[\d,]*(?:\.\d+)?(?![\w])")


def mentions_number(text: str, value: float) -> bool:
    """Whether prose (text with a space) states ``value`` as a number of its own ("$1,500"
    mentions 1500; the id "i2" does not mention 2)."""
    if " " not in text.strip():
        return False
    found = [float(m.replace(",", "")) for m in _STANDALONE_NUMBER.findall(text)]
    return any(abs(x - value) <= 1e-9 for x in found)


def read_anchored(old: list[Any], new: list[Any], ref: str) -> Any:
    """Read ``ref`` ("$i.a.3.b") in ``new``, following list items by their ``id``.

    A list index in the path is resolved in the old outputs to the item's ``id`` (when the
    item has one) and looked up by that id in the new list, so an answer read from "the
    item with id X" is re-read from the same item even if the list order shifted.
    Returns ``_MISSING`` when the path no longer exists.
    """
    step_text, _, path = ref[1:].partition(".")
    step = int(step_text)
    if step >= len(old) or step >= len(new):
        return _MISSING
    o, n = old[step], new[step]
    for part in path.split(".") if path else []:
        if isinstance(o, list) and isinstance(n, list) and part.lstrip("-").isdigit():
            idx = int(part)
            item = o[idx] if -len(o) <= idx < len(o) else _MISSING
            anchor = item.get("id") if isinstance(item, dict) else None
            if anchor is not None:
                match = [x for x in n if isinstance(x, dict) and x.get("id") == anchor]
                o, n = item, (match[0] if len(match) == 1 else _MISSING)
            else:
                o, n = item, get_path(n, part)
        elif isinstance(o, dict) and isinstance(n, dict):
            o, n = o.get(part, _MISSING), n.get(part, _MISSING)
        else:
            return _MISSING
        if n is _MISSING or o is _MISSING:
            return _MISSING
    return n


MISSING = _MISSING

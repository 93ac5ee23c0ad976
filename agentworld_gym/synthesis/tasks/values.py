"""Seeded values for synthesis: fresh strings to write, schema-valid scalars, paths, seeds.

Every random choice in task synthesis draws from a :class:`random.Random` made by
:func:`rng_for` from the root seed and a purpose string, never from global state or from
``hash()`` (which changes between processes), so the same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from agentworld_gym.synthesis.fields import (
    FieldValues,
    fold,
    is_sentinel,
    kind_of,
    matches,
    words_of,
)
from agentworld_gym.verifiers.checks import _MISSING, get_path

__all__ = [
    "items_path",
    "MISSING",
    "flag_named",
    "flag_reads",
    "fresh_text",
    "get_path",
    "join",
    "new_value",
    "rng_for",
    "sayable_field",
    "schema_type",
    "simple",
    "typed",
    "writable_field",
]

MISSING = _MISSING
_DOMAINS = ["example.com", "example.org", "example.net"]
_NOT_WRITABLE_KINDS = frozenset(("etag", "id", "uuid", "secret", "discriminator"))
_COUNTERS = frozenset(
    "version revision rev sequence seq generation resourceversion lockversion "
    "metageneration versionnumber".split()
)
_STAMPS = ("created", "creation", "updated", "modified", "lastmodified", "lastupdated", "deleted")


def rng_for(seed: int, *parts: Any) -> random.Random:
    """A generator fixed by ``seed`` and ``parts`` (process- and platform-independent)."""
    digest = hashlib.sha256(":".join(map(str, (seed, *parts))).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def join(prefix: str, key: str | int) -> str:
    return str(key) if prefix == "" else f"{prefix}.{key}"


def schema_type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t is None and "enum" in schema and schema["enum"]:
        return {bool: "boolean", int: "integer", float: "number"}.get(
            type(schema["enum"][0]), "string"
        )
    return t or ""


def typed(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` as the argument's schema wants it (a record's ``5`` for a string ``"5"``)."""
    t = schema_type(schema)
    if t == "string" and not isinstance(value, str):
        return str(value).lower() if isinstance(value, bool) else str(value)
    if t == "integer" and isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    return value


def _leaf(field: str) -> tuple[str, str]:
    """``address.city`` -> (``city``, ``address``); list indices are skipped."""
    parts = [p for p in str(field).split(".") if p and not p.isdigit()]
    if not parts:
        return "", ""
    return parts[-1], parts[-2] if len(parts) > 1 else ""


def fresh_text(rng: random.Random, field: str = "", noun: str = "") -> str:
    """A realistic value for the field (a surname for ``last_name``, a duration for
    ``max_staleness``, "Payments Queue" for a queue's ``name``), drawn from ``rng`` alone by
    the mechanism seed records use; ``noun`` is the record's kind, for a top-level field."""
    name, parent = _leaf(field)
    return FieldValues(rng, _DOMAINS).string(name, {}, parent or noun)


def writable_field(name: str, schema: dict[str, Any] | None = None) -> bool:
    """Whether a task may choose this field as a write target: not an id, key, secret,
    etag, version counter, created/updated stamp, self link or type discriminator
    (writing those reads oddly, and the API usually manages them itself)."""
    schema = schema if isinstance(schema, dict) else {}
    if schema.get("readOnly") or len(schema.get("enum") or ()) == 1:  # a constant: op=MKDIRS
        return False
    leaf, _ = _leaf(name)
    if leaf.startswith(("$", "@", "_")):
        return False
    key = fold(leaf)
    words = words_of(leaf) or [key]
    counter = key in _COUNTERS or (key.endswith("version") and schema_type(schema) == "integer")
    if kind_of(leaf, schema) in _NOT_WRITABLE_KINDS or counter:
        return False
    if key.startswith(_STAMPS) or words[-1] in ("etag", "checksum", "hash", "key", "keys"):
        return False
    if key in ("self", "href", "selflink", "links", "link", "kind", "object", "type"):
        return False
    return not key.endswith(("href", "selflink", "selfuri", "selfurl")) and sayable_field(
        name, schema
    )


_FLAG_HEADS = ("has", "have", "can", "allow", "allows", "should", "supports", "requires")


def flag_named(name: str) -> bool:
    """Whether the field is named as a yes/no (``is_first``, ``has_children``, ``can_edit``),
    whatever its values: a number under such a name is no quantity ("the lowest is first")."""
    w = words_of(_leaf(name)[0])
    return bool(w) and (w[0] in ("is", "are", "enable", "enabled") or w[0] in _FLAG_HEADS)


def flag_reads(name: str) -> bool:
    """Whether a yes/no field can be said in words: ``active``, ``is_public``,
    ``has_attachments``, ``can_edit``, ``email_verified`` -- not ``bypass policy lockout
    safety check`` or ``ui editable``, which come out as "with ... on"."""
    w = words_of(_leaf(name)[0])
    if w[:1] in (["is"], ["are"]):
        w = w[1:]
    if not w:
        return False
    return len(w) == 1 or w[0] in _FLAG_HEADS or (len(w) == 2 and w[-1].endswith("ed"))


def sayable_field(name: str, schema: dict[str, Any] | None = None) -> bool:
    """Whether a value a task makes up for this field reads as meant: not free text of no
    known kind ("set the certificate to "Invoice dispute resolution"" reads as nonsense;
    a name, description, status, date, email or enum value does not), and a yes/no field
    only when it can be said in words (:func:`flag_reads`)."""
    schema = schema if isinstance(schema, dict) else {}
    if schema_type(schema) == "boolean":
        return flag_reads(name)
    if schema.get("enum") or schema_type(schema) not in ("string", ""):
        return True
    return kind_of(_leaf(name)[0], schema) != "text"


def new_value(
    schema: dict[str, Any],
    field: str,
    current: Any,
    rng: random.Random,
    known: list[Any] | None = None,
    hint: str = "",
    noun: str = "",
) -> Any:
    """A schema-valid value different from ``current`` (``MISSING`` when none fits).

    ``known`` values (a categorical field's values in the seed data) are preferred, so that
    writes look like the data; strings otherwise come from the field-aware mechanism
    (:class:`FieldValues`), avoiding ``current`` and the known values; ``hint`` (the
    environment) and ``noun`` (the record's kind: a team's ``name`` is "Payments Team", not a
    sentence) tune it.
    """
    t = schema_type(schema)
    enum = [
        v for v in schema.get("enum", []) if v is not None and v != current and not is_sentinel(v)
    ]
    if schema.get("enum"):
        return rng.choice(enum) if enum else MISSING
    if t == "boolean":
        return (not current) if isinstance(current, bool) else rng.choice([True, False])
    if t in ("integer", "number"):
        # a plausible number for the field (a year, a day, a price, a port), within bounds
        name, _ = _leaf(field)
        lo, hi = schema.get("minimum"), schema.get("maximum")
        if isinstance(lo, int | float) and isinstance(hi, int | float) and hi < lo:
            return MISSING
        values = FieldValues(rng, _DOMAINS)
        for _ in range(5):
            v = _calendar(name, rng) if t == "integer" else None
            if v is None:
                v = values.number(name, schema, t == "integer")
            if v != current:
                return v
        return MISSING
    if t == "string":
        fmt = schema.get("format", "")
        if fmt == "date":
            return f"2026-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}"
        if fmt == "date-time":
            return f"2026-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z"
        if fmt in ("uuid", "binary", "byte"):
            return MISSING
        options = [v for v in known or [] if isinstance(v, str) and v != current]
        if options and rng.random() < 0.7:
            return rng.choice(options)
        name, parent = _leaf(field)
        noun = parent or noun
        values = FieldValues(rng, _DOMAINS, hint)
        taken = {v for v in (current, *(known or [])) if isinstance(v, str)}
        lo, hi = int(schema.get("minLength", 0)), int(schema.get("maxLength", 1000))
        pattern = schema.get("pattern")
        for _ in range(6):
            value = values.string(name, schema, noun)
            if value in taken or not lo <= len(value) <= hi:
                continue
            if isinstance(pattern, str) and not matches(pattern, value):
                return MISSING
            return value
        return MISSING
    return MISSING


_CALENDAR = {"day": (1, 28), "month": (1, 12), "hour": (0, 23), "minute": (0, 59)}
_CALENDAR |= {"second": (0, 59), "weekday": (0, 6), "dayofweek": (0, 6), "quarter": (1, 4)}


def _calendar(name: str, rng: random.Random) -> int | None:
    """A day, month, hour... in its calendar range (``None`` for other fields)."""
    key = fold(name)
    for unit, (lo, hi) in _CALENDAR.items():
        if key == unit or key.endswith(unit) and not key.endswith(("today", "birthday")):
            return rng.randint(lo, hi)
    return None


def simple(schema: dict[str, Any]) -> bool:
    """A scalar the instruction can state and a check can compare."""
    return schema_type(schema) in ("string", "integer", "number", "boolean")


def items_path(out: Any) -> str | None:
    """Where a code tool's list answer keeps its records (``""``, ``results``, ...)."""
    if isinstance(out, list):
        return ""
    if isinstance(out, dict):
        for k, v in out.items():
            if isinstance(v, list) and v and isinstance(v[0], dict) and "." not in k:
                return k
    return None

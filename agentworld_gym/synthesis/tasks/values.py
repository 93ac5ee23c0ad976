"""Seeded values for synthesis: fresh strings to write, schema-valid scalars, paths, seeds.

Every random choice in task synthesis draws from a :class:`random.Random` made by
:func:`rng_for` from the root seed and a purpose string, never from global state or from
``hash()`` (which changes between processes), so the same seed gives the same bytes.
"""

from __future__ import annotations

import hashlib
import random
from typing import Any

from agentworld_gym.verifiers.checks import _MISSING, get_path

__all__ = [
    "items_path",
    "MISSING",
    "fresh_text",
    "get_path",
    "join",
    "new_value",
    "rng_for",
    "schema_type",
    "simple",
    "typed",
]

MISSING = _MISSING
_ADJ = (
    "amber",
    "brisk",
    "cobalt",
    "dusky",
    "ember",
    "frosted",
    "golden",
    "hidden",
    "ivory",
    "jade",
    "lunar",
    "mellow",
    "north",
    "opal",
    "quiet",
    "rapid",
    "silver",
    "tidal",
    "umber",
    "velvet",
    "willow",
    "young",
    "zephyr",
    "coral",
    "misty",
)
_NOUN = (
    "harbor",
    "falcon",
    "meadow",
    "summit",
    "beacon",
    "canyon",
    "delta",
    "ember",
    "forest",
    "garden",
    "horizon",
    "island",
    "lagoon",
    "mesa",
    "orchard",
    "prairie",
    "quarry",
    "river",
    "signal",
    "timber",
    "valley",
    "window",
    "atlas",
    "comet",
    "pillar",
)


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


def fresh_text(rng: random.Random, field: str = "") -> str:
    """A short phrase no seed record has (``"cobalt harbor 417"``), shaped by the field name."""
    a, n, k = rng.choice(_ADJ), rng.choice(_NOUN), rng.randint(100, 999)
    low = field.lower()
    if "email" in low:
        return f"{a}.{n}{k}@example.com"
    if "url" in low or "uri" in low or "link" in low:
        return f"https://example.com/{a}-{n}-{k}"
    if "phone" in low:
        return f"+1-555-{k:03d}-{rng.randint(1000, 9999)}"
    return f"{a.capitalize()} {n} {k}"


def new_value(
    schema: dict[str, Any],
    field: str,
    current: Any,
    rng: random.Random,
    known: list[Any] | None = None,
) -> Any:
    """A schema-valid value different from ``current`` (``MISSING`` when none fits).

    ``known`` values (a categorical field's values in the seed data) are preferred, so that
    writes look like the data; strings otherwise come from :func:`fresh_text`.
    """
    t = schema_type(schema)
    enum = [v for v in schema.get("enum", []) if v is not None and v != current]
    if schema.get("enum"):
        return rng.choice(enum) if enum else MISSING
    if t == "boolean":
        return (not current) if isinstance(current, bool) else rng.choice([True, False])
    if t == "integer":
        lo, hi = int(schema.get("minimum", 1)), int(schema.get("maximum", 500))
        if hi < lo:
            return MISSING
        for _ in range(5):
            v = rng.randint(lo, max(lo, min(hi, lo + 500)))
            if v != current:
                return v
        return MISSING
    if t == "number":
        lo = float(schema.get("minimum", 1))
        return round(lo + rng.uniform(1, 500), 2)
    if t == "string":
        fmt = schema.get("format", "")
        if fmt == "date":
            return f"2026-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}"
        if fmt == "date-time":
            return f"2026-{rng.randint(9, 12):02d}-{rng.randint(1, 28):02d}T12:00:00Z"
        if fmt in ("uuid", "binary", "byte") or schema.get("pattern"):
            return MISSING
        options = [v for v in known or [] if isinstance(v, str) and v != current]
        if options and rng.random() < 0.7:
            return rng.choice(options)
        value = fresh_text(rng, field)
        if fmt == "email":
            value = fresh_text(rng, "email")
        elif fmt in ("uri", "url"):
            value = fresh_text(rng, "url")
        lo, hi = int(schema.get("minLength", 0)), int(schema.get("maxLength", 1000))
        return value if lo <= len(value) <= hi else MISSING
    return MISSING


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

"""Realistic, schema-valid values for seed records, examples and task arguments.

Values come from the JSON Schema first (enums, formats, bounds, required fields) and from the
field's name second (``email``, ``city``, ``createdAt``, ``price``…), drawn from Faker with
one seed per environment so the catalog is reproducible. Records are kept small on purpose:
objects carry their required fields and a few optional ones, arrays one or two items, and
nesting stops at :data:`MAX_DEPTH` — the catalog is committed, and a short record reads better
in an agent's context too.
"""

from __future__ import annotations

import random
import uuid
from typing import Any

from agentworld_gym.synthesis.fields import FieldValues, fit

MAX_DEPTH = 3
MAX_OPTIONAL = 8
"""Optional properties kept per generated object (required ones are always present)."""


def schema_type(schema: dict[str, Any]) -> str | None:
    """The non-null JSON type of a schema (``["string", "null"]`` -> ``"string"``)."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), None)
    if kind is None:
        if "properties" in schema:
            return "object"
        if "items" in schema:
            return "array"
    return kind


class Generator:
    """Seeded value generator; one per environment (``seed`` fixes every value)."""

    def __init__(self, seed: int, faker: Any = None) -> None:
        if faker is None:
            from faker import Faker

            faker = Faker("en_US")
        self.fake = faker
        self.fake.seed_instance(seed)
        self.rng = random.Random(seed)
        self.domains = [self.fake.domain_name() for _ in range(6)]
        """A few hosts per environment: URLs and emails of one service share them, and
        drawing from a pool is much cheaper than Faker's URL templates."""
        self.values = FieldValues(self.rng, self.domains)
        """The one field-aware mechanism (names, amounts, dates, URLs...) behind strings."""

    # -- scalars --------------------------------------------------------------------------
    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def datetime(self) -> str:
        return self.values.datetime()

    def word(self) -> str:
        return self.fake.word()

    def _string(self, name: str, schema: dict[str, Any], noun: str) -> str:
        """The field-aware value (:class:`FieldValues`), shared with task writes and reseed."""
        return self.values.string(name, schema, noun)

    def _number(self, name: str, schema: dict[str, Any], integer: bool) -> int | float:
        return self.values.number(name, schema, integer)

    # -- any schema -----------------------------------------------------------------------
    def value(self, schema: dict[str, Any], name: str = "", noun: str = "", depth: int = 0):
        """A value valid for ``schema``; ``name`` (the field) and ``noun`` steer realism."""
        if not isinstance(schema, dict):
            return self.word()
        enum = schema.get("enum")
        if enum:
            options = [v for v in enum if v is not None] or enum
            return self.rng.choice(options)
        kind = schema_type(schema)
        if kind == "object":
            return self.object(schema, noun, depth)
        if kind == "array":
            item = schema.get("items") or {"type": "string"}
            lo = int(schema.get("minItems", 0) or 0)
            hi = int(schema.get("maxItems", 2) or 2)
            n = lo if depth >= MAX_DEPTH else self.rng.randint(lo, max(lo, min(hi, 2)))
            n = max(n, 1) if depth < MAX_DEPTH and lo <= 1 <= hi else n
            return [self.value(item, singular_of(name), noun, depth + 1) for _ in range(n)]
        if kind == "integer":
            return int(self._number(name, schema, True))
        if kind == "number":
            return self._number(name, schema, False)
        if kind == "boolean":
            return self.rng.random() < 0.5
        return self.fit(self._string(name, schema, noun), schema)

    def fit(self, text: str, schema: dict[str, Any]) -> str:
        """``text`` cut or padded (with hex digits, like an id) to the schema's length bounds."""
        return fit(text, schema, self.rng)

    def object(
        self, schema: dict[str, Any], noun: str = "", depth: int = 0, keep: tuple[str, ...] = ()
    ) -> dict[str, Any]:
        """An object with the required properties, ``keep`` ones, and a few optional ones."""
        props = schema.get("properties") or {}
        if not props:
            return {}
        required = set(schema.get("required", [])) | set(keep)
        optional = [k for k in props if k not in required]
        budget = MAX_OPTIONAL if depth == 0 else 3 if depth < MAX_DEPTH else 0
        chosen = required | set(optional[:budget])
        return {k: self.value(v, k, noun, depth + 1) for k, v in props.items() if k in chosen}


def singular_of(name: str) -> str:
    return name[:-1] if name.endswith("s") and len(name) > 3 else name


def coerce(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` converted to the schema's scalar type when it is not (an id 7 -> ``"7"``)."""
    kind = schema_type(schema) if isinstance(schema, dict) else None
    if kind == "array" and not isinstance(value, list):
        return [coerce(value, schema.get("items") or {})]
    if kind == "string" and not isinstance(value, str):
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)
    if kind == "integer" and isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if kind == "number" and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def fits(value: Any, schema: dict[str, Any]) -> bool:
    """Whether a scalar ``value`` has the schema's type (objects and arrays: not checked)."""
    kind = schema_type(schema) if isinstance(schema, dict) else None
    checks = {
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
    }
    return kind not in checks or checks[kind](value)

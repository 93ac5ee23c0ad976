"""Realistic, schema-valid values for seed records, examples and task arguments.

Values come from the JSON Schema first (enums, formats, bounds, required fields) and from the
field's name second (``email``, ``city``, ``createdAt``, ``price``…), drawn from Faker with
one seed per environment so the catalog is reproducible. Records are kept small on purpose:
objects carry their required fields and a few optional ones, arrays one or two items, and
nesting stops at :data:`MAX_DEPTH` — the catalog is committed, and a short record reads better
in an agent's context too.
"""

from __future__ import annotations

import datetime as dt
import random
import re
import uuid
from typing import Any

MAX_DEPTH = 3
MAX_OPTIONAL = 8
"""Optional properties kept per generated object (required ones are always present)."""

_PERSON = frozenset(
    "user users customer contact member employee person people author owner patient driver "
    "player agent candidate student teacher account subscriber recipient sender".split()
)
_EPOCH = dt.datetime(2023, 1, 1, tzinfo=dt.UTC)


def _fold(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


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

    # -- scalars --------------------------------------------------------------------------
    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def datetime(self) -> str:
        moment = _EPOCH + dt.timedelta(seconds=self.rng.randrange(3 * 365 * 86400))
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")

    def word(self) -> str:
        return self.fake.word()

    def _string(self, name: str, schema: dict[str, Any], noun: str) -> str:
        fmt = schema.get("format")
        key = _fold(name)
        if fmt == "date-time":
            return self.datetime()
        if fmt == "date":
            return self.datetime()[:10]
        if fmt == "email" or "email" in key:
            return f"{self.fake.user_name()}@{self.rng.choice(self.domains)}"
        if fmt == "uuid" or key in ("uuid", "guid"):
            return self.uuid()
        if fmt == "uri" or key.endswith(("url", "uri", "link", "href", "website")):
            return f"https://{self.rng.choice(self.domains)}/{self.word()}/{self.word()}"
        if fmt == "hostname" or key.endswith(("hostname", "domain", "host")):
            return self.rng.choice(self.domains)
        if fmt == "ipv4" or key.endswith(("ip", "ipaddress")):
            return self.fake.ipv4()
        if fmt == "ipv6":
            return self.fake.ipv6()
        return self._named_string(key, noun)

    def _named_string(self, key: str, noun: str) -> str:
        f = self.fake
        if key in ("firstname", "givenname"):
            return f.first_name()
        if key in ("lastname", "surname", "familyname"):
            return f.last_name()
        if key in ("username", "login", "handle", "screenname", "nickname"):
            return f.user_name()
        if key in ("name", "fullname", "displayname"):
            if noun in _PERSON or key == "fullname":
                return f.name()
            return f"{f.word().capitalize()} {f.word()}-{self.rng.randrange(100, 999)}"
        if key.endswith(("title", "subject", "headline", "label")):
            return f.sentence(nb_words=4).rstrip(".")
        if key.endswith(("phone", "phonenumber", "mobile", "fax", "msisdn")):
            return f.numerify("+1##########")
        if key.endswith("city"):
            return f.city()
        if key.endswith(("countrycode", "country")):
            return f.country_code() if key.endswith("code") or len(key) < 8 else f.country()
        if key.endswith(("street", "address", "addressline1", "line1")):
            return f.street_address()
        if key.endswith(("zip", "zipcode", "postalcode", "postcode")):
            return f.postcode()
        if key.endswith(("state", "region", "province")) and "status" not in key:
            return f.state()
        if key.endswith(
            (
                "description",
                "summary",
                "notes",
                "note",
                "comment",
                "text",
                "body",
                "message",
                "content",
                "bio",
                "about",
            )
        ):
            return f.sentence(nb_words=8)
        if key.endswith(("currency", "currencycode")):
            return f.currency_code()
        if key.endswith(("color", "colour")):
            return f.safe_color_name()
        if key.endswith(("language", "locale", "lang")):
            return self.rng.choice(["en", "en-US", "fr", "de", "es", "ja"])
        if key.endswith(("timezone", "tz")):
            return f.timezone()
        if key.endswith(("company", "organization", "organisation", "employer", "brand")):
            return f.company()
        if key.endswith(
            (
                "createdat",
                "updatedat",
                "created",
                "updated",
                "modified",
                "timestamp",
                "time",
                "date",
                "datetime",
                "createtime",
                "updatetime",
            )
        ):
            return self.datetime()
        if key.endswith(("status", "state")):
            return self.rng.choice(["active", "inactive", "pending"])
        if key.endswith(("id", "key", "sid", "arn", "token", "ref")):
            return f"{key[:3] or 'id'}_{self.rng.getrandbits(40):010x}"
        if key.endswith(("code", "sku", "symbol")):
            return f.bothify("??-####").upper()
        if key.endswith("version"):
            r = self.rng.randrange
            return f"{r(1, 5)}.{r(0, 10)}.{r(10)}"
        if key.endswith(("type", "kind", "category", "tag", "tags", "group")):
            return f.word()
        return f"{f.word()} {f.word()}"

    def _number(self, name: str, schema: dict[str, Any], integer: bool) -> int | float:
        key = _fold(name)
        lo, hi = 1, 1000
        if key.endswith(("year",)):
            lo, hi = 2000, 2026
        elif key.endswith(("age",)):
            lo, hi = 18, 90
        elif key.endswith(("latitude", "lat")):
            lo, hi = -60, 60
        elif key.endswith(("longitude", "lng", "lon", "long")):
            lo, hi = -150, 150
        elif key.endswith(("count", "quantity", "qty", "number", "num", "size", "total")):
            lo, hi = 0, 100
        lo = schema.get("minimum", lo) if isinstance(schema.get("minimum"), int | float) else lo
        hi = schema.get("maximum", hi) if isinstance(schema.get("maximum"), int | float) else hi
        if "minimum" in schema and "maximum" not in schema:
            hi = max(hi, lo + 1000)
        if hi < lo:
            hi = lo
        if integer:
            return self.rng.randint(int(-(-lo // 1)), max(int(-(-lo // 1)), int(hi // 1)))
        return round(self.rng.uniform(lo, hi), 2)

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
        lo, hi = schema.get("minLength"), schema.get("maxLength")
        if isinstance(hi, int) and len(text) > hi:
            text = text[: max(hi, 0)]
        if isinstance(lo, int) and len(text) < lo:
            text += "".join(self.rng.choice("0123456789abcdef") for _ in range(lo - len(text)))
        return text

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

"""Database property schemas and page property values: validation, storage and property items.

A database stores its schema under ``properties`` (``{name: {"id", "name", "type", <type>:
{...}}}``); each of its pages stores one value per property (``{"id", "type", <type>: value}``).
Writes arrive in the request shape (``{"Status": {"status": {"name": "Done"}}}``) and are checked
against the schema the way Notion checks them: unknown names and wrong types are 400
``validation_error``s with Notion's messages; unknown select options are created, unknown status
options are rejected.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import re
from typing import Any

from agentworld_gym.database import Database, copy_record
from agentworld_gym.domains.notion.objects import (
    js,
    normalize_id,
    plain,
    rich_text_from_request,
    validation_error,
)

SUPPORTED_TYPES = (
    "title",
    "rich_text",
    "number",
    "select",
    "status",
    "multi_select",
    "date",
    "people",
    "checkbox",
    "relation",
    "url",
)
PAGINATED_TYPES = ("title", "rich_text", "people", "relation")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?$")


@functools.lru_cache(maxsize=1 << 14)  # pure; a cold SHA-256 costs ~30 µs (see new_id)
def property_id(database_key: str, name: str) -> str:
    """A short, stable, Notion-looking property id (``title`` for the title property)."""
    digest = hashlib.sha256(f"{database_key}/{name}".encode()).hexdigest()
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(alphabet[int(digest[i : i + 2], 16) % len(alphabet)] for i in range(0, 8, 2))


@functools.lru_cache(maxsize=1 << 14)  # pure, as property_id
def option_id(database_key: str, prop: str, name: str) -> str:
    digest = hashlib.sha256(f"{database_key}/{prop}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def resolve(schema: dict[str, Any], key: str) -> tuple[str, dict[str, Any]] | None:
    """Find a property by name or by id, as Notion accepts either."""
    if key in schema:
        return key, schema[key]
    for name, prop in schema.items():
        if prop.get("id") == key:
            return name, prop
    return None


def empty_value(prop: dict[str, Any]) -> dict[str, Any]:
    """The value a page holds for a property nobody has set."""
    kind = prop["type"]
    value: Any = {
        "title": [],
        "rich_text": [],
        "multi_select": [],
        "people": [],
        "relation": [],
        "checkbox": False,
    }.get(kind)
    out = {"id": prop["id"], "type": kind, kind: value}
    if kind == "relation":
        out["has_more"] = False
    return out


def default_status(prop: dict[str, Any]) -> dict[str, Any] | None:
    """New pages start in the first option of the "To-do" group, as in Notion."""
    options = prop["status"]["options"]
    groups = prop["status"].get("groups") or []
    first = groups[0]["option_ids"][0] if groups and groups[0]["option_ids"] else None
    for opt in options:
        if first is None or opt["id"] == first:
            return {"id": opt["id"], "name": opt["name"], "color": opt["color"]}
    return None


def is_empty(value: dict[str, Any] | None) -> bool:
    if value is None:
        return True
    inner = value.get(value.get("type", ""))
    return inner is None or inner == [] or inner == ""


def person(db: Database, user_id: Any, where: str) -> dict[str, Any]:
    uid = normalize_id(user_id, where)
    user = db.get("users", uid)
    if user is None:
        raise validation_error(f"Could not find user with ID: {uid}.")
    return {k: v for k, v in user.items() if not k.startswith("_")}


def check_date(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _DATE.match(value):
        raise validation_error(
            f"body failed validation: {where} should be a valid ISO 8601 date string, instead "
            f'was `"{value}"`.'
        )
    return value


class ValueWriter:
    """Build stored property values for pages of one database, adding select options."""

    def __init__(self, db: Database, database: dict[str, Any] | None) -> None:
        self.db = db
        self.database = database
        """The stored database (read-only): copied only when a new option is added."""
        self.changed: dict[str, Any] | None = None
        """The database's updated copy, once a write added an option to its schema."""

    @property
    def schema_changed(self) -> bool:
        return self.changed is not None

    def build(self, name: str, prop: dict[str, Any], raw: Any) -> dict[str, Any]:
        kind = prop["type"]
        where = f"body.properties.{name}"
        if kind in ("title", "rich_text") and isinstance(raw, list):
            raw = {kind: raw}
        if not isinstance(raw, dict) or kind not in raw:
            raise validation_error(f"{name} is expected to be {kind}.")
        given = raw.get("type")
        if given is not None and given != kind:
            raise validation_error(f"{name} is expected to be {kind}.")
        value = raw[kind]
        builder = getattr(self, f"_{kind}", None)
        if builder is None:
            raise validation_error(f"{name} is a {kind} property, which cannot be edited.")
        out = {"id": prop["id"], "type": kind, kind: builder(name, prop, value, f"{where}.{kind}")}
        if kind == "relation":
            out["has_more"] = False
        return out

    # one builder per property type -------------------------------------------------
    def _title(self, name, prop, value, where):
        return rich_text_from_request(value, where)

    _rich_text = _title

    def _number(self, name, prop, value, where):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise validation_error(
                f"body failed validation: {where} should be a number or `null`, instead was "
                f"`{js(value)}`."
            )
        return value

    def _checkbox(self, name, prop, value, where):
        if not isinstance(value, bool):
            raise validation_error(
                f"body failed validation: {where} should be a boolean, instead was `{js(value)}`."
            )
        return value

    def _url(self, name, prop, value, where):
        if value is not None and not isinstance(value, str):
            raise validation_error(f"body failed validation: {where} should be a string.")
        return value or None

    def _select(self, name, prop, value, where):
        if value is None:
            return None
        return self._option(name, prop, value, where, create=prop["type"] != "status")

    _status = _select

    def _multi_select(self, name, prop, value, where):
        if not isinstance(value, list):
            raise validation_error(
                f"body failed validation: {where} should be an array, instead was `{js(value)}`."
            )
        seen: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(value):
            option = self._option(name, prop, item, f"{where}[{i}]", create=True)
            seen.setdefault(option["id"], option)
        return list(seen.values())

    def _date(self, name, prop, value, where):
        if value is None:
            return None
        if not isinstance(value, dict) or "start" not in value:
            raise validation_error(
                f"body failed validation: {where}.start should be defined, instead was `undefined`."
            )
        start = check_date(value["start"], f"{where}.start")
        end = value.get("end")
        if end is not None:
            check_date(end, f"{where}.end")
        return {"start": start, "end": end, "time_zone": value.get("time_zone")}

    def _people(self, name, prop, value, where):
        if not isinstance(value, list):
            raise validation_error(
                f"body failed validation: {where} should be an array, instead was `{js(value)}`."
            )
        out: dict[str, dict[str, Any]] = {}
        for i, item in enumerate(value):
            if not isinstance(item, dict) or "id" not in item:
                raise validation_error(
                    f"body failed validation: {where}[{i}].id should be defined, instead was "
                    "`undefined`."
                )
            user = person(self.db, item["id"], f"{where}[{i}].id")
            out.setdefault(user["id"], user)
        return list(out.values())

    def _relation(self, name, prop, value, where):
        if not isinstance(value, list):
            raise validation_error(
                f"body failed validation: {where} should be an array, instead was `{js(value)}`."
            )
        target = prop["relation"]["database_id"]
        out: list[dict[str, str]] = []
        for i, item in enumerate(value):
            if not isinstance(item, dict) or "id" not in item:
                raise validation_error(
                    f"body failed validation: {where}[{i}].id should be defined, instead was "
                    "`undefined`."
                )
            pid = normalize_id(item["id"], f"{where}[{i}].id")
            page = self.db.get("pages", pid)
            if page is None or page.get("parent", {}).get("database_id") != target:
                raise validation_error(
                    f"Relation property {name} can only link pages of database {target}; "
                    f"{pid} is not one of them."
                )
            if {"id": pid} not in out:
                out.append({"id": pid})
        return out

    def _option(self, name, prop, value, where, *, create: bool) -> dict[str, Any]:
        kind = prop["type"]
        if not isinstance(value, dict) or not ({"name", "id"} & set(value)):
            raise validation_error(
                f"body failed validation: {where}.name should be defined, instead was `undefined`."
            )
        if self.changed is not None:  # options added earlier in this write count
            prop = self.changed["properties"][name]
        options = prop[kind]["options"]
        for opt in options:
            if ("id" in value and opt["id"] == value["id"]) or opt["name"] == value.get("name"):
                return {"id": opt["id"], "name": opt["name"], "color": opt["color"]}
        if not create or "name" not in value:
            label = value.get("name", value.get("id"))
            raise validation_error(
                f'Invalid {kind} option. {kind.capitalize()} option "{label}" does not exist '
                f"for property {name}."
            )
        label = str(value["name"])
        if "," in label:
            raise validation_error(f"Invalid {kind} option, commas not allowed: {label}")
        db_key = self.database["id"] if self.database else ""
        new = {
            "id": option_id(db_key, name, label),
            "name": label,
            "color": "default",
            "description": None,
        }
        if self.changed is None and self.database is not None:
            self.changed = copy_record(self.database)
            options = self.changed["properties"][name][kind]["options"]
        options.append(new)
        return {"id": new["id"], "name": new["name"], "color": new["color"]}


def property_item(prop_value: dict[str, Any]) -> dict[str, Any]:
    """The non-paginated property item of ``API-retrieve-a-page-property``."""
    kind = prop_value["type"]
    return {
        "object": "property_item",
        "id": prop_value["id"],
        "type": kind,
        kind: prop_value.get(kind),
    }


def property_items(prop_value: dict[str, Any]) -> list[dict[str, Any]]:
    """One property item per element of a paginated (title/rich_text/people/relation) value."""
    kind = prop_value["type"]
    return [
        {"object": "property_item", "id": prop_value["id"], "type": kind, kind: element}
        for element in prop_value.get(kind) or []
    ]


def sortable_text(value: dict[str, Any]) -> str:
    return plain(value.get(value["type"])).casefold()


def parse_when(text: str) -> tuple[dt.datetime, bool]:
    """``"2026-08-05"`` → (midnight UTC, date_only=True); datetimes keep their time.

    Memoised for text: a date filter parses every page's date on every query.
    """
    if type(text) is str:
        return _parse_when_text(text)
    return _parse_when(text)


def _parse_when(text: str) -> tuple[dt.datetime, bool]:
    if len(text) == 10:
        day = dt.date.fromisoformat(text)
        return dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC), True
    parsed = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return parsed.astimezone(dt.UTC), False


_parse_when_text = functools.lru_cache(maxsize=8192)(_parse_when)

"""Notion database-query filters and sorts, evaluated against stored page records.

A filter is a property filter (``{"property": "Status", "status": {"equals": "Done"}}``), a
timestamp filter (``{"timestamp": "created_time", "created_time": {"past_week": {}}}``) or a
compound ``{"and": [...]}`` / ``{"or": [...]}`` of those (nested freely). Relative date
conditions (``past_week``, ``next_month``, ``this_week``, ...) are relative to the episode's
pinned clock. Mistakes answer with Notion's 400 ``validation_error`` messages.
"""

from __future__ import annotations

import datetime as dt
import functools
import operator
from collections.abc import Callable
from typing import Any

from agentworld_gym.domains.notion.objects import js, plain, validation_error
from agentworld_gym.domains.notion.properties import is_empty, parse_when, resolve

Predicate = Callable[[dict[str, Any]], bool]

TEXT_TYPES = ("title", "rich_text", "url", "email", "phone_number")
CONDITIONS: dict[str, tuple[str, ...]] = {
    "text": (
        "equals",
        "does_not_equal",
        "contains",
        "does_not_contain",
        "starts_with",
        "ends_with",
        "is_empty",
        "is_not_empty",
    ),
    "number": (
        "equals",
        "does_not_equal",
        "greater_than",
        "less_than",
        "greater_than_or_equal_to",
        "less_than_or_equal_to",
        "is_empty",
        "is_not_empty",
    ),
    "checkbox": ("equals", "does_not_equal"),
    "select": ("equals", "does_not_equal", "is_empty", "is_not_empty"),
    "multi_select": ("contains", "does_not_contain", "is_empty", "is_not_empty"),
    "date": (
        "equals",
        "before",
        "after",
        "on_or_before",
        "on_or_after",
        "is_empty",
        "is_not_empty",
        "past_week",
        "past_month",
        "past_year",
        "next_week",
        "next_month",
        "next_year",
        "this_week",
    ),
    "people": ("contains", "does_not_contain", "is_empty", "is_not_empty"),
    "relation": ("contains", "does_not_contain", "is_empty", "is_not_empty"),
}
FAMILY = {
    **{t: "text" for t in TEXT_TYPES},
    "status": "select",
    "number": "number",
    "checkbox": "checkbox",
    "select": "select",
    "multi_select": "multi_select",
    "date": "date",
    "people": "people",
    "relation": "relation",
}
_VALUE_TYPES = {
    "text": str,
    "number": (int, float),
    "checkbox": bool,
    "select": str,
    "multi_select": str,
    "date": str,
    "people": str,
    "relation": str,
}


def compile_filter(
    flt: dict[str, Any], schema: dict[str, Any], now: dt.datetime, where: str = "body.filter"
) -> Predicate:
    """Turn a filter object into a predicate over page records (validating it fully first)."""
    if not isinstance(flt, dict) or not flt:
        raise validation_error(f"body failed validation: {where} should be a non-empty object.")
    for op in ("and", "or"):
        if op in flt:
            parts = flt[op]
            if len(flt) != 1 or not isinstance(parts, list):
                raise validation_error(
                    f"body failed validation: {where}.{op} should be an array of filters and "
                    "the only key of its object."
                )
            preds = [
                compile_filter(p, schema, now, f"{where}.{op}[{i}]") for i, p in enumerate(parts)
            ]
            return _all(preds) if op == "and" else _any(preds)
    if "timestamp" in flt:
        return _timestamp_filter(flt, now, where)
    if "property" not in flt:
        raise validation_error(
            f"body failed validation: {where}.property should be defined, instead was `undefined`."
        )
    found = resolve(schema, str(flt["property"]))
    if found is None:
        raise validation_error(f"Could not find property with name or id: {flt['property']}")
    name, prop = found
    kinds = [k for k in flt if k != "property"]
    if len(kinds) != 1:
        raise validation_error(
            f"body failed validation: {where} should have exactly one condition key next to "
            f"`property`, instead had {kinds or 'none'}."
        )
    kind = kinds[0]
    if kind != prop["type"] and not (kind in TEXT_TYPES and prop["type"] in TEXT_TYPES):
        raise validation_error(f"database property {prop['type']} does not match filter {kind}")
    family = FAMILY.get(prop["type"])
    if family is None:
        raise validation_error(f"Filtering on {prop['type']} properties is not supported.")
    cond, value = _condition(flt[kind], family, name, f"{where}.{kind}")
    return _TESTS[family](name, cond, value, now)


def _all(preds: list[Predicate]) -> Predicate:
    def test(page: dict[str, Any]) -> bool:
        for pred in preds:
            if not pred(page):
                return False
        return True

    return test


def _any(preds: list[Predicate]) -> Predicate:
    def test(page: dict[str, Any]) -> bool:
        for pred in preds:
            if pred(page):
                return True
        return False

    return test


def _condition(obj: Any, family: str, name: str, where: str) -> tuple[str, Any]:
    if not isinstance(obj, dict) or len(obj) != 1:
        raise validation_error(
            f"body failed validation: {where} should be an object with exactly one condition."
        )
    cond, value = next(iter(obj.items()))
    allowed = CONDITIONS[family]
    if cond not in allowed:
        raise validation_error(
            f"Invalid filter condition `{cond}` for property {name}. Valid conditions: "
            f"{', '.join(allowed)}."
        )
    if cond in ("is_empty", "is_not_empty"):
        if value is not True:
            raise validation_error(
                f"body failed validation: {where}.{cond} should be `true`, instead was "
                f"`{js(value)}`."
            )
    elif family == "date" and cond in CONDITIONS["date"][7:]:
        if value != {}:
            raise validation_error(
                f"body failed validation: {where}.{cond} should be an empty object `{{}}`."
            )
    else:
        expected = _VALUE_TYPES[family]
        bad = not isinstance(value, expected) or (family == "number" and isinstance(value, bool))
        if bad:
            label = {str: "a string", bool: "a boolean"}.get(expected, "a number")  # type: ignore[call-overload]
            raise validation_error(
                f"body failed validation: {where}.{cond} should be {label}, instead was "
                f"`{js(value)}`."
            )
        if family == "date":
            try:
                value = parse_when(value)
            except ValueError:
                raise validation_error(
                    f"body failed validation: {where}.{cond} should be a valid ISO 8601 date "
                    f'string, instead was `"{value}"`.'
                ) from None
    return cond, value


# -- per-family tests ------------------------------------------------------------------------
# ``_family(name, cond, arg, now)`` returns the predicate over pages for property ``name``,
# with what does not depend on the page (the case-folded needle, the dashed uuid, the
# comparison) worked out once per query, and the value read inline: a query runs it on every
# page of the database.


def _text(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    def text_of(page: dict[str, Any]) -> str:
        value = page.get("properties", {}).get(name)
        inner = value.get(value["type"]) if value else None
        return plain(inner) if isinstance(inner, list) else (inner or "")

    if cond == "is_empty":
        return lambda page: text_of(page) == ""
    if cond == "is_not_empty":
        return lambda page: text_of(page) != ""
    if cond == "equals":
        return lambda page: text_of(page) == arg
    if cond == "does_not_equal":
        return lambda page: text_of(page) != arg
    needle = arg.casefold()
    if cond == "contains":
        return lambda page: needle in text_of(page).casefold()
    if cond == "does_not_contain":
        return lambda page: needle not in text_of(page).casefold()
    if cond == "starts_with":
        return lambda page: text_of(page).casefold().startswith(needle)
    return lambda page: text_of(page).casefold().endswith(needle)  # ends_with


_COMPARE = {
    "equals": operator.eq,
    "does_not_equal": operator.ne,
    "greater_than": operator.gt,
    "less_than": operator.lt,
    "greater_than_or_equal_to": operator.ge,
    "less_than_or_equal_to": operator.le,
}


def _number(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    empty = cond == "is_empty"
    compare = _COMPARE.get(cond)
    missing = cond == "does_not_equal"

    def test(page: dict[str, Any]) -> bool:
        value = page.get("properties", {}).get(name)
        num = value.get("number") if value else None
        if compare is None:  # is_empty / is_not_empty
            return (num is None) == empty
        return missing if num is None else compare(num, arg)

    return test


def _checkbox(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    equals = cond == "equals"

    def test(page: dict[str, Any]) -> bool:
        value = page.get("properties", {}).get(name)
        return (bool(value and value.get("checkbox")) == arg) == equals

    return test


def _select(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    empty = cond == "is_empty"

    def test(page: dict[str, Any]) -> bool:
        value = page.get("properties", {}).get(name)
        option = value.get(value["type"]) if value else None
        found = option.get("name") if option else None
        if cond == "equals":
            return found == arg
        if cond == "does_not_equal":
            return found != arg
        return (found is None) == empty

    return test


def _members(name: str, key: str, field: str, cond: str, arg: Any) -> Predicate:
    """Tests of a list-valued property: ``value[key]`` is a list of objects with ``field``."""
    if cond in ("is_empty", "is_not_empty"):
        empty = cond == "is_empty"

        def test_empty(page: dict[str, Any]) -> bool:
            value = page.get("properties", {}).get(name)
            return (not ((value or {}).get(key) or [])) == empty

        return test_empty
    wanted = cond == "contains"

    def test(page: dict[str, Any]) -> bool:
        value = page.get("properties", {}).get(name)
        for item in (value or {}).get(key) or []:
            if arg == item.get(field):
                return wanted
        return not wanted

    return test


def _multi_select(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    return _members(name, "multi_select", "name", cond, arg)


def _people(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    return _members(name, "people", "id", cond, _uuid_like(arg))


def _relation(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    return _members(name, "relation", "id", cond, _uuid_like(arg))


def _uuid_like(arg: Any) -> Any:
    if not isinstance(arg, str):
        return arg
    compact = arg.replace("-", "").lower()
    if len(compact) == 32:
        return f"{compact[:8]}-{compact[8:12]}-{compact[12:16]}-{compact[16:20]}-{compact[20:]}"
    return arg


def _date(name: str, cond: str, arg: Any, now: dt.datetime) -> Predicate:
    tester = _date_tester(cond, arg, now)

    def test(page: dict[str, Any]) -> bool:
        value = page.get("properties", {}).get(name)
        date = (value or {}).get("date") if value and value.get("type") == "date" else None
        return tester(date.get("start") if date else None)

    return test


def date_test(start: str | None, cond: str, arg: Any, now: dt.datetime) -> bool:
    """Shared by date properties and timestamp filters; ``arg`` is ``(datetime, date_only)``."""
    return _date_tester(cond, arg, now)(start)


_DATE_COMPARE = {
    "equals": operator.eq,
    "before": operator.lt,
    "after": operator.gt,
    "on_or_before": operator.le,
    "on_or_after": operator.ge,
}
_RELATIVE = CONDITIONS["date"][7:]


def _date_tester(cond: str, arg: Any, now: dt.datetime) -> Callable[[str | None], bool]:
    """:func:`date_test` for one condition, with what does not depend on the page done once."""
    if cond in ("is_empty", "is_not_empty"):
        empty = cond == "is_empty"
        return lambda start: (start is None) == empty
    if cond in _RELATIVE:
        today = now.date()
        return lambda start: (
            start is not None and _relative(parse_when(start)[0].date(), cond, today)
        )
    target, date_only = arg
    target_day = target.date()
    compare = _DATE_COMPARE[cond]

    def test(start: str | None) -> bool:
        if start is None:
            return False
        when, when_date_only = parse_when(start)
        if date_only or when_date_only:
            return compare(when.date(), target_day)
        return compare(when, target)

    return test


def _relative(day: dt.date, cond: str, today: dt.date) -> bool:
    if cond == "this_week":
        monday = today - dt.timedelta(days=today.weekday())
        return monday <= day <= monday + dt.timedelta(days=6)
    span, direction = cond.split("_")[1], cond.split("_")[0]
    if span == "week":
        other = today + dt.timedelta(days=7 if direction == "next" else -7)
    else:
        months = 1 if span == "month" else 12
        other = _add_months(today, months if direction == "next" else -months)
    low, high = sorted((today, other))
    return low <= day <= high


def _add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    year, month = divmod(index, 12)
    for d in (day.day, 30, 29, 28):
        try:
            return dt.date(year, month + 1, d)
        except ValueError:
            continue
    raise AssertionError("unreachable")


_TESTS: dict[str, Callable[[str, str, Any, dt.datetime], Predicate]] = {
    "text": _text,
    "number": _number,
    "checkbox": _checkbox,
    "select": _select,
    "multi_select": _multi_select,
    "people": _people,
    "relation": _relation,
    "date": _date,
}


def _timestamp_filter(flt: dict[str, Any], now: dt.datetime, where: str) -> Predicate:
    stamp = flt["timestamp"]
    if stamp not in ("created_time", "last_edited_time") or stamp not in flt:
        raise validation_error(
            f'body failed validation: {where}.timestamp should be `"created_time"` or '
            f'`"last_edited_time"` with a matching condition object, instead was `{js(stamp)}`.'
        )
    cond, value = _condition(flt[stamp], "date", stamp, f"{where}.{stamp}")
    tester = _date_tester(cond, value, now)
    return lambda page: tester(page.get(stamp))


# -- sorts ---------------------------------------------------------------------------------
def sort_pages(
    pages: list[dict[str, Any]], sorts: list[dict[str, Any]], schema: dict[str, Any]
) -> list[dict[str, Any]]:
    """Order pages like Notion: each sort in turn, empty values last in either direction."""
    keys: list[tuple[Callable[[dict[str, Any]], Any], bool]] = []
    for i, sort in enumerate(sorts):
        descending = sort.get("direction") == "descending"
        if "timestamp" in sort:
            stamp = sort["timestamp"]
            if stamp not in ("created_time", "last_edited_time"):
                raise validation_error(
                    f"body failed validation: body.sorts[{i}].timestamp should be "
                    f'`"created_time"` or `"last_edited_time"`, instead was `"{stamp}"`.'
                )
            keys.append((lambda p, s=stamp: p.get(s), descending))
            continue
        found = resolve(schema, str(sort.get("property")))
        if found is None:
            raise validation_error(
                f"Could not find sort property with name or id: {sort.get('property')}"
            )
        keys.append((_sort_key(*found), descending))

    def compare(a: dict[str, Any], b: dict[str, Any]) -> int:
        for key, descending in keys:
            ka, kb = key(a), key(b)
            if ka == kb:
                continue
            if ka is None or kb is None:
                return 1 if ka is None else -1
            result = -1 if ka < kb else 1
            return -result if descending else result
        return 0

    return sorted(pages, key=functools.cmp_to_key(compare))


def _sort_key(name: str, prop: dict[str, Any]) -> Callable[[dict[str, Any]], Any]:
    kind = prop["type"]

    def key(page: dict[str, Any]) -> Any:
        value = page.get("properties", {}).get(name)
        if is_empty(value) and kind != "checkbox":
            return None
        inner = value[kind] if value else None
        if kind in ("title", "rich_text"):
            return plain(inner).casefold()
        if kind in ("select", "status"):
            names = [o["name"] for o in prop[kind]["options"]]
            return names.index(inner["name"]) if inner["name"] in names else len(names)
        if kind == "multi_select":
            names = [o["name"] for o in prop[kind]["options"]]
            return tuple(names.index(o["name"]) for o in inner if o["name"] in names)
        if kind == "date":
            return parse_when(inner["start"])[0]
        if kind == "people":
            return (inner[0].get("name") or "").casefold()
        if kind == "relation":
            return len(inner)
        if kind == "checkbox":
            return bool(inner)
        return inner

    return key

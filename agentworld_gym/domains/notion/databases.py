"""Database tools: query (filters, sorts, cursors), retrieve, create and update schemas."""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

import orjson

from agentworld_gym.domains.notion.blocks import insert_children, mark_edited
from agentworld_gym.domains.notion.filters import compile_filter, sort_pages
from agentworld_gym.domains.notion.objects import (
    answer_key,
    archived_error,
    bot_user,
    database_title,
    find_database,
    find_page,
    initial_answer,
    minute_iso,
    normalize_id,
    notion_url,
    paginate,
    public,
    public_listing,
    public_record,
    rich_text_from_request,
    touch,
    user_ref,
    validation_error,
)
from agentworld_gym.domains.notion.properties import (
    SUPPORTED_TYPES,
    empty_value,
    option_id,
    property_id,
    resolve,
)
from agentworld_gym.tools import Encoded, ToolContext

STATUS_DEFAULT = (
    ("Not started", "default", "To-do"),
    ("In progress", "blue", "In progress"),
    ("Done", "green", "Complete"),
)


def post_database_query(
    ctx: ToolContext,
    database_id: str,
    filter_properties: list[str] | None = None,
    filter: dict[str, Any] | None = None,
    sorts: list[dict[str, Any]] | None = None,
    start_cursor: str | None = None,
    page_size: int | None = None,
    archived: bool | None = None,
    in_trash: bool | None = None,
) -> Encoded | dict[str, Any]:
    args = (database_id, filter_properties, filter, sorts, start_cursor, page_size)
    trashed = bool(archived or in_trash)
    # a filter may hold relative dates: the answer is kept per day (the stamp's date part)
    key = answer_key(*args, trashed, minute_iso(ctx)[:10] if filter else None)
    return initial_answer(
        ctx, "query", key, ("pages", "databases"), lambda: _query(ctx, *args, trashed)
    )


def _query(
    ctx: ToolContext,
    database_id: str,
    filter_properties: list[str] | None,
    filter: dict[str, Any] | None,
    sorts: list[dict[str, Any]] | None,
    start_cursor: str | None,
    page_size: int | None,
    trashed: bool,
) -> Encoded | dict[str, Any]:
    dbid = normalize_id(database_id, "path.database_id")
    database = find_database(ctx.db, dbid)
    schema = database["properties"]
    pages = ctx.db.where("pages", "database_and_trash", _database_and_trash, (dbid, trashed))
    if filter:
        pages = _filtered(ctx, database, filter, pages, trashed)
    pages.sort(key=itemgetter("id"))  # ids are unique: with the next sort, a total order
    pages.sort(key=itemgetter("created_time"), reverse=True)
    if sorts:
        pages = sort_pages(pages, sorts, schema)
    listing = paginate(pages, start_cursor, page_size, kind="page_or_database")
    wanted = set(filter_properties or [])
    if not wanted:
        return public_listing(ctx.db, listing, "pages")
    out = []
    for page in listing["results"]:  # only the page of results returned is made public
        item = public(page)
        item["properties"] = {
            n: v for n, v in item["properties"].items() if n in wanted or v["id"] in wanted
        }
        out.append(item)
    listing["results"] = out
    return listing


def _filtered(
    ctx: ToolContext,
    database: dict[str, Any],
    flt: dict[str, Any],
    pages: list[dict[str, Any]],
    trashed: bool,
) -> list[dict[str, Any]]:
    """The pages ``flt`` keeps, remembering what does not change.

    A filter's verdict depends only on the filter, the database's schema, the page and the
    clock's date (relative date conditions). For a database of the shared initial state the
    compiled filter and its verdicts are kept per (database, trash, filter, date) and reused
    by every episode (group rollouts of a task repeat their queries): the whole answer while
    the episode has changed no page, the verdict of each unchanged page otherwise. A page or
    a schema the episode changed is judged afresh; a filter is validated when first seen.
    """
    now = ctx.now()
    memo = _filter_memo(ctx, database, flt, now, trashed)
    if memo is None:
        predicate = compile_filter(flt, database["properties"], now)
        return [p for p in pages if predicate(p)]
    if not ctx.db.has_changes("pages"):
        if memo.untouched is None:
            memo.untouched = [p for p in pages if memo.predicate(p)]
        return list(memo.untouched)
    verdicts, predicate, kept = memo.verdicts, memo.predicate, []
    for page in pages:
        key = page["id"]
        hit = verdicts.get(key)
        if hit is not None and hit[0] is page:
            ok = hit[1]
        else:
            ok = predicate(page)
            if ctx.db.initial("pages", key) is page:
                verdicts[key] = (page, ok)
        if ok:
            kept.append(page)
    return kept


class _FilterMemo:
    """One filter on one database of the initial state: compiled once, with its verdicts."""

    __slots__ = ("predicate", "verdicts", "untouched")

    def __init__(self, predicate: Callable[[dict[str, Any]], bool]) -> None:
        self.predicate = predicate
        self.verdicts: dict[str, tuple[dict[str, Any], bool]] = {}
        self.untouched: list[dict[str, Any]] | None = None


_MAX_FILTERS = 1024
"""Distinct (database, trash, filter, date) memos kept per initial state."""


def _filter_memo(
    ctx: ToolContext, database: dict[str, Any], flt: dict[str, Any], now: Any, trashed: bool
) -> _FilterMemo | None:
    """The memo of this filter, or ``None`` when the schema changed in this episode."""
    if ctx.db.initial("databases", database["id"]) is not database:
        return None
    try:
        text = orjson.dumps(flt)
    except TypeError:
        return None
    memos = ctx.db.memo("notion:filter_memos", _new_memos)
    key = (database["id"], trashed, text, now.date())
    memo = memos.get(key)
    if memo is None:
        predicate = compile_filter(flt, database["properties"], now)  # raises if invalid
        if len(memos) >= _MAX_FILTERS:
            memos.clear()
        memo = memos[key] = _FilterMemo(predicate)
    return memo


def _new_memos(_: Any) -> dict[tuple[str, bool, bytes, Any], _FilterMemo]:
    return {}


def _database_of(page: dict[str, Any]) -> Any:
    return page.get("parent", {}).get("database_id")


def _database_and_trash(page: dict[str, Any]) -> tuple[Any, bool]:
    """A page's database and whether it is in the trash: what a query selects by."""
    return page.get("parent", {}).get("database_id"), bool(
        page.get("archived") or page.get("in_trash")
    )


def retrieve_a_database(ctx: ToolContext, database_id: str) -> Encoded | dict[str, Any]:
    database = find_database(ctx.db, normalize_id(database_id, "path.database_id"))
    return public_record(ctx.db, "databases", database)


# -- schemas -------------------------------------------------------------------------------
def property_schema(ctx: ToolContext, db_key: str, name: str, spec: Any) -> dict[str, Any]:
    """A property schema request (``{"select": {"options": [...]}}``) → stored schema."""
    where = f"body.properties.{name}"
    if not isinstance(spec, dict):
        raise validation_error(f"body failed validation: {where} should be an object.")
    kinds = [k for k in spec if k in SUPPORTED_TYPES]
    if len(kinds) != 1:
        raise validation_error(
            f"body failed validation: {where} should define exactly one property type "
            f"({', '.join(SUPPORTED_TYPES)})."
        )
    kind = kinds[0]
    config = spec[kind] if isinstance(spec[kind], dict) else {}
    pid = "title" if kind == "title" else property_id(db_key, name)
    body: dict[str, Any] = {}
    if kind == "number":
        body = {"format": str(config.get("format", "number"))}
    elif kind in ("select", "multi_select"):
        body = {"options": _options(db_key, name, config.get("options", []), where)}
    elif kind == "status":
        opts = [
            {"id": option_id(db_key, name, n), "name": n, "color": c, "description": None}
            for n, c, _ in STATUS_DEFAULT
        ]
        body = {
            "options": opts,
            "groups": [
                {
                    "id": option_id(db_key, name, f"group:{g}"),
                    "name": g,
                    "color": c,
                    "option_ids": [o["id"]],
                }
                for o, (_, c, g) in zip(opts, STATUS_DEFAULT, strict=True)
            ],
        }
    elif kind == "relation":
        target = normalize_id(config.get("database_id"), f"{where}.relation.database_id")
        find_database(ctx.db, target)
        body = {"database_id": target, "type": "single_property", "single_property": {}}
    return {"id": pid, "name": name, "type": kind, kind: body}


def _options(db_key: str, prop: str, options: Any, where: str) -> list[dict[str, Any]]:
    if not isinstance(options, list):
        raise validation_error(f"body failed validation: {where}.options should be an array.")
    out = []
    for opt in options:
        if not isinstance(opt, dict) or not isinstance(opt.get("name"), str):
            raise validation_error(
                f"body failed validation: {where}.options[].name should be a string."
            )
        out.append(
            {
                "id": option_id(db_key, prop, opt["name"]),
                "name": opt["name"],
                "color": str(opt.get("color", "default")),
                "description": None,
            }
        )
    return out


def create_a_database(
    ctx: ToolContext,
    parent: dict[str, Any],
    properties: dict[str, Any],
    title: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    ppid = normalize_id(parent.get("page_id"), "body.parent.page_id")
    holder = find_page(ctx.db, ppid)
    if holder.get("archived") or holder.get("in_trash"):
        raise archived_error()
    new_id = ctx.new_id()
    schema = {name: property_schema(ctx, new_id, name, spec) for name, spec in properties.items()}
    if sum(1 for p in schema.values() if p["type"] == "title") != 1:
        raise validation_error(
            "Title property is missing: a database needs exactly one property of type title."
        )
    bot = user_ref(bot_user(ctx.db)["id"])
    now = minute_iso(ctx)
    title_rt = rich_text_from_request(title or [], "body.title")
    database = {
        "object": "database",
        "id": new_id,
        "cover": None,
        "icon": None,
        "created_time": now,
        "created_by": bot,
        "last_edited_by": bot,
        "last_edited_time": now,
        "title": title_rt,
        "description": [],
        "is_inline": False,
        "properties": schema,
        "parent": {"type": "page_id", "page_id": ppid},
        "url": notion_url("", new_id),
        "public_url": None,
        "archived": False,
        "in_trash": False,
    }
    ctx.db.insert("databases", database)
    block = {
        "object": "block",
        "id": new_id,
        "parent": {"type": "page_id", "page_id": ppid},
        "created_time": now,
        "last_edited_time": now,
        "created_by": bot,
        "last_edited_by": bot,
        "has_children": False,
        "archived": False,
        "in_trash": False,
        "type": "child_database",
        "child_database": {"title": database_title(database)},
        "_seq": 0,
    }
    insert_children(ctx, ppid, [block], None)
    mark_edited(ctx, "page", holder)
    return public(database)


def update_a_database(
    ctx: ToolContext,
    database_id: str,
    title: list[dict[str, Any]] | None = None,
    description: list[dict[str, Any]] | None = None,
    properties: dict[str, Any] | None = None,
) -> Encoded | dict[str, Any]:
    dbid = normalize_id(database_id, "path.database_id")
    database = dict(find_database(ctx.db, dbid))  # copy-on-write: fields, schema map, options
    database["properties"] = dict(database["properties"])
    if database.get("archived") or database.get("in_trash"):
        raise archived_error()
    if title is not None:
        database["title"] = rich_text_from_request(title, "body.title")
    if description is not None:
        database["description"] = rich_text_from_request(description, "body.description")
    renames: dict[str, str] = {}
    removed: list[str] = []
    added: list[str] = []
    schema = database["properties"]
    for key, spec in (properties or {}).items():
        found = resolve(schema, key)
        if found is None:
            if spec is None:
                raise validation_error(f"{key} is not a property that exists.")
            schema[key] = property_schema(ctx, dbid, key, spec)
            added.append(key)
            continue
        name, prop = found
        if spec is None:
            if prop["type"] == "title":
                raise validation_error("Cannot delete the title property of a database.")
            del schema[name]
            removed.append(name)
            continue
        _update_property(ctx, dbid, schema, name, prop, spec, renames)
    touch(ctx, database)
    ctx.db.put("databases", database)
    if renames or removed or added:
        _migrate_pages(ctx, dbid, schema, renames, removed, added)
    block = ctx.db.get("blocks", dbid)
    if block is not None and title is not None:
        fixed = dict(block)
        fixed["child_database"] = {"title": database_title(database)}
        ctx.db.put("blocks", fixed)
    return public_record(ctx.db, "databases", database)


def _update_property(
    ctx: ToolContext,
    dbid: str,
    schema: dict[str, Any],
    name: str,
    prop: dict[str, Any],
    spec: Any,
    renames: dict[str, str],
) -> None:
    where = f"body.properties.{name}"
    if not isinstance(spec, dict):
        raise validation_error(f"body failed validation: {where} should be an object or null.")
    kinds = [k for k in spec if k in SUPPORTED_TYPES]
    if kinds and kinds[0] != prop["type"]:
        raise validation_error(
            f"Changing the type of property {name} from {prop['type']} to {kinds[0]} is not "
            "supported; add a new property instead."
        )
    if kinds and prop["type"] in ("select", "multi_select"):
        config = spec[kinds[0]] if isinstance(spec[kinds[0]], dict) else {}
        if "options" in config:
            kind = prop["type"]
            prop = schema[name] = {**prop, kind: dict(prop[kind])}  # a copy to change
            old = {o["name"]: o for o in prop[prop["type"]]["options"]}
            new = _options(dbid, name, config["options"], where)
            prop[prop["type"]]["options"] = [old.get(o["name"], o) for o in new]
    new_name = spec.get("name")
    if isinstance(new_name, str) and new_name != name:
        if new_name in schema:
            raise validation_error(f"A property named {new_name} already exists.")
        renamed = {**prop, "name": new_name}
        items = list(schema.items())
        schema.clear()
        schema.update(
            {(new_name if k == name else k): (renamed if k == name else v) for k, v in items}
        )
        renames[name] = new_name


def _migrate_pages(
    ctx: ToolContext,
    dbid: str,
    schema: dict[str, Any],
    renames: dict[str, str],
    removed: list[str],
    added: list[str],
) -> None:
    """Every page of the database follows the schema change, each when it is next read:
    a placeholder per page now (``Database.put_deferred``), the new property map on first
    read (the same page it would have been migrated to at once)."""
    migration = _Migration(renames, removed, [(name, schema[name]) for name in added])
    pages = ctx.db.where("pages", "database", _database_of, dbid, in_scan_order=True)
    ctx.db.put_deferred("pages", pages, migration)


class _Migration:
    """One schema change applied to a page: renamed, removed and added properties."""

    __slots__ = ("renames", "removed", "blanks")

    def __init__(
        self, renames: dict[str, str], removed: list[str], blanks: list[tuple[str, Any]]
    ) -> None:
        self.renames = renames
        self.removed = removed
        self.blanks = blanks

    def __call__(self, page: dict[str, Any]) -> dict[str, Any]:
        # renamed in place, so the order of the properties stays
        old = page["properties"]
        renames = self.renames
        props = {renames.get(k, k): v for k, v in old.items()} if renames else old.copy()
        for name in self.removed:
            props.pop(name, None)
        for name, prop in self.blanks:
            props[name] = empty_value(prop)
        updated = page.copy()  # copy-on-write: a new property map, the values it keeps shared
        updated["properties"] = props
        return updated

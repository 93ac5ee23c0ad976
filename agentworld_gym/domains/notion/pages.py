"""Page tools: retrieve, create (in a database or under a page), update, and property items.

Property writes are checked against the parent database's schema (see :mod:`.properties`);
pages under a page only have a ``title``. Archived pages can be read and unarchived, but
editing them is a 400 ``validation_error``, as in Notion.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import unquote

from agentworld_gym.domains.notion.blocks import build_blocks, insert_children, mark_edited
from agentworld_gym.domains.notion.objects import (
    api_error,
    archived_error,
    bot_user,
    find_database,
    find_page,
    js,
    minute_iso,
    normalize_id,
    notion_url,
    page_title,
    public,
    public_record,
    touch,
    user_ref,
    validation_error,
)
from agentworld_gym.domains.notion.properties import (
    PAGINATED_TYPES,
    ValueWriter,
    default_status,
    empty_value,
    property_item,
    property_items,
    resolve,
)
from agentworld_gym.tools import Encoded, ToolContext

TITLE_VALUE = {"id": "title", "type": "title"}


def _filtered(page: dict[str, Any], wanted: list[str] | None) -> dict[str, Any]:
    out = public(page)
    if wanted:
        keep = set(wanted)
        out["properties"] = {
            name: value
            for name, value in out["properties"].items()
            if name in keep or value.get("id") in keep
        }
    return out


def retrieve_a_page(
    ctx: ToolContext, page_id: str, filter_properties: str | None = None
) -> Encoded | dict[str, Any]:
    pid = normalize_id(page_id, "path.page_id")
    if not filter_properties:
        return public_record(ctx.db, "pages", find_page(ctx.db, pid))
    wanted = [p.strip() for p in filter_properties.split(",")]
    return _filtered(find_page(ctx.db, pid), wanted)


# -- property writes -----------------------------------------------------------------------
def _apply_properties(
    ctx: ToolContext, page: dict[str, Any], given: dict[str, Any], database: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Write ``given`` into ``page["properties"]``; returns the database if its schema grew."""
    if database is None:
        for key, raw in given.items():
            if key not in ("title", "Title"):
                raise validation_error(f"{key} is not a property that exists.")
            value = ValueWriter(ctx.db, None).build("title", {"id": "title", "type": "title"}, raw)
            page["properties"]["title"] = value
        return None
    writer = ValueWriter(ctx.db, database)  # copies the database only if its schema grows
    for key, raw in given.items():
        found = resolve(database["properties"], key)
        if found is None:
            raise validation_error(f"{key} is not a property that exists.")
        name, prop = found
        page["properties"][name] = writer.build(name, prop, raw)
    return writer.changed


def _json_arg(value: Any, where: str) -> Any:
    if value is None or isinstance(value, dict):
        return value
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        raise validation_error(
            f"body failed validation: {where} should be an object, instead was `{js(value)}`."
        ) from None


def _icon(value: Any, where: str) -> dict[str, Any] | None:
    value = _json_arg(value, where)
    if value is None:
        return None
    if isinstance(value, dict) and "emoji" in value:
        return {"type": "emoji", "emoji": str(value["emoji"])}
    if isinstance(value, dict) and isinstance(value.get("external"), dict):
        return {"type": "external", "external": {"url": str(value["external"].get("url", ""))}}
    raise validation_error(
        f"body failed validation: {where} should be an emoji or external file object."
    )


def _sync_child_page_block(ctx: ToolContext, page: dict[str, Any]) -> None:
    block = ctx.db.get("blocks", page["id"])
    if block is not None and block.get("type") == "child_page":
        fixed = dict(block)
        fixed["child_page"] = {"title": page_title(page)}
        fixed["last_edited_time"] = page["last_edited_time"]
        fixed["archived"] = page["archived"]
        fixed["in_trash"] = page["in_trash"]
        ctx.db.put("blocks", fixed)


def patch_page(
    ctx: ToolContext,
    page_id: str,
    properties: dict[str, Any] | None = None,
    in_trash: bool | None = None,
    archived: bool | None = None,
    icon: dict[str, Any] | None = None,
    cover: dict[str, Any] | None = None,
) -> Encoded | dict[str, Any]:
    pid = normalize_id(page_id, "path.page_id")
    page = dict(find_page(ctx.db, pid))  # copy-on-write: top-level fields and property values
    if "properties" in page:
        page["properties"] = dict(page["properties"])
    restoring = archived is False or in_trash is False
    trashing = archived is True or in_trash is True
    if restoring and trashing:
        raise validation_error("archived and in_trash must not contradict each other.")
    was_archived = page.get("archived") or page.get("in_trash")
    if was_archived and not restoring and (properties or icon or cover):
        raise archived_error()
    if restoring:
        page["archived"] = page["in_trash"] = False
    if properties:
        parent = page["parent"]
        database = (
            find_database(ctx.db, parent["database_id"])
            if parent.get("type") == "database_id"
            else None
        )
        grown = _apply_properties(ctx, page, properties, database)
        if grown is not None:
            ctx.db.put("databases", grown)
    if icon is not None:
        page["icon"] = _icon(icon, "body.icon")
    if cover is not None:
        page["cover"] = _icon(cover, "body.cover")
    if trashing:
        page["archived"] = page["in_trash"] = True
    touch(ctx, page)
    page["url"] = (
        notion_url(page_title(page), pid)
        if page["parent"]["type"] != "database_id"
        else page["url"]
    )
    ctx.db.put("pages", page)
    _sync_child_page_block(ctx, page)
    return public_record(ctx.db, "pages", page)


def post_page(
    ctx: ToolContext,
    parent: dict[str, Any],
    properties: dict[str, Any],
    children: list[str] | None = None,
    icon: str | None = None,
    cover: str | None = None,
) -> Encoded | dict[str, Any]:
    database = holder = None
    if "database_id" in parent:
        dbid = normalize_id(parent["database_id"], "body.parent.database_id")
        database = find_database(ctx.db, dbid)
        if database.get("archived") or database.get("in_trash"):
            raise archived_error()
        stored_parent = {"type": "database_id", "database_id": dbid}
    else:
        ppid = normalize_id(parent.get("page_id"), "body.parent.page_id")
        holder = find_page(ctx.db, ppid)
        if holder.get("archived") or holder.get("in_trash"):
            raise archived_error()
        stored_parent = {"type": "page_id", "page_id": ppid}
    bot = user_ref(bot_user(ctx.db)["id"])
    now = minute_iso(ctx)
    page: dict[str, Any] = {
        "object": "page",
        "id": ctx.new_id(),
        "created_time": now,
        "last_edited_time": now,
        "created_by": bot,
        "last_edited_by": bot,
        "cover": _icon(cover, "body.cover"),
        "icon": _icon(icon, "body.icon"),
        "parent": stored_parent,
        "archived": False,
        "in_trash": False,
        "properties": {},
        "url": "",
        "public_url": None,
    }
    if database is not None:
        page["properties"] = {n: empty_value(p) for n, p in database["properties"].items()}
        for name, prop in database["properties"].items():
            if prop["type"] == "status":
                page["properties"][name]["status"] = default_status(prop)
    else:
        page["properties"] = {"title": {**TITLE_VALUE, "title": []}}
    grown = _apply_properties(ctx, page, properties, database)
    if grown is not None:
        ctx.db.put("databases", grown)
    page["url"] = notion_url(page_title(page) if database is None else "", page["id"])
    blocks = _parse_children(children)
    built = (
        build_blocks(ctx, blocks, {"type": "page_id", "page_id": page["id"]}, "body.children")
        if blocks
        else []
    )
    ctx.db.insert("pages", page)
    if built:
        insert_children(ctx, page["id"], built, None)
    if holder is not None:
        _add_child_page_block(ctx, holder, page)
    return public_record(ctx.db, "pages", page)


def _parse_children(children: list[Any] | None) -> list[Any]:
    out = []
    for i, raw in enumerate(children or []):
        block = _json_arg(raw, f"body.children[{i}]")
        if not isinstance(block, dict):
            raise validation_error(
                f"body failed validation: body.children[{i}] should be an object, instead was "
                f"`{js(raw)}`."
            )
        out.append(block)
    return out


def _add_child_page_block(ctx: ToolContext, holder: dict[str, Any], page: dict[str, Any]) -> None:
    block = {
        "object": "block",
        "id": page["id"],
        "parent": {"type": "page_id", "page_id": holder["id"]},
        "created_time": page["created_time"],
        "last_edited_time": page["last_edited_time"],
        "created_by": page["created_by"],
        "last_edited_by": page["last_edited_by"],
        "has_children": False,
        "archived": False,
        "in_trash": False,
        "type": "child_page",
        "child_page": {"title": page_title(page)},
        "_seq": 0,
    }
    insert_children(ctx, holder["id"], [block], None)
    mark_edited(ctx, "page", holder)


# -- property items ------------------------------------------------------------------------
def retrieve_a_page_property(
    ctx: ToolContext,
    page_id: str,
    property_id: str,
    page_size: int | None = None,
    start_cursor: str | None = None,
) -> dict[str, Any]:
    pid = normalize_id(page_id, "path.page_id")
    page = find_page(ctx.db, pid)
    found = resolve(page["properties"], property_id) or resolve(
        page["properties"], unquote(property_id)
    )
    if found is None:
        raise api_error(404, "object_not_found", f"Could not find property with ID: {property_id}.")
    _, value = found
    if value["type"] not in PAGINATED_TYPES:
        return property_item(value)
    items = property_items(value)
    size = 100 if page_size is None else page_size
    if not 1 <= size <= 100:
        raise validation_error(
            "query failed validation: query.page_size should be a number between 1 and 100, "
            f"instead was `{size}`."
        )
    start = 0
    if start_cursor is not None:
        if not start_cursor.isdigit() or int(start_cursor) > len(items):
            raise validation_error(f"The start_cursor provided is invalid: {start_cursor}")
        start = int(start_cursor)
    chunk = items[start : start + size]
    has_more = start + size < len(items)
    return {
        "object": "list",
        "results": chunk,
        "next_cursor": str(start + size) if has_more else None,
        "has_more": has_more,
        "type": "property_item",
        "property_item": {
            "id": value["id"],
            "next_url": None,
            "type": value["type"],
            value["type"]: {},
        },
    }

"""Block tools: retrieve, list children, append (with ``after``), update and delete blocks.

Child order lives in the private ``_seq`` field of each block, with gaps so that ``after`` can
insert between two siblings without renumbering (siblings are renumbered when a gap closes).
Archived blocks disappear from child lists but can still be retrieved, and editing them is a
400, as in Notion. A page is also a block: its id works wherever a block id does.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion.objects import (
    answer_key,
    archived_error,
    bot_user,
    initial_answer,
    minute_iso,
    normalize_id,
    not_found,
    page_title,
    paginate,
    public,
    public_listing,
    public_record,
    rich_text_from_request,
    touch,
    user_ref,
    validation_error,
)
from agentworld_gym.tools import Encoded, ToolContext

SEQ_GAP = 1024
TEXT_BLOCKS = (
    "paragraph",
    "heading_1",
    "heading_2",
    "heading_3",
    "bulleted_list_item",
    "numbered_list_item",
    "to_do",
    "toggle",
    "quote",
    "callout",
    "code",
)
CREATABLE = (*TEXT_BLOCKS, "divider")
NO_CHILDREN = ("divider", "code", "child_page", "child_database")
MAX_NESTING = 2


# -- reading -------------------------------------------------------------------------------
def children(ctx: ToolContext, parent_id: str, *, include_archived: bool = False):
    """The blocks under a page or block, in display order."""
    found = [
        b
        for b in ctx.db.where("blocks", "parent", _parent_id, parent_id)
        if include_archived or not b.get("archived")
    ]
    return sorted(found, key=lambda b: (b.get("_seq", 0), b["id"]))


def _parent_id(block: dict[str, Any]) -> str | None:
    parent = block.get("parent", {})
    return parent.get(parent.get("type", ""))


def container(ctx: ToolContext, block_id: str) -> tuple[str, dict[str, Any]]:
    """``("page", record)`` or ``("block", record)`` for an id that can hold children."""
    page = ctx.db.get("pages", block_id)
    if page is not None:
        return "page", page
    block = ctx.db.get("blocks", block_id)
    if block is not None:
        return "block", block
    raise not_found("block", block_id)


def page_as_block(page: dict[str, Any]) -> dict[str, Any]:
    """A page seen through the blocks API (a ``child_page`` block), as Notion shows it."""
    return {
        "object": "block",
        "id": page["id"],
        "parent": page["parent"],
        "created_time": page["created_time"],
        "last_edited_time": page["last_edited_time"],
        "created_by": page["created_by"],
        "last_edited_by": page["last_edited_by"],
        "has_children": False,
        "archived": page.get("archived", False),
        "in_trash": page.get("in_trash", False),
        "type": "child_page",
        "child_page": {"title": page_title(page)},
    }


def get_block_children(
    ctx: ToolContext, block_id: str, start_cursor: str | None = None, page_size: int | None = None
) -> Encoded | dict[str, Any]:
    key = answer_key(block_id, start_cursor, page_size)
    return initial_answer(
        ctx,
        "block_children",
        key,
        ("blocks", "pages"),
        lambda: _block_children(ctx, block_id, start_cursor, page_size),
    )


def _block_children(
    ctx: ToolContext, block_id: str, start_cursor: str | None, page_size: int | None
) -> Encoded | dict[str, Any]:
    bid = normalize_id(block_id, "path.block_id")
    container(ctx, bid)
    listing = paginate(children(ctx, bid), start_cursor, page_size, kind="block", where="query")
    return public_listing(ctx.db, listing, "blocks")


def retrieve_a_block(ctx: ToolContext, block_id: str) -> Encoded | dict[str, Any]:
    bid = normalize_id(block_id, "path.block_id")
    block = ctx.db.get("blocks", bid)
    if block is not None:
        return public_record(ctx.db, "blocks", block)
    page = ctx.db.get("pages", bid)
    if page is not None:
        return page_as_block(public(page))
    raise not_found("block", bid)


# -- creating ------------------------------------------------------------------------------
def build_blocks(
    ctx: ToolContext, requests: list[Any], parent: dict[str, str], where: str, depth: int = 1
) -> list[dict[str, Any]]:
    """Request blocks → stored block records (children flattened after their parent)."""
    if depth > MAX_NESTING:
        raise validation_error(
            f"body failed validation: {where} exceeds the maximum nesting depth of "
            f"{MAX_NESTING} levels of children in one request."
        )
    if len(requests) > 100:
        raise validation_error(
            f"body failed validation: {where}.length should be ≤ `100`, instead was "
            f"`{len(requests)}`."
        )
    bot = user_ref(bot_user(ctx.db)["id"])
    now = minute_iso(ctx)
    out: list[dict[str, Any]] = []
    for i, req in enumerate(requests):
        here = f"{where}[{i}]"
        if not isinstance(req, dict):
            raise validation_error(f"body failed validation: {here} should be an object.")
        kind = req.get("type") or next((k for k in req if k in CREATABLE), None)
        if kind not in CREATABLE or not isinstance(req.get(kind), dict):
            raise validation_error(
                f"body failed validation: {here} should be a block object of a supported type "
                f"({', '.join(CREATABLE)}), instead was `{kind}`."
            )
        content = _content(kind, req[kind], f"{here}.{kind}")
        nested = req[kind].get("children", req.get("children")) or []
        block = {
            "object": "block",
            "id": ctx.new_id(),
            "parent": parent,
            "created_time": now,
            "last_edited_time": now,
            "created_by": bot,
            "last_edited_by": bot,
            "has_children": bool(nested),
            "archived": False,
            "in_trash": False,
            "type": kind,
            kind: content,
            "_seq": 0,
        }
        out.append(block)
        if nested:
            if kind in NO_CHILDREN:
                raise validation_error(f"body failed validation: {here} cannot have children.")
            kids = build_blocks(
                ctx,
                nested,
                {"type": "block_id", "block_id": block["id"]},
                f"{here}.{kind}.children",
                depth + 1,
            )
            for j, kid in enumerate(k for k in kids if _parent_id(k) == block["id"]):
                kid["_seq"] = (j + 1) * SEQ_GAP
            out.extend(kids)
    return out


def _content(kind: str, body: dict[str, Any], where: str) -> dict[str, Any]:
    if kind == "divider":
        return {}
    content: dict[str, Any] = {
        "rich_text": rich_text_from_request(body.get("rich_text", []), f"{where}.rich_text"),
        "color": body.get("color", "default") if isinstance(body.get("color"), str) else "default",
    }
    if kind == "to_do":
        content["checked"] = bool(body.get("checked", False))
    if kind.startswith("heading_"):
        content["is_toggleable"] = bool(body.get("is_toggleable", False))
    if kind == "callout":
        icon = body.get("icon")
        content["icon"] = icon if isinstance(icon, dict) else {"type": "emoji", "emoji": "💡"}
    if kind == "code":
        content["caption"] = []
        content["language"] = str(body.get("language", "plain text"))
    return content


def insert_children(
    ctx: ToolContext, parent_id: str, new_blocks: list[dict[str, Any]], after: str | None
) -> list[dict[str, Any]]:
    """Give first-level ``new_blocks`` their ``_seq`` (after ``after`` or at the end); store all."""
    siblings = children(ctx, parent_id)
    top = [b for b in new_blocks if _parent_id(b) == parent_id]
    if after is None:
        index = len(siblings)
    else:
        ids = [b["id"] for b in siblings]
        if after not in ids:
            raise validation_error(
                f"The block {after} provided as `after` is not a child of {parent_id}."
            )
        index = ids.index(after) + 1
    low = siblings[index - 1]["_seq"] if index > 0 else 0
    high = siblings[index]["_seq"] if index < len(siblings) else None
    if high is not None and high - low <= len(top):
        for n, sib in enumerate(siblings):
            updated = dict(sib)  # a top-level field changes: nested values stay shared
            updated["_seq"] = (n + 1) * SEQ_GAP * (len(top) + 1)
            ctx.db.put("blocks", updated)
        siblings = children(ctx, parent_id)
        low = siblings[index - 1]["_seq"] if index > 0 else 0
        high = siblings[index]["_seq"] if index < len(siblings) else None
    step = (high - low) / (len(top) + 1) if high is not None else SEQ_GAP
    for n, block in enumerate(top):
        block["_seq"] = int(low + step * (n + 1))
    for block in new_blocks:
        ctx.db.insert("blocks", block)
    return top


def mark_edited(
    ctx: ToolContext, parent_kind: str, parent: dict[str, Any], *, has_children: bool | None = None
) -> None:
    """Touch the container (and the page that holds it) after its content changed."""
    updated = touch(ctx, dict(parent))
    if has_children is not None and parent_kind == "block":
        updated["has_children"] = has_children
    ctx.db.put("pages" if parent_kind == "page" else "blocks", updated)
    if parent_kind == "block":
        page_id = root_page_id(ctx, parent)
        page = ctx.db.get("pages", page_id) if page_id else None
        if page is not None:
            ctx.db.put("pages", touch(ctx, dict(page)))


def root_page_id(ctx: ToolContext, block: dict[str, Any]) -> str | None:
    seen = 0
    while block is not None and seen < 64:
        parent = block.get("parent", {})
        if parent.get("type") == "page_id":
            return parent["page_id"]
        block = ctx.db.get("blocks", parent.get("block_id", ""))
        seen += 1
    return None


def patch_block_children(
    ctx: ToolContext, block_id: str, children: list[Any], after: str | None = None
) -> Encoded | dict[str, Any]:
    bid = normalize_id(block_id, "path.block_id")
    kind, parent = container(ctx, bid)
    if parent.get("archived") or parent.get("in_trash"):
        raise archived_error()
    if kind == "block" and parent.get("type") in NO_CHILDREN:
        raise validation_error(f"Block type {parent['type']} does not support children.")
    after_id = normalize_id(after, "body.after") if after is not None else None
    ptype = "page_id" if kind == "page" else "block_id"
    built = build_blocks(ctx, children, {"type": ptype, ptype: bid}, "body.children")
    top = insert_children(ctx, bid, built, after_id)
    mark_edited(
        ctx, kind, ctx.db.get("pages" if kind == "page" else "blocks", bid), has_children=True
    )
    return public_listing(ctx.db, paginate(top, None, None, kind="block"), "blocks")


# -- updating ------------------------------------------------------------------------------
_EDITABLE_FIELDS = {"rich_text", "checked", "color", "language", "icon", "is_toggleable", "caption"}


def update_a_block(
    ctx: ToolContext,
    block_id: str,
    type: dict[str, Any] | None = None,
    archived: bool | None = None,
) -> Encoded | dict[str, Any]:
    bid = normalize_id(block_id, "path.block_id")
    block = ctx.db.get("blocks", bid)
    if block is None:
        if ctx.db.get("pages", bid) is not None and archived is not None:
            return _set_page_archived(ctx, bid, archived)
        raise not_found("block", bid)
    if archived is not None and type is None:
        return _set_archived(ctx, block, archived)
    if block.get("archived") and archived is not False:
        raise archived_error()
    updated = dict(block)  # copy-on-write: top-level fields, and the content if it changes
    if archived is not None:
        updated["archived"] = updated["in_trash"] = archived
    if type:
        fields = type.get(block["type"], type) if isinstance(type, dict) else type
        others = [k for k in type if k in CREATABLE and k != block["type"]]
        if others:
            raise validation_error(
                f"Block type cannot be changed: block {bid} is a {block['type']}, not a "
                f"{others[0]}."
            )
        if not isinstance(fields, dict):
            raise validation_error(
                f"body failed validation: body.{block['type']} should be an object."
            )
        unknown = sorted(set(fields) - _EDITABLE_FIELDS - {"type"})
        if unknown or block["type"] not in TEXT_BLOCKS:
            raise validation_error(
                f"body failed validation: body.{block['type']}.{(unknown or ['type'])[0]} "
                "should be not present, instead was present."
            )
        content = updated[block["type"]] = dict(block[block["type"]])
        if "rich_text" in fields:
            content["rich_text"] = rich_text_from_request(
                fields["rich_text"], f"body.{block['type']}.rich_text"
            )
        if "checked" in fields:
            if block["type"] != "to_do" or not isinstance(fields["checked"], bool):
                raise validation_error(
                    f"body failed validation: body.{block['type']}.checked should be not "
                    "present, instead was present."
                )
            content["checked"] = fields["checked"]
        for key in ("color", "language", "icon", "is_toggleable"):
            if key in fields and (key == "color" or key in content):
                content[key] = fields[key]
    touch(ctx, updated)
    ctx.db.put("blocks", updated)
    _touch_page_of(ctx, updated)
    return public_record(ctx.db, "blocks", updated)


def _touch_page_of(ctx: ToolContext, block: dict[str, Any]) -> None:
    page_id = root_page_id(ctx, block)
    page = ctx.db.get("pages", page_id) if page_id else None
    if page is not None:
        ctx.db.put("pages", touch(ctx, dict(page)))


def _set_archived(
    ctx: ToolContext, block: dict[str, Any], archived: bool
) -> Encoded | dict[str, Any]:
    if archived and block.get("archived"):
        raise archived_error()
    updated = touch(ctx, dict(block))
    updated["archived"] = updated["in_trash"] = archived
    ctx.db.put("blocks", updated)
    if block["type"] == "child_page" and ctx.db.get("pages", block["id"]) is not None:
        _set_page_archived(ctx, block["id"], archived, sync_block=False)
    parent_id = _parent_id(block)
    parent = ctx.db.get("blocks", parent_id) if parent_id else None
    if parent is not None:
        still = bool(children(ctx, parent_id))
        fixed = dict(parent)
        fixed["has_children"] = still
        ctx.db.put("blocks", fixed)
    _touch_page_of(ctx, updated)
    return public_record(ctx.db, "blocks", updated)


def _set_page_archived(
    ctx: ToolContext, page_id: str, archived: bool, sync_block: bool = True
) -> dict[str, Any]:
    page = ctx.db.get("pages", page_id)
    updated = touch(ctx, dict(page))
    updated["archived"] = updated["in_trash"] = archived
    ctx.db.put("pages", updated)
    block = ctx.db.get("blocks", page_id) if sync_block else None
    if block is not None:
        fixed = touch(ctx, dict(block))
        fixed["archived"] = fixed["in_trash"] = archived
        ctx.db.put("blocks", fixed)
    return page_as_block(public(updated))


def delete_a_block(ctx: ToolContext, block_id: str) -> Encoded | dict[str, Any]:
    bid = normalize_id(block_id, "path.block_id")
    block = ctx.db.get("blocks", bid)
    if block is not None:
        return _set_archived(ctx, block, True)
    page = ctx.db.get("pages", bid)
    if page is not None:
        if page.get("archived"):
            raise archived_error()
        return _set_page_archived(ctx, bid, True)
    raise not_found("block", bid)

"""Workspace-wide tools: users, the integration's bot user, search, and comments."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

from agentworld_gym.domains.notion.objects import (
    Derived,
    answer_key,
    api_error,
    bot_user,
    database_title,
    find_page,
    initial_answer,
    js,
    minute_iso,
    normalize_id,
    page_title,
    paginate,
    public,
    public_listing,
    public_record,
    rich_text_from_request,
    user_ref,
    validation_error,
)
from agentworld_gym.tools import Encoded, ToolContext


# -- users ---------------------------------------------------------------------------------
def get_user(ctx: ToolContext, user_id: str) -> Encoded | dict[str, Any]:
    uid = normalize_id(user_id, "path.user_id")
    user = ctx.db.get("users", uid)
    if user is None:
        raise api_error(404, "object_not_found", f"Could not find user with ID: {uid}.")
    return public_record(ctx.db, "users", user)


def get_users(
    ctx: ToolContext, start_cursor: str | None = None, page_size: int | None = None
) -> Encoded | dict[str, Any]:
    def make() -> Encoded | dict[str, Any]:
        users = list(ctx.db.scan("users"))
        listing = paginate(users, start_cursor, page_size, kind="user", where="query")
        return public_listing(ctx.db, listing, "users")

    return initial_answer(ctx, "users", answer_key(start_cursor, page_size), ("users",), make)


def get_self(ctx: ToolContext) -> Encoded | dict[str, Any]:
    return public_record(ctx.db, "users", bot_user(ctx.db))


# -- search --------------------------------------------------------------------------------
def post_search(
    ctx: ToolContext,
    query: str | None = None,
    sort: dict[str, Any] | None = None,
    filter: dict[str, Any] | None = None,
    start_cursor: str | None = None,
    page_size: int | None = None,
) -> Encoded | dict[str, Any]:
    args = (query, sort, filter, start_cursor, page_size)
    key = answer_key(*args)
    return initial_answer(
        ctx, "search", key, ("pages", "databases"), lambda: _post_search(ctx, *args)
    )


def _post_search(
    ctx: ToolContext,
    query: str | None,
    sort: dict[str, Any] | None,
    filter: dict[str, Any] | None,
    start_cursor: str | None,
    page_size: int | None,
) -> Encoded | dict[str, Any]:
    kinds = ("page", "database")
    if filter:
        if filter.get("property") != "object":
            raise validation_error(
                'body failed validation: body.filter.property should be `"object"`, instead '
                f"was `{js(filter.get('property'))}`."
            )
        if filter.get("value") not in kinds:
            raise validation_error(
                'body failed validation: body.filter.value should be `"page"` or `"database"`'
                f", instead was `{js(filter.get('value'))}`."
            )
        kinds = (filter["value"],)
    direction = "descending"
    if sort:
        if sort.get("timestamp", "last_edited_time") != "last_edited_time":
            raise validation_error(
                'body failed validation: body.sort.timestamp should be `"last_edited_time"`, '
                f"instead was `{js(sort.get('timestamp'))}`."
            )
        direction = sort.get("direction", "descending")
        if direction not in ("ascending", "descending"):
            raise validation_error(
                'body failed validation: body.sort.direction should be `"ascending"` or '
                f'`"descending"`, instead was `{js(direction)}`.'
            )
    words = tuple((query or "").casefold().split())
    if ctx.db.has_changes("pages") or ctx.db.has_changes("databases"):
        found = _search(ctx, kinds, words, direction)
    else:  # the initial state's answer, kept for every episode that has not written yet
        answers = ctx.db.memo("notion:search", _new_answers)
        key = (kinds, words, direction)
        answer = answers.get(key)
        if answer is None:
            if len(answers) >= _MAX_ANSWERS:
                answers.clear()
            answer = answers[key] = _search(ctx, kinds, words, direction)
        found = list(answer)
    listing = paginate(found, start_cursor, page_size, kind="page_or_database")
    return public_listing(ctx.db, listing)


_MAX_ANSWERS = 1024
"""Distinct searches of the initial state kept (a memo, cleared when full)."""


def _new_answers(_: Any) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    return {}


def _search(
    ctx: ToolContext, kinds: tuple[str, ...], words: tuple[str, ...], direction: str
) -> list[dict[str, Any]]:
    """The live pages and databases whose titles hold every word, most recently edited first
    (or last), ties by id."""
    found = []
    for kind in kinds:
        collection = f"{kind}s"
        make = _folded_page_title if kind == "page" else _folded_database_title
        live = ctx.db.where(collection, "live", _is_live, True)
        titles = Derived(ctx.db, "folded_title", collection, make).many(live)
        for record, title in zip(live, titles, strict=True):
            for word in words:
                if word not in title:
                    break
            else:
                found.append(record)
    found.sort(key=itemgetter("id"))
    found.sort(key=itemgetter("last_edited_time"), reverse=direction == "descending")
    return found


def _is_live(record: dict[str, Any]) -> bool:
    return not (record.get("archived") or record.get("in_trash"))


def _folded_page_title(record: dict[str, Any]) -> str:
    return page_title(record).casefold()


def _folded_database_title(record: dict[str, Any]) -> str:
    return database_title(record).casefold()


# -- comments ------------------------------------------------------------------------------
def retrieve_a_comment(
    ctx: ToolContext, block_id: str, start_cursor: str | None = None, page_size: int | None = None
) -> dict[str, Any]:
    bid = normalize_id(block_id, "query.block_id")
    if ctx.db.get("pages", bid) is None and ctx.db.get("blocks", bid) is None:
        raise api_error(
            404,
            "object_not_found",
            f"Could not find block with ID: {bid}. Make sure the relevant pages and "
            "databases are shared with your integration.",
        )
    found = [c for c in ctx.db.scan("comments") if c["parent"].get(c["parent"]["type"]) == bid]
    found.sort(key=lambda c: (c["created_time"], c.get("_seq", 0), c["id"]))
    return paginate(
        [public(c) for c in found], start_cursor, page_size, kind="comment", where="query"
    )


def create_a_comment(
    ctx: ToolContext, parent: dict[str, Any], rich_text: list[dict[str, Any]]
) -> Encoded | dict[str, Any]:
    pid = normalize_id(parent.get("page_id"), "body.parent.page_id")
    find_page(ctx.db, pid)
    content = rich_text_from_request(rich_text, "body.rich_text")
    if not content:
        raise validation_error("body failed validation: body.rich_text should not be empty.")
    now = minute_iso(ctx)
    comment = {
        "object": "comment",
        "id": ctx.new_id(),
        "parent": {"type": "page_id", "page_id": pid},
        "discussion_id": ctx.new_id(),
        "created_time": now,
        "last_edited_time": now,
        "created_by": user_ref(bot_user(ctx.db)["id"]),
        "rich_text": content,
        "_seq": ctx.db.count("comments"),
    }
    ctx.db.insert("comments", comment)
    return public_record(ctx.db, "comments", comment)

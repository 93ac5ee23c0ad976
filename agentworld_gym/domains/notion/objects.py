"""Notion API object shapes, ids, error objects and pagination shared by every tool.

Records are stored exactly as the Notion API returns them, plus bookkeeping fields whose names
start with ``_`` (``_seq`` orders siblings, ``_self`` marks the integration's bot user); those
are stripped by :func:`public` before anything reaches the agent.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from agentworld_gym.database import Database, copy_record
from agentworld_gym.errors import ToolExecutionError
from agentworld_gym.tools import Encoded, ToolContext

NAMESPACE = uuid.UUID("6f1c1f0e-3c55-4a52-9d2e-6e6f74696f6e")
"""uuid5 namespace of every seeded id (ids derived from names stay stable across builds)."""

MAX_PAGE_SIZE = 100
MAX_TEXT = 2000
_HEX32 = re.compile(r"^[0-9a-fA-F]{32}$")
_SHARE_HINT = "Make sure the relevant pages and databases are shared with your integration."

DEFAULT_ANNOTATIONS = {
    "bold": False,
    "italic": False,
    "strikethrough": False,
    "underline": False,
    "code": False,
    "color": "default",
}


def stable_id(*parts: str) -> str:
    """A uuid5 id derived from names, e.g. ``stable_id("page", "Company Handbook")``."""
    return str(uuid.uuid5(NAMESPACE, "/".join(parts)))


# -- errors --------------------------------------------------------------------------------
def api_error(status: int, code: str, message: str) -> ToolExecutionError:
    """The exception a tool raises to answer with a Notion error object."""
    body = {"object": "error", "status": status, "code": code, "message": message}
    return ToolExecutionError(message, body=body)


def validation_error(message: str) -> ToolExecutionError:
    return api_error(400, "validation_error", message)


def not_found(kind: str, object_id: str) -> ToolExecutionError:
    return api_error(
        404, "object_not_found", f"Could not find {kind} with ID: {object_id}. {_SHARE_HINT}"
    )


def normalize_id(value: Any, where: str) -> str:
    """Accept a dashed or undashed uuid (as Notion does) and return the dashed lowercase form.

    ``where`` names the argument for the error message, e.g. ``path.page_id``.
    """
    if type(value) is str:
        known = _CANONICAL.get(value)
        if known is not None:
            return known
    text = str(value).strip() if isinstance(value, str) else ""
    compact = text.replace("-", "")
    if not _HEX32.match(compact):
        root = where.split(".", 1)[0]
        raise validation_error(
            f"{root} failed validation: {where} should be a valid uuid, instead was `{js(value)}`."
        )
    canonical = str(uuid.UUID(compact))
    if type(value) is str:
        if len(_CANONICAL) >= _CANONICAL_MAX:
            _CANONICAL.clear()
        _CANONICAL[value] = canonical
    return canonical


_CANONICAL: dict[str, str] = {}
"""Id text → its dashed lowercase form: agents repeat the ids they read (a uuid parse each
time was a third of a point read's cost)."""
_CANONICAL_MAX = 65_536


def js(value: Any) -> str:
    """A value as Notion quotes it in messages (JSON; ``undefined`` for a missing value)."""
    if value is None:
        return "undefined"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


# -- users, timestamps, outputs ------------------------------------------------------------
def bot_user(db: Database) -> dict[str, Any]:
    """The integration's own bot user (``API-get-self``): the first user marked ``_self``.

    No tool writes users, so it is the seeded one, looked up by the key found once.
    """
    key = db.memo("notion:bot_user", _bot_key)
    user = db.get("users", key) if key is not None else None
    if user is not None and user.get("_self"):
        return user
    for user in db.scan("users"):  # (a state that changed its users)
        if user.get("_self"):
            return user
    raise RuntimeError("the Notion seed has no bot user marked _self")


def _bot_key(db: Database) -> str | None:
    pk = db.primary_key("users")
    return next((str(u[pk]) for u in db.scan("users") if u.get("_self")), None)


def user_ref(user_id: str) -> dict[str, str]:
    return {"object": "user", "id": user_id}


def touch(ctx: ToolContext, record: dict[str, Any]) -> dict[str, Any]:
    """Stamp a modified copy with the clock and the integration as last editor."""
    record["last_edited_time"] = minute_iso(ctx)
    record["last_edited_by"] = user_ref(bot_user(ctx.db)["id"])
    return record


def minute_iso(ctx: ToolContext) -> str:
    """Notion rounds object timestamps down to the minute."""
    start = ctx.clock_start
    key = (start, start.utcoffset(), ctx.calls)  # what ``ctx.now()``'s wall clock is made of
    text = _MINUTES.get(key)
    if text is None:
        if len(_MINUTES) >= 4096:
            _MINUTES.clear()
        text = _MINUTES[key] = ctx.now().strftime("%Y-%m-%dT%H:%M:00.000Z")
    return text


_MINUTES: dict[tuple[Any, Any, int], str] = {}
"""(clock start, its UTC offset, call count) → the stamp: every episode of a task writes the
same ones."""


def public(record: dict[str, Any]) -> dict[str, Any]:
    """A private copy without bookkeeping (``_``) fields: what the API returns."""
    out = copy_record(record)
    for key in [k for k in out if k.startswith("_")]:
        del out[key]
    return out


class Derived:
    """``make(record)`` computed once per record of the shared initial state.

    Such a record never changes, so what is derived from it (its JSON, its folded title) is
    kept for every call and episode, keyed by id and checked by identity; a record this
    episode wrote is derived afresh. Make one per call (``Derived(db, ...)``), then call it
    on each record.
    """

    __slots__ = ("_cache", "_db", "_collection", "_make")

    def __init__(
        self, db: Database, name: str, collection: str, make: Callable[[Any], Any]
    ) -> None:
        self._cache = db.memo(f"notion:{name}:{collection}", _new_cache)
        self._db = db
        self._collection = collection
        self._make = make

    def many(self, records: Sequence[dict[str, Any]]) -> list[Any]:
        """``[self(r) for r in records]``, with the loop kept tight (a search's every page)."""
        cache, out = self._cache, []
        for record in records:
            hit = cache.get(record.get("id"))
            out.append(hit[1] if hit is not None and hit[0] is record else self(record))
        return out

    def __call__(self, record: dict[str, Any]) -> Any:
        key = record.get("id")
        hit = self._cache.get(key)
        if hit is not None and hit[0] is record:
            return hit[1]
        value = self._make(record)
        if self._db.initial(self._collection, key) is record:
            self._cache[key] = (record, value)
        return value


def _new_cache(_: Database) -> dict[Any, tuple[dict[str, Any], Any]]:
    return {}


def public_json(db: Database, collection: str) -> Derived:
    """``public(record)`` as a JSON fragment for records of ``collection`` (``None`` if orjson
    cannot write the record)."""
    return Derived(db, "public_json", collection, _public_fragment)


def _public_fragment(record: dict[str, Any]) -> orjson.Fragment | None:
    try:
        return orjson.Fragment(
            orjson.dumps({k: v for k, v in record.items() if not k.startswith("_")})
        )
    except TypeError:
        return None


def public_record(db: Database, collection: str, record: dict[str, Any]) -> Encoded | dict:
    """``public(record)`` as the whole result of a read, from its cached JSON; for a record
    of the initial state, the same result (its text encoded once) in every episode."""
    kept = db.memo(
        _RECORD_MEMOS.get(collection) or f"notion:public_record:{collection}", _new_cache
    )
    key = record.get("id")
    hit = kept.get(key)
    if hit is not None and hit[0] is record:
        return hit[1]
    fragment = public_json(db, collection)(record)
    if fragment is None:
        return public(record)
    result = Encoded(fragment)
    if db.initial(collection, key) is record:
        result.text()
        kept[key] = (record, result)
    return result


_RECORD_MEMOS = {c: f"notion:public_record:{c}" for c in ("pages", "databases", "blocks", "users")}


def public_listing(
    db: Database, listing: dict[str, Any], collection: str | None = None
) -> Encoded | dict[str, Any]:
    """A :func:`paginate` result over stored records, with each record made public.

    The records become cached JSON fragments (:func:`public_json`); ``collection`` defaults
    to each record's ``object`` kind (``page`` → ``pages``).
    """
    records = listing["results"]
    fragments = []
    encoders: dict[str, Derived] = {}
    for record in records:
        name = collection or f"{record.get('object')}s"
        encode = encoders.get(name) or encoders.setdefault(name, public_json(db, name))
        fragment = encode(record)
        if fragment is None:  # a value orjson cannot write: the plain path copes with it
            listing["results"] = [public(r) for r in records]
            return listing
        fragments.append(fragment)
    listing["results"] = fragments
    return Encoded(listing)


_ANSWER_MEMOS: dict[str, str] = {}
"""Tool → the name of its memo of whole answers (made once)."""

_MAX_ANSWERS = 4096
"""Whole answers of the initial state kept per tool (a memo, cleared when full)."""


def initial_answer(
    ctx: ToolContext,
    tool: str,
    key: Any,
    reads: Sequence[str],
    make: Callable[[], Encoded | dict[str, Any]],
) -> Encoded | dict[str, Any]:
    """``make()``, kept whole (its JSON text included) while the episode has written none of
    the collections it ``reads``: such an answer is a function of the initial state and the
    arguments in ``key`` alone, so every episode that asks the same (the members of a GRPO
    group, a task replayed) gets the same text without building it again. Only
    :class:`~agentworld_gym.tools.Encoded` answers are kept (callers that read results decode
    a fresh copy); a call that raises keeps nothing; ``key=None`` keeps nothing.
    """
    db = ctx.db
    if key is None:
        return make()
    for collection in reads:
        if db.has_changes(collection):
            return make()
    name = _ANSWER_MEMOS.get(tool) or _ANSWER_MEMOS.setdefault(tool, f"notion:answers:{tool}")
    answers = db.memo(name, _new_cache)
    hit = answers.get(key)
    if hit is not None:
        return hit[1]
    answer = make()
    if type(answer) is Encoded:
        answer.text()
        if len(answers) >= _MAX_ANSWERS:
            answers.clear()
        answers[key] = (None, answer)
    return answer


def answer_key(*parts: Any) -> bytes | None:
    """The arguments of a call as a memo key (``None`` when orjson cannot write them)."""
    try:
        return orjson.dumps(parts)
    except TypeError:
        return None


def editable(record: dict[str, Any]) -> dict[str, Any]:
    """A private copy to modify and ``put`` back (records from the db are shared)."""
    return copy_record(record)


# -- rich text -----------------------------------------------------------------------------
def text_item(content: str, link: str | None = None, **annotations: Any) -> dict[str, Any]:
    """A full rich-text object as Notion returns it."""
    ann = dict(DEFAULT_ANNOTATIONS)
    ann.update(annotations)
    return {
        "type": "text",
        "text": {"content": content, "link": {"url": link} if link else None},
        "annotations": ann,
        "plain_text": content,
        "href": link,
    }


def rich_text(content: str) -> list[dict[str, Any]]:
    return [text_item(content)] if content else []


def plain(items: Sequence[dict[str, Any]] | None) -> str:
    return "".join(item.get("plain_text", "") for item in items or [])


def rich_text_from_request(items: Any, where: str) -> list[dict[str, Any]]:
    """Request rich text (``[{"text": {"content": ...}}]``) → full rich-text objects."""
    if not isinstance(items, list):
        raise validation_error(
            f"body failed validation: {where} should be an array, instead was `{js(items)}`."
        )
    out = []
    for i, item in enumerate(items):
        here = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise validation_error(
                f"body failed validation: {here} should be an object, instead was `{js(item)}`."
            )
        kind = item.get("type", "text")
        if kind != "text" or not isinstance(item.get("text"), dict):
            raise validation_error(
                f"body failed validation: {here}.text should be defined, instead was `undefined`."
            )
        content = item["text"].get("content")
        if not isinstance(content, str):
            raise validation_error(
                f"body failed validation: {here}.text.content should be a string, instead was "
                f"`{js(content)}`."
            )
        if len(content) > MAX_TEXT:
            raise validation_error(
                f"body failed validation: {here}.text.content.length should be ≤ `{MAX_TEXT}`"
                f", instead was `{len(content)}`."
            )
        link = item["text"].get("link")
        url = link.get("url") if isinstance(link, dict) else None
        annotations = item.get("annotations") if isinstance(item.get("annotations"), dict) else {}
        known = {k: v for k, v in annotations.items() if k in DEFAULT_ANNOTATIONS}
        out.append(text_item(content, url, **known))
    return out


# -- pagination ----------------------------------------------------------------------------
def page_size_of(value: Any, where: str) -> int:
    if value is None:
        return MAX_PAGE_SIZE
    if value < 1:
        raise validation_error(
            f"{where.split('.', 1)[0]} failed validation: {where} should be a number greater "
            f"than or equal to 1, instead was `{value}`."
        )
    if value > MAX_PAGE_SIZE:
        raise validation_error(
            f"{where.split('.', 1)[0]} failed validation: {where} should be a number less than "
            f"or equal to {MAX_PAGE_SIZE}, instead was `{value}`."
        )
    return int(value)


def paginate(
    items: list[dict[str, Any]],
    start_cursor: str | None,
    page_size: Any,
    *,
    kind: str,
    where: str = "body",
) -> dict[str, Any]:
    """A Notion list object; cursors are the id of the first item of the next page."""
    size = page_size_of(page_size, f"{where}.page_size")
    start = 0
    if start_cursor is not None:
        ids = [item.get("id") for item in items]
        cursor = start_cursor.strip()
        if cursor not in ids:
            try:
                cursor = normalize_id(cursor, f"{where}.start_cursor")
            except ToolExecutionError:
                cursor = ""
        if cursor not in ids:
            raise validation_error(f"The start_cursor provided is invalid: {start_cursor}")
        start = ids.index(cursor)
    chunk = items[start : start + size]
    has_more = start + size < len(items)
    return {
        "object": "list",
        "results": chunk,
        "next_cursor": items[start + size]["id"] if has_more else None,
        "has_more": has_more,
        "type": kind,
        kind: {},
    }


# -- lookups -------------------------------------------------------------------------------
def find_page(db: Database, page_id: str) -> dict[str, Any]:
    found = db.get("pages", page_id)
    return found if found is not None else _missing(db, "page", page_id, other="database")


def find_database(db: Database, database_id: str) -> dict[str, Any]:
    found = db.get("databases", database_id)
    return found if found is not None else _missing(db, "database", database_id, other="page")


def _missing(db: Database, kind: str, object_id: str, other: str) -> Any:
    """Raise: no ``kind`` record ``object_id``; an id of the ``other`` kind gets Notion's
    hint."""
    if db.get(f"{other}s", object_id) is not None:
        raise validation_error(
            f"Provided ID {object_id} is a {other}, not a {kind}. Use the retrieve {other} "
            f"API instead, `/v1/{other}s/{object_id}`."
        )
    raise not_found(kind, object_id)


def page_title(page: dict[str, Any]) -> str:
    for value in page.get("properties", {}).values():
        if value.get("type") == "title":
            return plain(value.get("title"))
    return ""


def database_title(database: dict[str, Any]) -> str:
    return plain(database.get("title"))


def notion_url(title: str, object_id: str) -> str:
    slug = "-".join(re.findall(r"[A-Za-z0-9]+", title))
    compact = object_id.replace("-", "")
    return f"https://www.notion.so/{slug}-{compact}" if slug else f"https://www.notion.so/{compact}"


def archived_error() -> ToolExecutionError:
    return validation_error(
        "Can't edit block that is archived. You must unarchive the block before editing."
    )

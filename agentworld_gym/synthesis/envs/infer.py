"""Infer what each operation does to the state: which collection, which kind of access.

An API spec says *how* to call an operation, not what it does to the service's state. The
state model is read from three clues, strongest first:

1. the response shape: a list (a bare array, or an object with one array of objects) means a
   list/search; an object means one record;
2. the operation id's verb (``ListCertificates``, ``pets.get``, ``DeleteBotAlias``), which is
   all there is for RPC-style APIs (``POST /#X-Amz-Target=Svc.DescribeThing``);
3. the REST path: ``/owners/{ownerId}/pets/{petId}`` names the collection (``pets``), the key
   argument (``petId``) and the scope it lives in (``ownerId`` of ``owners``).

:func:`shape_operation` turns one operation into a :class:`Shape` or says why it cannot be
modelled; :mod:`.compile` assembles shapes into collections and tools.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.synthesis.envs.normalize import Operation

VERB_CLASSES: dict[str, str] = {
    **dict.fromkeys("list search find query scan browse lookup".split(), "list"),
    **dict.fromkeys("get fetch describe read retrieve show view info".split(), "get"),
    **dict.fromkeys("create add post insert new register upload put".split(), "create"),
    **dict.fromkeys("update modify patch set edit change replace rename".split(), "update"),
    **dict.fromkeys("delete remove destroy deregister unregister purge".split(), "delete"),
}
"""First word of an operation id -> the kind of access it suggests."""
SKIP_SEGMENTS = frozenset("api apis rest public pvt private providers".split())
_VERSION = re.compile(r"^v\d+(?:[a-z]+\d*)?$|^\d+(?:\.\d+)*$", re.IGNORECASE)
SEARCH_ARGS = frozenset(
    "q query search keyword keywords term searchterm search_term searchquery text "
    "searchtext search_query fulltext".split()
)
META_KEYS = frozenset(
    "kind etag @odata.context @odata.count requestid request_id responsemetadata links ok "
    "_links status success message meta metadata nextlink @odata.nextlink".split()
)
NEXT_KEYS = (
    "nextpagetoken nexttoken nextcursor next_cursor nextmarker next_marker nextlink "
    "@odata.nextlink continuationtoken next_page_token next nextpage next_page cursor"
).split()
LIST_KEYS = frozenset(
    "items data results value values records entries list elements rows content hits "
    "collection resources objects nodes".split()
)
"""Names of the array in a list response (any other name needs pure paging siblings)."""
TOTAL_KEYS = "total totalcount total_count totalresults total_results totalitems count".split()
PAGE_SIZE = frozenset(
    "limit top $top perpage per_page pagesize page_size maxresults max_results maxitems "
    "max_items size rows num count take resultsperpage results_per_page maxrecords "
    "max_records num_results numresults".split()
)
PAGE_OFFSET = frozenset("offset skip $skip start startindex start_index from".split())
PAGE_NUMBER = frozenset("page pagenumber page_number pageno pagenum pageindex page_index".split())
PAGE_CURSOR = frozenset(
    "pagetoken page_token cursor nexttoken next_token marker continuationtoken "
    "continuation_token starttoken after startingafter starting_after skiptoken $skiptoken "
    "exclusivestartkey pagecursor".split()
)


@dataclass
class Shape:
    """How one operation maps onto the state model."""

    op: Operation
    kind: str
    noun: str
    key: str | None = None
    scopes: list[tuple[str, str | None]] = field(default_factory=list)
    """(path parameter, collection noun it names or ``None``) before the record's own key."""
    record: dict[str, Any] | None = None
    """The record schema this operation reveals (unwrapped response, or the request body)."""
    response: str = "empty"
    """``record`` (the record, maybe wrapped), ``list``, ``fixed`` (another object) or
    ``empty`` (no JSON body)."""
    wrap: str | None = None
    items: str | None = None
    next: str | None = None
    total: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    """Schemas of the other response fields (filled with constant examples)."""
    upsert: bool = False


# -- words ----------------------------------------------------------------------------------
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b|_)|[A-Z]?[a-z]+|[A-Z]+|\d+")


def words(text: str) -> list[str]:
    """``"listBotAliases"`` -> ``["list", "bot", "aliases"]``."""
    return [w.lower() for w in _WORD.findall(text.replace("-", "_"))]


def singular(word: str) -> str:
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith(("sses", "shes", "ches", "xes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def plural(word: str) -> str:
    word = singular(word)
    if word.endswith("y") and len(word) > 2 and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    if word.endswith(("s", "sh", "ch", "x")):
        return word + "es"
    return word + "s"


def collection_name(text: str) -> str:
    """A snake_case plural collection name from a path segment or noun words."""
    parts = words(text)
    if not parts:
        return ""
    parts[-1] = plural(parts[-1])
    return "_".join(parts)[:48]


def fold(name: str) -> str:
    """Case- and separator-insensitive form of a field name."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


# -- response shapes ------------------------------------------------------------------------
def _props(schema: Any) -> dict[str, Any]:
    return schema.get("properties", {}) if isinstance(schema, dict) else {}


def _is_object(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(_props(schema))


def _types(schema: Any) -> set[str]:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return set(kind) if isinstance(kind, list) else {kind} if kind else set()


def list_shape(schema: Any) -> dict[str, Any] | None:
    """``{"items", "item", "next", "total", "meta"}`` when ``schema`` is a list response."""
    if not isinstance(schema, dict):
        return None
    if "array" in _types(schema):
        item = schema.get("items") or {}
        return {"items": None, "item": item, "next": None, "total": None, "meta": {}}
    props = _props(schema)
    arrays = [
        k for k, v in props.items() if "array" in _types(v) and _is_object(v.get("items", {}))
    ]
    if len(arrays) != 1:
        return None
    items = arrays[0]
    rest = {k: v for k, v in props.items() if k != items}
    paging = META_KEYS | set(NEXT_KEYS) | set(TOTAL_KEYS) | PAGE_SIZE | PAGE_OFFSET | PAGE_NUMBER
    if fold(items) not in LIST_KEYS and any(fold(k) not in paging for k in rest):
        return None
    nxt = next((k for k in rest if fold(k) in NEXT_KEYS and "string" in _types(rest[k])), None)
    total = next(
        (k for k in rest if fold(k) in TOTAL_KEYS and _types(rest[k]) & {"integer", "number"}),
        None,
    )
    meta = {k: v for k, v in rest.items() if k not in (nxt, total)}
    return {
        "items": items,
        "item": props[items]["items"],
        "next": nxt,
        "total": total,
        "meta": meta,
    }


def object_shape(schema: Any) -> tuple[str | None, dict[str, Any], dict[str, Any]] | None:
    """``(wrap key, record schema, other fields)`` when ``schema`` is one object."""
    if not _is_object(schema):
        return None
    props = _props(schema)
    inner = [k for k, v in props.items() if fold(k) not in META_KEYS and _is_object(v)]
    plain = [k for k in props if fold(k) not in META_KEYS and "array" not in _types(props[k])]
    if len(plain) == 1 and len(inner) == 1 and len(_props(props[inner[0]])) >= 2:
        wrap = inner[0]
        return wrap, props[wrap], {k: v for k, v in props.items() if k != wrap}
    return None, schema, {}


# -- paths ----------------------------------------------------------------------------------
def path_chain(path: str) -> list[tuple[str | None, str | None]]:
    """``/a/{x}/b`` -> ``[("a", "x"), ("b", None)]``: static segments and the key after each."""
    chain: list[tuple[str | None, str | None]] = []
    for seg in path.split("?")[0].split("#")[0].split("/"):
        if not seg:
            continue
        match = re.search(r"\{\+?([^}]+)\}", seg)
        if match:
            if chain and chain[-1][1] is None and chain[-1][0] is not None:
                chain[-1] = (chain[-1][0], match.group(1))
            else:
                chain.append((None, match.group(1)))
        elif (
            seg.lower() not in SKIP_SEGMENTS
            and "." not in seg
            and ":" not in seg
            and not _VERSION.match(seg)
        ):
            chain.append((seg, None))
    return chain


def _rpc_name(op: Operation) -> str | None:
    """The operation name of RPC-style paths (``/#X-Amz-Target=S.Op``, ``/?Action=Op``)."""
    for marker in ("X-Amz-Target=", "Action="):
        if marker in op.path:
            return op.path.split(marker, 1)[1].split("&")[0].split(".")[-1]
    return None


def verb_and_noun(op: Operation) -> tuple[str | None, str]:
    """(verb class, noun) from the operation id: ``pets.list``, ``ListPets``,
    ``users_info``, ``Customer_AddCustomerAddress``."""
    ident = _rpc_name(op) or op.operation_id
    if "." in ident and " " not in ident:
        parts = [p for p in ident.split(".") if p]
        verb = VERB_CLASSES.get(words(parts[-1])[0] if words(parts[-1]) else "")
        noun = parts[-2] if len(parts) > 1 else ""
        return verb, collection_name(noun)
    tokens = [w for w in words(ident) if w not in _FILLER]
    at = next((i for i, w in enumerate(tokens) if w in VERB_CLASSES), None)
    if at is None:
        return None, collection_name("_".join(tokens[-2:])) if tokens else ""
    verb = VERB_CLASSES[tokens[at]]
    rest = [w for w in tokens[at + 1 :] if w not in VERB_CLASSES]
    for stop in ("for", "by", "from", "in", "of", "with", "to", "on", "at"):
        if stop in rest[1:]:
            rest = rest[: rest.index(stop)]
    rest = [w for w in rest if w not in ("for", "by", "from", "in", "of", "with", "to")]
    if not rest:
        rest = tokens[:at]
    return verb, collection_name("_".join(rest[-2:])) if rest else ""


_FILLER = frozenset("all details detail info or and the a an using".split())


# -- the decision ---------------------------------------------------------------------------
def _body_key(op: Operation, noun: str) -> str | None:
    props = _props(op.body)
    if not props:
        return None
    props = {k: v for k, v in props.items() if _types(v) & {"string", "integer"}}
    stem = fold(singular(noun.split("_")[-1]))
    suffixes = ("id", "arn", "name", "key", "sid", "uuid", "code")
    for name in props:
        if fold(name) in {stem + s for s in suffixes}:
            return name
    required = [r for r in (op.body or {}).get("required", []) if r in props]
    keyish = [n for n in required if fold(n).endswith(suffixes)]
    if len(keyish) == 1:
        return keyish[0]
    return required[0] if len(required) == 1 else None


def shape_operation(op: Operation) -> Shape | str:
    """How ``op`` reads or writes the state, or the reason it cannot be modelled."""
    verb, id_noun = verb_and_noun(op)
    chain = [] if _rpc_name(op) else path_chain(op.path)
    item = bool(chain) and chain[-1][1] is not None
    noun = collection_name(chain[-1][0]) if chain and chain[-1][0] else id_noun
    if not noun:
        noun = collection_name(chain[-1][1]) if chain and chain[-1][1] else id_noun
    noun = noun or "records"
    scopes = [
        (p, collection_name(s) if s and collection_name(s) != noun else None)
        for s, p in chain
        if p is not None
    ]
    key = None
    if item:
        key = scopes.pop()[0]
    listing = list_shape(op.response)
    single = object_shape(op.response) if listing is None else None
    method = op.method

    def action_on_parent() -> Shape | str:
        if len(chain) < 2 or chain[-2][1] is None:
            return "unmodelled action"
        parent_static, parent_key = chain[-2]
        parents = [(p, collection_name(s) if s else None) for s, p in chain[:-2] if p]
        shape = Shape(
            op, "update", collection_name(parent_static or parent_key or ""), parent_key, parents
        )
        return _with_response(shape, listing, single, prefer_record=False)

    if method == "get" or (method == "post" and verb in ("list", "get") and not item):
        if listing is not None:
            if not _is_object(listing["item"]):
                return "list of scalars"
            kind = "search" if _search_arg(op) else "list"
            shape = Shape(op, kind, noun, None, scopes + ([(key, None)] if key else []))
            return _with_response(shape, listing, None)
        if single is None:
            return "untyped response" if op.response is None else "response is not an object"
        if method == "post" and not item:
            key = _body_key(op, noun)
        elif not item:
            key = _query_key(op, noun)
        return _with_response(Shape(op, "get", noun, key, scopes), None, single)
    if method == "delete" or verb == "delete":
        if not item:
            key = _body_key(op, noun) if method != "delete" else None
            if key is None:
                key = next(
                    (
                        p.name
                        for p in op.params
                        if p.required
                        and p.location == "query"
                        and _types(p.schema) & {"string", "integer"}
                    ),
                    None,
                )
            if key is None:
                return "bulk delete"
        return _with_response(Shape(op, "delete", noun, key, scopes), listing, single)
    if method in ("put", "patch"):
        upsert = method == "put" and item and verb in (None, "create", "update")
        if not item:
            if chain and chain[-2:-1] and chain[-2][1] is not None and verb not in ("update",):
                return action_on_parent()
            key = _body_key(op, noun)
        shape = Shape(op, "update", noun, key, scopes, upsert=bool(upsert and item))
        return _with_response(shape, listing, single)
    # POST
    if item:
        return _with_response(Shape(op, "update", noun, key, scopes), listing, single)
    if verb == "update":
        key = _body_key(op, noun)
        if key is None:
            return "update without a key"
        return _with_response(Shape(op, "update", noun, key, scopes), listing, single)
    last = chain[-1][0] if chain else ""
    if chain and len(chain) >= 2 and chain[-2][1] is not None and not _looks_plural(last):
        return action_on_parent()
    if op.body is not None and not _props(op.body):
        return "untyped request body"
    return _with_response(Shape(op, "create", noun, None, scopes), listing, single)


def _query_key(op: Operation, noun: str) -> str | None:
    """A required query parameter that names the record (``?user=U1`` of ``users.info``)."""
    stem = fold(singular(noun.split("_")[-1]))
    names = {stem, stem + "id", stem + "key", stem + "name", "id"}
    for p in op.params:
        if (
            p.location == "query"
            and p.required
            and fold(p.name) in names
            and _types(p.schema) & {"string", "integer"}
        ):
            return p.name
    return None


def _looks_plural(segment: str | None) -> bool:
    parts = words(segment or "")
    return bool(parts) and parts[-1] != singular(parts[-1]) and parts[0] not in VERB_CLASSES


def _search_arg(op: Operation) -> str | None:
    for p in op.params:
        if fold(p.name) in SEARCH_ARGS and "string" in _types(p.schema):
            return p.name
    return None


def _with_response(
    shape: Shape,
    listing: dict[str, Any] | None,
    single: tuple[str | None, dict[str, Any], dict[str, Any]] | None,
    prefer_record: bool = True,
) -> Shape:
    if shape.kind in ("list", "search") and listing is not None:
        shape.response = "list"
        shape.items, shape.next, shape.total = listing["items"], listing["next"], listing["total"]
        shape.meta = listing["meta"]
        shape.record = listing["item"] if _is_object(listing["item"]) else None
    elif single is not None:
        wrap, record, meta = single
        shape.response = "record" if prefer_record else "fixed"
        shape.wrap, shape.meta = wrap, meta
        shape.record = record if prefer_record else None
    elif shape.op.response is not None and shape.op.response != {}:
        shape.response = "fixed"
    if shape.kind in ("create", "update") and shape.record is None and _is_object(shape.op.body):
        shape.record = shape.op.body
    return shape

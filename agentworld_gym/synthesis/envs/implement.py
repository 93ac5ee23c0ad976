"""The ``op`` implementation object of each compiled tool (the format is in
:mod:`agentworld_gym.ops`), and the API's error style.

Constant parts of answers (wrapper fields, acknowledgement bodies, defaults of a new record)
are drawn once here from the spec's schemas with the environment's seeded generator.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.ops import DEFAULT_ERROR
from agentworld_gym.synthesis.envs.infer import Shape, fold
from agentworld_gym.synthesis.envs.model import Arg, CollectionModel
from agentworld_gym.synthesis.envs.seed import Generator, schema_type

_STAMP_CREATED = (
    "createdat",
    "created",
    "createtime",
    "creationtime",
    "creationdate",
    "datecreated",
    "createdtime",
    "createddate",
    "insertedat",
)
_STAMP_UPDATED = (
    "updatedat",
    "updated",
    "updatetime",
    "modified",
    "modifiedat",
    "lastmodified",
    "lastupdated",
    "dateupdated",
    "updatedtime",
    "modifiedtime",
    "lastmodifiedtime",
    "lastmodifieddate",
    "updateddate",
)
_UNIQUE = ("email", "username", "login", "slug", "handle")


def implementation(
    plan_shape: Shape,
    coll: CollectionModel,
    args: dict[str, Arg],
    gen: Generator,
    error: dict[str, Any],
) -> dict[str, Any]:
    s = plan_shape
    impl: dict[str, Any] = {"type": "op", "op": s.kind, "collection": coll.name}
    key = next((n for n, a in args.items() if a.role == "key"), None)
    if key and s.kind != "create":
        impl["key"] = key
    parents = [
        {
            "arg": n,
            "field": a.field,
            **({"collection": coll.scopes[a.field]} if coll.scopes.get(a.field) else {}),
        }
        for n, a in args.items()
        if a.role == "scope"
    ]
    if parents:
        impl["parents"] = parents
    filters = {n: a.field for n, a in args.items() if a.role == "filter"}
    if filters:
        impl["filters"] = filters
    match = {n: a.field for n, a in args.items() if a.role == "match"}
    if match:
        impl["match"] = match
    search = next((n for n, a in args.items() if a.role == "search"), None)
    if search:
        text_fields = [
            k
            for k, v in coll.schema["properties"].items()
            if schema_type(v) == "string" and k != coll.pk
        ][:6]
        impl["search"] = {"arg": search, "fields": text_fields}
    paging = {a.paging: n for n, a in args.items() if a.role == "page"}
    if paging and s.kind in ("list", "search"):
        style = next((st for st in ("cursor", "offset", "page") if st in paging), None)
        size_schema = args[paging["size"]].schema if "size" in paging else {}
        page: dict[str, Any] = {"style": style or "offset"}
        page.update({role: n for role, n in paging.items()})
        page["default"] = (
            int(size_schema.get("x-default") or 20)
            if isinstance(size_schema.get("x-default"), int)
            else 20
        )
        if isinstance(size_schema.get("maximum"), int):
            page["max"] = size_schema["maximum"]
        if "page" in paging:
            page_schema = args[paging["page"]].schema
            page["base"] = (
                0 if page_schema.get("minimum") == 0 or page_schema.get("x-default") == 0 else 1
            )
        impl["page"] = page
    body = {n: a.field for n, a in args.items() if a.role == "body"}
    if body and s.kind in ("create", "update"):
        impl["body"] = body
    if s.kind == "create" or s.upsert:
        impl["key_gen"] = "arg" if s.upsert else coll.key_gen
        if s.upsert:
            impl["upsert"] = True
        provided = {coll.pk} | {a.field for a in args.values() if a.role == "scope"}
        required = {
            k: v
            for k, v in coll.schema["properties"].items()
            if k in coll.schema["required"] and k not in provided
        }
        defaults = {k: gen.value(v, k, coll.noun, 1) for k, v in required.items()}
        if defaults:
            impl["defaults"] = defaults
    if s.kind in ("create", "update"):
        stamp = _stamps(coll, s.kind == "create" or s.upsert)
        if stamp:
            impl["stamp"] = stamp
        unique = [f for f in body.values() if fold(f) in _UNIQUE and f != coll.pk]
        if unique:
            impl["unique"] = unique
    response = _response(s, gen, coll)
    if response:
        impl["response"] = response
    if error != DEFAULT_ERROR:
        impl["error"] = error
    return impl


def _stamps(coll: CollectionModel, creating: bool) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, schema in coll.schema["properties"].items():
        if schema.get("format") != "date-time":
            continue
        key = fold(name)
        if key in _STAMP_UPDATED:
            out.setdefault("updated", []).append(name)
        elif key in _STAMP_CREATED and creating:
            out.setdefault("created", []).append(name)
    return out


def _response(s: Shape, gen: Generator, coll: CollectionModel) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if coll.hidden() and s.response in ("list", "record"):
        out["hide"] = coll.hidden()
    extra = {
        k: gen.value(v, k, coll.noun, 1)
        for k, v in s.meta.items()
        if k in (s.op.response or {}).get("required", []) or k in ("kind", "success")
    }
    if s.response == "list":
        if s.items is not None:
            out["items"] = s.items
        for key in ("next", "total"):
            if getattr(s, key):
                out[key] = getattr(s, key)
        if s.next and s.next in (s.op.response or {}).get("required", []):
            nullable = "null" in str((s.op.response or {})["properties"][s.next].get("type"))
            out["last"] = None if nullable else ""
    elif s.response == "record":
        if s.wrap:
            out["wrap"] = s.wrap
    elif s.response == "fixed":
        out["body"] = gen.value(s.op.response or {}, "", coll.noun, 1)
    elif s.kind in ("delete",):
        out["body"] = {}
    if extra and s.response in ("list", "record"):
        out["extra"] = extra
    return out


def error_template(schemas: list[dict[str, Any] | None]) -> dict[str, Any]:
    """The API's error object with ``{status}``/``{reason}``/``{message}`` placeholders."""
    for schema in schemas:
        template = _error_fill(schema or {}, 0)
        if template and "{message}" in str(template):
            return template
    return DEFAULT_ERROR


def _error_fill(schema: dict[str, Any], depth: int) -> dict[str, Any] | None:
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, sub in props.items():
        key, kind = fold(name), schema_type(sub)
        if kind == "object" and depth == 0 and key in ("error", "errors", "fault"):
            inner = _error_fill(sub, 1)
            if inner:
                out[name] = inner
        elif kind == "string" and key in (
            "message",
            "errormessage",
            "detail",
            "msg",
            "description",
            "errordescription",
            "title",
        ):
            out.setdefault(name, "{message}")
        elif kind == "integer" and key in (
            "code",
            "status",
            "statuscode",
            "httpstatus",
            "errorcode",
            "httpcode",
        ):
            out[name] = "{status}"
        elif kind == "string" and key in (
            "code",
            "error",
            "type",
            "reason",
            "errorcode",
            "status",
            "errortype",
        ):
            out[name] = "{reason}"
    return out or None

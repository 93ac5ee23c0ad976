"""Normalise a real-world OpenAPI document into operations a tool compiler can use.

What happens here, and why:

- Schemas become plain, finite JSON Schema (:mod:`.schemas`: ``$ref`` with a recursion cap,
  ``allOf`` flattened, ``readOnly`` fields out of requests, ``writeOnly`` out of responses).
- Parameters that are transport rather than meaning are dropped: auth (security schemes, API
  keys, tokens), API versions, Google/OData presentation switches, every header and cookie.
- Deprecated operations and those that need binary, multipart or XML bodies, or answer with
  anything but JSON, are dropped with a reason.
- Tool and argument names are made safe for every function-calling API
  (``^[a-zA-Z0-9_-]{1,64}$``; arguments also allow ``.``).

Swagger 2.0 documents are first lifted to the OpenAPI 3 shape
(:func:`.schemas.lift_swagger2`).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentworld_gym.synthesis.envs.schemas import (
    FORM,
    METHODS,
    SchemaConverter,
    clean_text,
    lift_swagger2,
)

_TRANSPORT_PARAMS = frozenset(
    p.casefold()
    for p in (
        "api-version apiversion api_version version v key api_key apikey api-key access_token "
        "accesstoken oauth_token token_auth authorization auth signature sig hapikey "
        "client_secret alt callback fields prettyprint pretty quotauser uploadtype "
        "upload_protocol userip $.xgafv $select $expand $format $count $apply $orderby "
        "$filter jsonp _ action x-amz-target"
    ).split()
)
"""Auth, API-version and presentation parameters (case-insensitive)."""
_JSON_TYPES = ("json", "*/*")


@dataclass
class Param:
    """A path or query parameter the agent fills in."""

    name: str
    location: str
    schema: dict[str, Any]
    required: bool = False
    description: str = ""


@dataclass
class Operation:
    """One callable operation of a normalised spec."""

    method: str
    path: str
    name: str
    operation_id: str
    summary: str
    description: str
    tags: list[str]
    params: list[Param]
    body: dict[str, Any] | None = None
    body_required: bool = False
    response: dict[str, Any] | None = None
    status: int = 200
    error: dict[str, Any] | None = None


@dataclass
class NormSpec:
    """A normalised API description: metadata, operations, and what was dropped and why."""

    key: str
    provider: str
    service: str
    title: str
    description: str
    version: str
    openapi: str
    origin: list[dict[str, Any]]
    license: dict[str, str]
    tags: dict[str, str]
    operations: list[Operation] = field(default_factory=list)
    dropped: Counter[str] = field(default_factory=Counter)


def safe_name(text: str, pattern: str = r"[^a-zA-Z0-9_-]", limit: int = 64) -> str:
    """A name made of allowed characters only, at most ``limit`` long (hash-suffixed if cut)."""
    name = re.sub(r"_+", "_", re.sub(pattern, "_", text)).strip("_-.") or "op"
    if len(name) > limit:
        digest = hashlib.sha1(name.encode()).hexdigest()[:8]
        name = f"{name[: limit - 9].rstrip('_-.')}_{digest}"
    return name


def arg_name(text: str) -> str:
    """A safe argument name (``$filter`` -> ``filter``, ``X-Id`` -> ``X-Id``)."""
    return safe_name(text, r"[^a-zA-Z0-9_.-]")


# -- operations -----------------------------------------------------------------------------
def _security_params(doc: dict[str, Any]) -> set[str]:
    schemes = (doc.get("components") or {}).get("securitySchemes") or {}
    return {
        str(s.get("name", "")).casefold()
        for s in schemes.values()
        if isinstance(s, dict) and s.get("type") == "apiKey"
    }


def _json_content(content: Any) -> tuple[str | None, Any]:
    """(kind, schema) of a content map: kind is json, form, or the blocking media type."""
    if not isinstance(content, dict) or not content:
        return None, None
    for ctype, media in content.items():
        if any(t in ctype for t in _JSON_TYPES):
            return "json", (media or {}).get("schema")
    if FORM in content:
        return "form", (content[FORM] or {}).get("schema")
    return next(iter(content)), None


def _has_binary(schema: Any, depth: int = 0) -> bool:
    if not isinstance(schema, dict) or depth > 3:
        return False
    if schema.get("x-binary"):
        return True
    return any(_has_binary(s, depth + 1) for s in (schema.get("properties") or {}).values())


_BODY_AUTH = frozenset(
    "token access_token api_key apikey oauth_token auth_token client_secret".split()
)


def _without_auth(body: dict[str, Any], blocked: set[str]) -> dict[str, Any]:
    """A request body without credential fields (Slack-style ``token`` form fields)."""
    props = body.get("properties")
    if not props:
        return body
    drop = {k for k in props if k.casefold() in _BODY_AUTH or k.casefold() in blocked}
    if not drop:
        return body
    body = {**body, "properties": {k: v for k, v in props.items() if k not in drop}}
    if "required" in body:
        body["required"] = [r for r in body["required"] if r not in drop]
    return body


def _code(code: Any) -> int:
    """``"201"`` -> 201; wildcards like ``"2XX"`` -> 200."""
    text = str(code)
    return int(text) if text.isdigit() else 200


def _constant(p: Param) -> str | None:
    """The value of a path parameter that is a fixed choice, not data (``{format}=json``)."""
    enum = [v for v in p.schema.get("enum", []) if isinstance(v, str)]
    if len(enum) == 1:
        return enum[0]
    if enum and fold_name(p.name) in ("format", "mediatypeextension", "extension", "ext"):
        return next((v for v in enum if "json" in v.lower()), None)
    return None


def fold_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def normalise(doc: dict[str, Any], key: str) -> NormSpec:
    """Normalise one OpenAPI 3.x (or Swagger 2.0) document; ``key`` is its directory id."""
    if str(doc.get("swagger", "")).startswith("2"):
        doc = lift_swagger2(doc)
    info = doc.get("info") or {}
    lic = info.get("license") if isinstance(info.get("license"), dict) else {}
    spec = NormSpec(
        key=key,
        provider=str(info.get("x-providerName") or key.split("/")[0]),
        service=str(info.get("x-serviceName") or (key.split("/", 1)[1] if "/" in key else "")),
        title=clean_text(info.get("title"), 100) or key,
        description=clean_text(info.get("description"), 400),
        version=str(info.get("version", "")),
        openapi=str(doc.get("openapi") or doc.get("swagger") or ""),
        origin=[o for o in info.get("x-origin") or [] if isinstance(o, dict)],
        license={k: str(lic[k]) for k in ("name", "url") if lic.get(k)},
        tags={
            str(t.get("name")): clean_text(t.get("description"), 160)
            for t in doc.get("tags") or []
            if isinstance(t, dict) and t.get("name")
        },
    )
    conv = SchemaConverter(doc)
    blocked = _TRANSPORT_PARAMS | _security_params(doc)
    names: set[str] = set()
    for path, item in sorted((doc.get("paths") or {}).items()):
        item, _ = conv.deref(item)
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            result = _operation(conv, path, method, op, item, blocked)
            if isinstance(result, str):
                spec.dropped[result] += 1
                continue
            base, n = result.name, 2
            while result.name.casefold() in names:
                suffix = f"_{n}"
                result.name = base[: 64 - len(suffix)] + suffix
                n += 1
            names.add(result.name.casefold())
            spec.operations.append(result)
    return spec


def _operation(
    conv: SchemaConverter, path: str, method: str, op: dict, item: dict, blocked: set[str]
) -> Operation | str:
    """An :class:`Operation`, or the reason it was dropped."""
    if op.get("deprecated"):
        return "deprecated"
    params: list[Param] = []
    seen: set[tuple[str, str]] = set()
    for raw in [*op.get("parameters", []), *item.get("parameters", [])]:
        p, _ = conv.deref(raw)
        if not isinstance(p, dict) or (p.get("name"), p.get("in")) in seen:
            continue
        seen.add((p.get("name"), p.get("in")))
        where = p.get("in")
        if where not in ("path", "query"):
            continue
        name = str(p.get("name", ""))
        if where == "query" and name.casefold() in blocked:
            continue
        schema = conv.convert(p.get("schema") or {"type": p.get("type", "string")}, "request")
        if _has_binary(schema):
            return "binary parameter"
        params.append(
            Param(
                name,
                where,
                schema,
                bool(p.get("required") or where == "path"),
                clean_text(p.get("description"), 160),
            )
        )
    for p in [p for p in params if p.location == "path" and _constant(p)]:
        path = path.replace("{" + p.name + "}", _constant(p) or "")
        params.remove(p)
    body, body_required = None, False
    rb, _ = conv.deref(op.get("requestBody"))
    if isinstance(rb, dict) and rb.get("content"):
        kind, schema = _json_content(rb["content"])
        if kind not in ("json", "form"):
            return (
                "multipart body"
                if "multipart" in str(kind)
                else ("xml-only body" if "xml" in str(kind) else "binary body")
            )
        body = _without_auth(conv.convert(schema or {}, "request"), blocked)
        body_required = bool(rb.get("required"))
        if _has_binary(body):
            return "binary body"
    response, status, error = None, 200, None
    ok_codes = sorted(c for c in (op.get("responses") or {}) if str(c).startswith("2"))
    blocking = None
    for code in ok_codes:
        resp, _ = conv.deref(op["responses"][code])
        content = (resp or {}).get("content") if isinstance(resp, dict) else None
        kind, schema = _json_content(content)
        if kind == "json":
            response, status, blocking = conv.convert(schema or {}, "response"), _code(code), None
            break
        if kind is None:
            status = _code(code)
            blocking = None
            break
        blocking = blocking or kind
    if blocking is not None:
        return "xml-only response" if "xml" in blocking else "non-JSON response"
    for code, resp in (op.get("responses") or {}).items():
        if str(code)[0] in "45" or code == "default":
            resp, _ = conv.deref(resp)
            kind, schema = _json_content((resp or {}).get("content"))
            if kind == "json" and schema:
                error = conv.convert(schema, "response")
                break
    op_id = str(op.get("operationId") or f"{method}_{path}")
    return Operation(
        method=method,
        path=path,
        name=safe_name(op_id),
        operation_id=op_id,
        summary=clean_text(op.get("summary"), 160),
        description=clean_text(op.get("description"), 300),
        tags=[str(t) for t in op.get("tags") or []],
        params=params,
        body=body,
        body_required=body_required,
        response=response,
        status=status,
        error=error,
    )

"""OpenAPI schemas -> plain, bounded JSON Schema (the subset the runtime validates with).

``$ref`` is resolved inline with a recursion cap (a cycle becomes an open ``object``),
``allOf`` is flattened, ``nullable`` becomes a ``null`` type, ``oneOf``/``anyOf`` keep their
first usable branch, unknown formats, regex patterns (ECMA syntax) and examples are dropped,
enums are kept only when their values fit the type; ``readOnly`` fields leave request schemas
and ``writeOnly`` fields leave response schemas. Swagger 2.0 documents are first lifted to
the OpenAPI 3 shape (:func:`lift_swagger2`).
"""

from __future__ import annotations

import copy
import html
import re
from typing import Any

METHODS = ("get", "post", "put", "patch", "delete")
FORM = "application/x-www-form-urlencoded"
MAX_DEPTH = 5
"""Nesting levels kept in a schema; deeper parts become open objects (bounded tool size)."""
FORMATS = frozenset({"date-time", "date", "email", "uuid", "uri", "hostname", "ipv4", "ipv6"})
_KEEP_NUMERIC = ("minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems")


# -- text -----------------------------------------------------------------------------------
_TAG = re.compile(r"<[^>]+>")
_MDLINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def clean_text(text: Any, limit: int = 300) -> str:
    """Plain one-line text: HTML and markdown links stripped, cut at a sentence if possible."""
    if not isinstance(text, str):
        return ""
    text = html.unescape(_MDLINK.sub(r"\1", _TAG.sub(" ", text)))
    text = " ".join(text.replace("`", "").replace("*", "").split())
    if len(text) <= limit:
        return text
    cut = text[:limit]
    stop = cut.rfind(". ")
    return cut[: stop + 1] if stop > limit // 2 else cut.rstrip() + "…"


# -- schemas --------------------------------------------------------------------------------
class SchemaConverter:
    """Resolves ``$ref`` and converts OpenAPI schemas into bounded plain JSON Schema."""

    def __init__(self, doc: dict[str, Any], max_depth: int = MAX_DEPTH) -> None:
        self.doc = doc
        self.max_depth = max_depth

    def deref(self, obj: Any, seen: tuple[str, ...] = ()) -> tuple[Any, tuple[str, ...]]:
        """Follow a chain of ``$ref`` (local ones only); a cycle or dead end gives ``{}``."""
        while isinstance(obj, dict) and isinstance(obj.get("$ref"), str):
            ref = obj["$ref"]
            if ref in seen or not ref.startswith("#/"):
                return {}, seen
            seen = (*seen, ref)
            target: Any = self.doc
            for part in ref[2:].split("/"):
                part = part.replace("~1", "/").replace("~0", "~")
                target = target.get(part) if isinstance(target, dict) else None
            if target is None:
                return {}, seen
            obj = target
        return obj, seen

    def convert(self, schema: Any, mode: str, depth: int = 0, seen: tuple = ()) -> dict:
        """JSON Schema for ``mode`` ``"request"`` or ``"response"``."""
        schema, seen = self.deref(schema, seen)
        if not isinstance(schema, dict):
            return {}
        if depth > self.max_depth:
            return _open(schema)
        if "allOf" in schema:
            return self._all_of(schema, mode, depth, seen)
        nullable = bool(schema.get("nullable") or schema.get("x-nullable"))
        for key in ("oneOf", "anyOf"):
            if isinstance(schema.get(key), list) and "properties" not in schema:
                branches = [self.deref(b, seen)[0] for b in schema[key]]
                usable = [b for b in branches if isinstance(b, dict) and b.get("type") != "null"]
                nullable = nullable or len(usable) < len(branches)
                if not usable:
                    return {}
                out = self.convert(usable[0], mode, depth, seen)
                return _nullable(out) if nullable else out
        out: dict[str, Any] = {}
        kind = schema.get("type")
        if isinstance(kind, list):
            nullable = nullable or "null" in kind
            kind = next((k for k in kind if k != "null"), None)
        if kind is None:
            if "properties" in schema or "additionalProperties" in schema:
                kind = "object"
            elif "items" in schema:
                kind = "array"
            elif schema.get("enum"):
                kind = _type_of(schema["enum"][0])
        if kind not in (None, "object", "array", "string", "integer", "number", "boolean"):
            kind = None
        if kind:
            out["type"] = kind
        desc = clean_text(schema.get("description") or schema.get("title"), 160)
        if desc and depth <= 1:
            out["description"] = desc
        if kind == "object":
            self._object(schema, out, mode, depth, seen)
        elif kind == "array":
            out["items"] = self.convert(schema.get("items", {}), mode, depth + 1, seen)
        fmt = schema.get("format")
        if kind == "string" and fmt in FORMATS:
            out["format"] = fmt
        if kind == "string" and fmt == "binary":
            out["x-binary"] = True
        for key in _KEEP_NUMERIC:
            value = schema.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[key] = value
        enum = _clean_enum(schema.get("enum"), kind)
        if enum:
            out["enum"] = enum
        if schema.get("default") is not None and _fits(schema["default"], kind):
            out["x-default"] = schema["default"]
        return _nullable(out) if nullable else out

    def _object(self, schema: dict, out: dict, mode: str, depth: int, seen: tuple) -> None:
        drop = "readOnly" if mode == "request" else "writeOnly"
        props: dict[str, Any] = {}
        for name, sub in (schema.get("properties") or {}).items():
            resolved, _ = self.deref(sub, seen)
            if isinstance(resolved, dict) and resolved.get(drop):
                continue
            if isinstance(sub, dict) and sub.get(drop):
                continue
            props[str(name)] = self.convert(sub, mode, depth + 1, seen)
        if props:
            out["properties"] = props
            required = [r for r in schema.get("required") or [] if r in props]
            if required:
                out["required"] = list(dict.fromkeys(required))
        extra = schema.get("additionalProperties")
        if extra is False and props:
            out["additionalProperties"] = False
        elif isinstance(extra, dict) and not props:
            value = self.convert(extra, mode, depth + 1, seen)
            if value:
                out["additionalProperties"] = value

    def _all_of(self, schema: dict, mode: str, depth: int, seen: tuple) -> dict:
        merged: dict[str, Any] = {}
        parts = [{k: v for k, v in schema.items() if k != "allOf"}, *schema["allOf"]]
        for part in parts:
            sub = self.convert(part, mode, depth, seen)
            if not sub:
                continue
            props = {**sub.get("properties", {}), **merged.get("properties", {})}
            required = list(dict.fromkeys(merged.get("required", []) + sub.get("required", [])))
            for key, value in sub.items():
                merged.setdefault(key, value)
            if props:
                merged["properties"] = props
                merged["type"] = "object"
            if required:
                merged["required"] = required
        if "properties" in merged and merged.get("additionalProperties") is not False:
            merged.pop("additionalProperties", None)
        return merged


def _open(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if kind == "array" or "items" in schema:
        return {"type": "array"}
    return {"type": kind} if kind in ("string", "integer", "number", "boolean") else {}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    kind = schema.get("type")
    if isinstance(kind, str):
        schema = {**schema, "type": [kind, "null"]}
        if "enum" in schema:
            schema["enum"] = [*schema["enum"], None]
    return schema


def _type_of(value: Any) -> str | None:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return None


def _fits(value: Any, kind: str | None) -> bool:
    actual = _type_of(value)
    return actual is not None and (
        kind is None or actual == kind or (kind == "number" and actual == "integer")
    )


def _clean_enum(values: Any, kind: str | None) -> list[Any]:
    if not isinstance(values, list):
        return []
    kept = [v for v in values if v is not None and _fits(v, kind)]
    return list(dict.fromkeys(kept))[:50]


def lift_swagger2(doc: dict[str, Any]) -> dict[str, Any]:
    """A Swagger 2.0 document in the OpenAPI 3 shape used below (only what we read)."""
    doc = copy.deepcopy(doc)
    comps = doc.setdefault("components", {})
    comps["schemas"] = doc.pop("definitions", {})
    comps["parameters"] = doc.pop("parameters", {})
    produces = doc.get("produces", ["application/json"])
    consumes = doc.get("consumes", ["application/json"])
    for item in (doc.get("paths") or {}).values():
        if not isinstance(item, dict):
            continue
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            params, form = [], {}
            for p in op.get("parameters", []):
                if p.get("in") == "body":
                    ctype = next(iter(op.get("consumes", consumes)), "application/json")
                    op["requestBody"] = {
                        "required": p.get("required", False),
                        "content": {ctype: {"schema": p.get("schema", {})}},
                    }
                elif p.get("in") == "formData":
                    schema = {k: v for k, v in p.items() if k not in ("in", "name", "required")}
                    form[p["name"]] = schema
                else:
                    schema = {k: v for k, v in p.items() if k not in ("in", "name", "required")}
                    params.append(
                        {
                            **{
                                k: p[k] for k in p if k in ("in", "name", "required", "description")
                            },
                            "schema": schema,
                        }
                    )
            if form:
                ctype = next(iter(op.get("consumes", consumes)), FORM)
                op["requestBody"] = {
                    "content": {ctype: {"schema": {"type": "object", "properties": form}}}
                }
            op["parameters"] = params
            for code, resp in (op.get("responses") or {}).items():
                if isinstance(resp, dict) and "schema" in resp:
                    ctype = next(iter(op.get("produces", produces)), "application/json")
                    op["responses"][code] = {
                        "description": resp.get("description", ""),
                        "content": {ctype: {"schema": resp["schema"]}},
                    }
    doc["paths"] = _rewrite_refs(doc.get("paths", {}))
    comps["schemas"] = _rewrite_refs(comps["schemas"])
    return doc


def _rewrite_refs(obj: Any) -> Any:
    if isinstance(obj, dict):
        out = {k: _rewrite_refs(v) for k, v in obj.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            out["$ref"] = "#/components/schemas/" + ref[len("#/definitions/") :]
        return out
    if isinstance(obj, list):
        return [_rewrite_refs(v) for v in obj]
    return obj

"""Compile a group of operations into a state model and declarative ``op`` tools.

Collections come from the nouns :mod:`.infer` found; each collection's record schema is the
union of what the API returns for it (single gets first, then list items, then write
responses) plus the fields its writes accept, so a seeded record satisfies every declared
response. The primary key is the field the key argument names (``petId`` -> ``id``), path
scopes become fields of the record (``/owners/{ownerId}/pets`` -> ``pets.ownerId``), and
fields named after another collection (``ownerId`` next to ``owners``) become references.

Every tool keeps the spec's name, description and parameter schemas; its implementation is a
JSON object for :mod:`agentworld_gym.ops`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agentworld_gym.semantics import classify
from agentworld_gym.spec import ToolSpec
from agentworld_gym.synthesis.envs.implement import error_template, implementation
from agentworld_gym.synthesis.envs.infer import (
    PAGE_CURSOR,
    PAGE_NUMBER,
    PAGE_OFFSET,
    PAGE_SIZE,
    SEARCH_ARGS,
    Shape,
    fold,
    shape_operation,
    singular,
    words,
)
from agentworld_gym.synthesis.envs.model import Arg, CollectionModel, EnvModel, ToolPlan
from agentworld_gym.synthesis.envs.normalize import Operation, arg_name
from agentworld_gym.synthesis.envs.schemas import clean_text
from agentworld_gym.synthesis.envs.seed import Generator, schema_type

TOOL_SCHEMA_DEPTH = 3
"""Nesting kept in tool parameter schemas (deeper parts are open objects)."""
_GENERIC_KEYS = frozenset({"id", "name", "key", "uuid", "slug", "code", "sid"})


# -- schemas --------------------------------------------------------------------------------
def trim_schema(schema: Any, depth: int = 0, top: bool = True) -> dict[str, Any]:
    """A tool-facing copy: ``x-`` annotations removed, nesting cut at TOOL_SCHEMA_DEPTH."""
    if not isinstance(schema, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "x-default" and top:
            out["default"] = value
        elif key.startswith("x-") or (key == "description" and not top):
            continue
        elif key == "properties":
            if depth >= TOOL_SCHEMA_DEPTH:
                continue
            out[key] = {k: trim_schema(v, depth + 1, False) for k, v in value.items()}
        elif key == "items":
            out[key] = trim_schema(value, depth + 1, False) if depth < TOOL_SCHEMA_DEPTH else {}
        elif key == "additionalProperties" and isinstance(value, dict):
            out[key] = trim_schema(value, depth + 1, False) if depth < TOOL_SCHEMA_DEPTH else {}
        else:
            out[key] = value
    if "properties" not in out:
        out.pop("required", None)
        if out.get("additionalProperties") is False:
            out.pop("additionalProperties")
    return out


def _merge_into(target: dict[str, Any], source: dict[str, Any] | None) -> None:
    for name, sub in ((source or {}).get("properties") or {}).items():
        target["properties"].setdefault(name, sub)


def _match_field(name: str, props: dict[str, Any], noun: str = "") -> str | None:
    """The record field an argument names: exact, case/separator-insensitive, or the key
    stem (``petId`` of ``pets`` -> ``id``)."""
    if name in props:
        return name
    folded = {fold(k): k for k in props}
    key = fold(name)
    if key in folded:
        return folded[key]
    stem = fold(singular(noun.split("_")[-1])) if noun else ""
    if stem and key.startswith(stem) and key[len(stem) :] in folded:
        return folded[key[len(stem) :]]
    return None


# -- collections ----------------------------------------------------------------------------
def _collections(shapes: list[Shape]) -> dict[str, CollectionModel]:
    by_noun: dict[str, list[Shape]] = {}
    for s in shapes:
        by_noun.setdefault(s.noun, []).append(s)
    out: dict[str, CollectionModel] = {}
    for noun, group in by_noun.items():
        schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
        core = sorted(
            (s for s in group if s.kind in ("get", "list", "search") and s.record),
            key=lambda s: s.kind != "get",
        )
        for s in core:
            _merge_into(schema, s.record)
        for s in group:
            if s.kind in ("create", "update", "delete") and s.response == "record" and s.record:
                props = set((s.record or {}).get("properties", {}))
                overlap = len(props & set(schema["properties"])) / max(1, len(props))
                if core and overlap < 0.5 and s.op.body is not None:
                    s.response, s.record = "fixed", s.op.body
                elif core and overlap < 0.5:
                    s.response, s.record = "fixed", None
                else:
                    core.append(s)
                    _merge_into(schema, s.record)
        for s in group:
            if s.kind in ("create", "update"):
                _merge_into(schema, s.op.body)
        schema["required"] = list(
            dict.fromkeys(r for s in core for r in (s.record or {}).get("required", []))
        )
        human = " ".join(words(noun)[:-1] + [singular(words(noun)[-1])]) if words(noun) else noun
        closed = any((s.record or {}).get("additionalProperties") is False for s in core)
        out[noun] = CollectionModel(
            noun, human, schema, closed=closed, declared=set(schema["properties"])
        )
        _choose_key(out[noun], group)
    for coll in out.values():
        for f in coll.schema["properties"]:
            stem = fold(f)
            for other in out.values():
                if other is coll or f in coll.scopes:
                    continue
                other_stem = fold(singular(other.name.split("_")[-1]))
                if (
                    stem in (other_stem + "id", other_stem + "key")
                    and f != coll.pk
                    and schema_type(coll.schema["properties"][f])
                    == schema_type(other.schema["properties"].get(other.pk, {}))
                ):
                    coll.references[f] = other.name
    return out


def _choose_key(coll: CollectionModel, group: list[Shape]) -> None:
    props = coll.schema["properties"]
    keys = Counter(s.key for s in group if s.key)
    if keys:
        name = keys.most_common(1)[0][0]
        match = _match_field(name, props, coll.name)
        if match is None and fold(name).endswith("name") and "name" in props:
            match = "name"
        if (
            match is None
            and "id" in props
            and (
                fold(name).endswith("id") or fold(name) == fold(singular(coll.name.split("_")[-1]))
            )
        ):
            match = "id"
        coll.pk = match or name
        if coll.pk not in props:
            source = (
                next((p.schema for s in group for p in s.op.params if p.name == name), None)
                or _body_prop(group, name)
                or {"type": "string"}
            )
            props[coll.pk] = {k: v for k, v in source.items() if k != "description"}
    else:
        coll.pk = next((k for k in ("id", "uuid", "key", "name") if k in props), "id")
        props.setdefault(coll.pk, {"type": "string"})
    pk_schema = props[coll.pk]
    param = next((p.schema for s in group for p in s.op.params if p.name == s.key), {})
    if param.get("enum") and schema_type(param) == "string":
        props[coll.pk] = pk_schema = {"type": "string", "enum": list(param["enum"])}
    elif schema_type(param) == "integer" and schema_type(pk_schema) not in ("integer", "number"):
        props[coll.pk] = pk_schema = {"type": "integer"}
    elif schema_type(pk_schema) == "number":
        pass  # integer keys are valid numbers
    elif pk_schema.get("enum") or schema_type(pk_schema) not in ("string", "integer"):
        props[coll.pk] = pk_schema = {"type": "string"}
    if coll.pk not in coll.schema["required"]:
        coll.schema["required"].insert(0, coll.pk)
    upsert = any(s.upsert for s in group)
    creates = [s for s in group if s.kind == "create"]
    in_body = any(coll.pk in (s.op.body or {}).get("properties", {}) for s in creates)
    if upsert or in_body:
        coll.key_gen = "arg"
    elif schema_type(pk_schema) in ("integer", "number"):
        coll.key_gen = "int"
    else:
        lo, hi = pk_schema.get("minLength", 0), pk_schema.get("maxLength", 64)
        coll.key_gen = "uuid" if lo <= 36 <= hi else f"hex:{max(lo, min(hi, 32))}"


def _body_prop(group: list[Shape], name: str) -> dict[str, Any] | None:
    for s in group:
        prop = ((s.op.body or {}).get("properties") or {}).get(name)
        if prop:
            return prop
    return None


# -- tools ----------------------------------------------------------------------------------
def _page_role(name: str, schema: dict[str, Any]) -> str | None:
    """size | offset | page | cursor when the argument pages a list (by name and type)."""
    kind = schema_type(schema)
    for role, names in (
        ("size", PAGE_SIZE),
        ("offset", PAGE_OFFSET),
        ("page", PAGE_NUMBER),
        ("cursor", PAGE_CURSOR),
    ):
        if fold(name) in {fold(n) for n in names}:
            wanted = ("string",) if role == "cursor" else ("integer",)
            return role if kind in wanted else None
    return None


def _scope_field(name: str, parent: str | None, coll: CollectionModel) -> str:
    """The record field a path scope is stored in (``/owners/{id}/pets`` -> ``owner_id``)."""
    props = coll.schema["properties"]
    fld = _match_field(name, props, "")
    if fold(name) in _GENERIC_KEYS or fld == coll.pk:
        base = singular(parent.split("_")[-1]) if parent else "parent"
        fld = _match_field(f"{base}_{name}", props) or f"{base}_{name}"
    return fld or name


def _read_role(
    name: str, schema: dict[str, Any], required: bool, fld: str | None, listing: bool
) -> tuple[str, str | None, str | None]:
    """(role, field, paging) of a query/body argument of a read."""
    paging = _page_role(name, schema) if listing else None
    if paging:
        return "page", None, paging
    if listing and fold(name) in SEARCH_ARGS and schema_type(schema) == "string":
        return "search", None, None
    if fld is not None or required:
        return ("filter" if listing else "match"), fld or name, None
    return "ignored", None, None


def _plan_args(shape: Shape, coll: CollectionModel) -> dict[str, Arg] | str:
    """Arguments of the tool for ``shape`` with the role each plays in the operation."""
    op, props = shape.op, coll.schema["properties"]
    args: dict[str, Arg] = {}
    scopes = dict(shape.scopes)

    def add(
        name: str,
        location: str,
        schema: dict[str, Any],
        role: str,
        fld: str | None,
        required: bool,
        paging: str | None = None,
    ) -> None:
        safe = arg_name(name)
        while safe in args:
            safe = arg_name(f"{location}_{safe}")
        args[safe] = Arg(safe, location, schema, fld, role, required, paging)
        if fld is not None and role in ("scope", "filter", "match"):
            props.setdefault(fld, {k: v for k, v in schema.items() if k != "description"})

    for p in op.params:
        if p.location != "path":
            continue
        schema = p.schema or {"type": "string"}
        if p.name == shape.key:
            add(p.name, "path", schema, "key", coll.pk, True)
        elif p.name in scopes:
            fld = _scope_field(p.name, scopes[p.name], coll)
            add(p.name, "path", schema, "scope", fld, True)
            coll.scopes.setdefault(fld, scopes[p.name])
        else:
            return f"path parameter {p.name!r} has no meaning in the state model"
    inputs = [(p.name, p.schema, p.required, "query") for p in op.params if p.location == "query"]
    body_required = set((op.body or {}).get("required", []))
    for name, schema in ((op.body or {}).get("properties") or {}).items():
        required = name in body_required and (op.body_required or shape.kind == "create")
        inputs.append((name, schema, required, "body"))
    reading = shape.kind in ("list", "search", "get")
    for name, schema, required, location in inputs:
        if name == shape.key and shape.kind != "create":
            add(name, location, schema, "key", coll.pk, True)
            continue
        fld = _match_field(name, props, coll.name if location == "query" else "")
        if reading:
            role, fld, paging = _read_role(name, schema, required, fld, shape.kind != "get")
            add(name, location, schema, role, fld, required, paging)
        elif location == "body" or fld is not None:
            add(name, location, schema, "body", fld or name, required)
        else:
            add(name, location, schema, "ignored", None, required)
    if shape.kind == "create" and coll.key_gen == "arg" and not shape.upsert:
        key_args = [a for a in args.values() if a.field == coll.pk and a.role == "body"]
        if not key_args:
            return "create cannot set the primary key"
        key_args[0].required = True
    return args


def _parameters(args: dict[str, Arg]) -> dict[str, Any]:
    props = {name: trim_schema(a.schema) for name, a in args.items()}
    required = [name for name, a in args.items() if a.required]
    params: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        params["required"] = required
    params["additionalProperties"] = False
    return params


def _description(op: Operation) -> str:
    text = op.summary
    if op.description and not op.description.startswith(text.rstrip(".")):
        text = f"{text.rstrip('.')}. {op.description}" if text else op.description
    text = clean_text(text, 300) or f"{op.method.upper()} {op.path}"
    return text


def build_model(ops: list[Operation], gen: Generator) -> EnvModel:
    """The state model and tools of one environment's operations."""
    dropped: Counter[str] = Counter()
    shapes: list[Shape] = []
    for op in ops:
        shape = shape_operation(op)
        if isinstance(shape, str):
            dropped[shape] += 1
        else:
            shapes.append(shape)
    collections = _collections(shapes)
    error = error_template([op.error for op in ops])
    tools: list[ToolPlan] = []
    for shape in shapes:
        coll = collections[shape.noun]
        args = _plan_args(shape, coll)
        if isinstance(args, str):
            dropped[args] += 1
            continue
        spec = ToolSpec(
            name=shape.op.name,
            description=_description(shape.op),
            parameters=_parameters(args),
            implementation={},
            kind="read" if shape.kind in ("get", "list", "search") else "write",
        )
        tools.append(ToolPlan(shape, spec, args))
    for plan in tools:
        coll = collections[plan.shape.noun]
        plan.spec.implementation = implementation(plan.shape, coll, plan.args, gen, error)
        op = plan.shape.op
        plan.spec.semantics = classify(
            op.method,
            op.path,
            op.operation_id,
            op.summary,
            plan.spec.description,
            str(plan.spec.implementation.get("op") or ""),
            str(plan.spec.implementation.get("collection") or ""),
        ).to_dict()
    used = {p.shape.noun for p in tools}
    collections = {k: v for k, v in collections.items() if k in used}
    for coll in collections.values():
        coll.scopes = {f: (c if c in collections else None) for f, c in coll.scopes.items()}
        coll.references = {
            f: c for f, c in coll.references.items() if c in collections and f not in coll.scopes
        }
    for plan in tools:
        for parent in plan.spec.implementation.get("parents", []):
            if parent.get("collection") not in collections:
                parent.pop("collection", None)
    return EnvModel(collections, tools, error, dropped)

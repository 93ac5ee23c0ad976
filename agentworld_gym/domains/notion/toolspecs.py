"""Turn the OpenAPI fragments of :mod:`.openapi` into tool specs, as the MCP server does.

The official server names each tool ``API-<operationId>``, describes it with the operation's
summary plus its error responses, and builds the argument schema from the path/query parameters
and the JSON body. Its converter keeps only ``type``, ``format``, ``description``, ``enum``,
``default``, ``properties``, ``required``, ``additionalProperties`` (``true`` unless the source
says otherwise), ``items`` and ``oneOf``/``anyOf``/``allOf``; everything else (``maxItems``,
``const``, ``maxLength``) is dropped. We do the same, except that ``$ref`` nodes are inlined
instead of pointing into ``$defs``, so every schema stands alone.
"""

from __future__ import annotations

import copy
from typing import Any

from agentworld_gym.domains.notion.openapi import COMPONENTS, OPERATIONS

ENTRYPOINT_MODULE = "agentworld_gym.domains.notion.tools"

WRITE_OPERATIONS = frozenset(
    {
        "patch-block-children",
        "update-a-block",
        "delete-a-block",
        "patch-page",
        "post-page",
        "create-a-database",
        "update-a-database",
        "create-a-comment",
    }
)


def convert_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """One OpenAPI schema → the JSON Schema the MCP server publishes (``$ref`` inlined)."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return convert_schema(COMPONENTS[name])
    out: dict[str, Any] = {}
    for key in ("type", "format", "description", "enum", "default"):
        if key in schema:
            out[key] = copy.deepcopy(schema[key])
    if schema.get("type") == "object":
        if "properties" in schema:
            out["properties"] = {k: convert_schema(v) for k, v in schema["properties"].items()}
        if "required" in schema:
            out["required"] = list(schema["required"])
        extra = schema.get("additionalProperties")
        if extra is None or extra is True:
            out["additionalProperties"] = True
        elif isinstance(extra, dict):
            out["additionalProperties"] = convert_schema(extra)
        else:
            out["additionalProperties"] = False
    if schema.get("type") == "array" and "items" in schema:
        out["items"] = convert_schema(schema["items"])
    for key in ("oneOf", "anyOf", "allOf"):
        if key in schema:
            out[key] = [convert_schema(s) for s in schema[key]]
    return out


def _input_schema(op: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in op.get("parameters", []):
        schema = convert_schema(param["schema"])
        if param.get("description"):
            schema["description"] = param["description"]
        properties[param["name"]] = schema
        if param.get("required"):
            required.append(param["name"])
    body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
    if body is not None:
        converted = convert_schema(body)
        properties.update(converted.get("properties", {}))
        required.extend(converted.get("required", []))
    return {"type": "object", "properties": properties, "required": required}


def _description(op: dict[str, Any]) -> str:
    text = op.get("summary") or op.get("description") or ""
    errors = [
        f"{code}: {resp.get('description', '')}"
        for code, resp in op.get("responses", {}).items()
        if code.startswith(("4", "5"))
    ]
    if errors:
        text += "\nError Responses:\n" + "\n".join(errors)
    return text


def python_name(operation_id: str) -> str:
    """``get-block-children`` → ``get_block_children`` (the implementing function)."""
    return operation_id.replace("-", "_")


def tool_specs() -> list[dict[str, Any]]:
    """The 19 tools as ``ToolSpec`` dicts (name, description, parameters, kind, entrypoint)."""
    return [
        {
            "name": f"API-{op['operationId']}",
            "description": _description(op),
            "parameters": _input_schema(op),
            "implementation": {
                "type": "python",
                "entrypoint": f"{ENTRYPOINT_MODULE}:{python_name(op['operationId'])}",
            },
            "kind": "write" if op["operationId"] in WRITE_OPERATIONS else "read",
        }
        for op in OPERATIONS
    ]

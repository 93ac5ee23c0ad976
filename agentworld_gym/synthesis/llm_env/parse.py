"""Read an LLM's stage replies: find the JSON, check its shape, say precisely what is wrong.

Model output is untrusted. Every function here returns what it could use *and* a list of
reasons for what it could not; none raises on bad output, so a weak model's reply becomes a
clean rejection rather than a crash.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import fastjsonschema

_THINK = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_FENCE = re.compile(r"```(?:json)?\s*\n(.*?)```", re.DOTALL)
_COLLECTION = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_TOOL = re.compile(r"^[a-z][a-z0-9_-]{1,63}$")
_TEST = re.compile(r"^test_\w{1,80}$")
MAX_RECORDS = 500
MAX_DB_BYTES = 2_000_000


@dataclass
class Design:
    name: str
    description: str
    collections: list[dict[str, Any]]
    """``[{name, description, fields, records}]``."""


@dataclass
class ToolDraft:
    name: str
    description: str
    parameters: dict[str, Any]
    code: str

    @property
    def function(self) -> str:
        return self.name.replace("-", "_")


@dataclass
class TestDraft:
    tool: str
    name: str
    code: str


@dataclass
class TaskDraft:
    task: str
    criteria: list[str]
    chain: list[dict[str, Any]]


@dataclass
class Parsed:
    """What a reply yielded, and why the rest was refused."""

    value: Any = None
    reasons: list[str] = field(default_factory=list)


def extract_json(text: str, key: str) -> Parsed:
    """The first JSON object in ``text`` that has ``key`` (fenced, bare, or amid prose)."""
    if not isinstance(text, str) or not text.strip():
        return Parsed(None, ["the reply is empty"])
    body = _THINK.sub("", text)
    candidates = [m.group(1) for m in _FENCE.finditer(body)] + [body]
    decoder = json.JSONDecoder()
    seen_object = False
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except (ValueError, RecursionError):
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                seen_object = True
                if key in value:
                    return Parsed(value)
            start = candidate.find("{", start + 1)
    if seen_object:
        return Parsed(None, [f"the JSON object in the reply has no {key!r} key"])
    snippet = " ".join(body.split())[:120]
    return Parsed(None, [f"no JSON object found in the reply (it starts {snippet!r})"])


def _text(value: Any, what: str, reasons: list[str], limit: int = 4000) -> str:
    if not isinstance(value, str) or not value.strip():
        reasons.append(f"{what} must be a non-empty string")
        return ""
    return value.strip()[:limit]


def check_design(data: dict[str, Any], min_collections: int = 1) -> Parsed:
    """A :class:`Design` from the design stage's JSON."""
    reasons: list[str] = []
    name = _text(data.get("name"), "design.name", reasons, 80)
    description = _text(data.get("description"), "design.description", reasons, 1000)
    raw = data.get("collections")
    if not isinstance(raw, list) or not raw:
        return Parsed(None, [*reasons, "design.collections must be a non-empty list"])
    collections, names = [], set()
    for i, col in enumerate(raw):
        where = f"design.collections[{i}]"
        if not isinstance(col, dict):
            reasons.append(f"{where} must be an object")
            continue
        cname = col.get("name")
        if not isinstance(cname, str) or not _COLLECTION.match(cname):
            reasons.append(f"{where}.name {cname!r} must be lowercase snake_case")
            continue
        if cname in names:
            reasons.append(f"{where}: collection {cname!r} is defined twice")
            continue
        records = col.get("records", [])
        if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
            reasons.append(f"{where} ({cname}).records must be a list of objects")
            continue
        if len(records) > MAX_RECORDS:
            reasons.append(f"{where} ({cname}) has {len(records)} records; at most {MAX_RECORDS}")
            continue
        fields = col.get("fields") if isinstance(col.get("fields"), dict) else {}
        names.add(cname)
        collections.append(
            {
                "name": cname,
                "description": str(col.get("description", ""))[:500],
                "fields": fields,
                "records": records,
            }
        )
    fatal = []
    if len(collections) < min_collections:
        fatal.append(f"the design has {len(collections)} usable collection(s)")
    elif len(json.dumps([c["records"] for c in collections])) > MAX_DB_BYTES:
        fatal.append(f"the records exceed {MAX_DB_BYTES} bytes of JSON")
    elif not any(c["records"] for c in collections):
        fatal.append("every collection is empty: the database needs records")
    if fatal or not name or not description:
        return Parsed(None, reasons + fatal)
    return Parsed(Design(name, description, collections), reasons)


def check_tools(data: dict[str, Any], max_tools: int = 16) -> Parsed:
    """:class:`ToolDraft` list; malformed tools are dropped with a reason each."""
    raw = data.get("tools")
    if not isinstance(raw, list) or not raw:
        return Parsed([], ["tools must be a non-empty list"])
    tools, reasons, names = [], [], set()
    for i, item in enumerate(raw[:max_tools]):
        where = f"tools[{i}]"
        if not isinstance(item, dict):
            reasons.append(f"{where} must be an object")
            continue
        name = item.get("name")
        if not isinstance(name, str) or not _TOOL.match(name):
            reasons.append(f"{where}.name {name!r} must look like 'list-orders'")
            continue
        if name in names or name.replace("-", "_") in {n.replace("-", "_") for n in names}:
            reasons.append(f"tool {name!r} is defined twice")
            continue
        params = item.get("parameters")
        if not isinstance(params, dict) or params.get("type", "object") != "object":
            reasons.append(f"tool {name!r}: parameters must be a JSON Schema of type object")
            continue
        try:
            fastjsonschema.compile(params)
        except (fastjsonschema.JsonSchemaDefinitionException, TypeError, ValueError) as exc:
            reasons.append(f"tool {name!r}: invalid parameter schema: {exc}")
            continue
        code = item.get("code")
        function = name.replace("-", "_")
        if not isinstance(code, str) or not re.search(rf"^def\s+{function}\s*\(", code, re.M):
            reasons.append(f"tool {name!r}: code must define def {function}(...)")
            continue
        names.add(name)
        desc = str(item.get("description", "")).strip()[:2000] or name
        tools.append(ToolDraft(name, desc, params, code))
    if len(raw) > max_tools:
        reasons.append(f"only the first {max_tools} of {len(raw)} tools were considered")
    return Parsed(tools, reasons)


def check_tests(data: dict[str, Any], tools: list[ToolDraft], max_per_tool: int = 6) -> Parsed:
    """:class:`TestDraft` list for known tools; a test must call its tool and assert."""
    raw = data.get("tests")
    if not isinstance(raw, list) or not raw:
        return Parsed([], ["tests must be a non-empty list"])
    by_name = {t.name: t for t in tools}
    tests, reasons, counts, seen = [], [], dict.fromkeys(by_name, 0), set()
    for i, item in enumerate(raw):
        where = f"tests[{i}]"
        if not isinstance(item, dict):
            reasons.append(f"{where} must be an object")
            continue
        tool, name, code = item.get("tool"), item.get("name"), item.get("code")
        if tool not in by_name:
            reasons.append(f"{where} tests an unknown tool {tool!r}")
            continue
        if not isinstance(name, str) or not _TEST.match(name) or name in seen:
            reasons.append(f"{where}.name {name!r} must be a unique test_<name>")
            continue
        if not isinstance(code, str) or not re.search(rf"^def\s+{name}\s*\(\s*\)", code, re.M):
            reasons.append(f"{where} ({name}): code must define def {name}()")
            continue
        if by_name[tool].function + "(" not in code.replace(" (", "("):
            reasons.append(f"{where} ({name}) never calls {by_name[tool].function}()")
            continue
        if "assert" not in code:
            reasons.append(f"{where} ({name}) checks nothing (no assert)")
            continue
        if counts[tool] >= max_per_tool:
            continue
        counts[tool] += 1
        seen.add(name)
        tests.append(TestDraft(tool, name, code))
    return Parsed(tests, reasons)


def check_tasks(data: dict[str, Any], max_tasks: int = 8) -> Parsed:
    """:class:`TaskDraft` list (the chains are checked later, by replaying them)."""
    raw = data.get("tasks", [])
    if not isinstance(raw, list):
        return Parsed([], ["tasks must be a list"])
    tasks, reasons = [], []
    for i, item in enumerate(raw[:max_tasks]):
        where = f"tasks[{i}]"
        if not isinstance(item, dict) or not isinstance(item.get("task"), str):
            reasons.append(f"{where} must be an object with a 'task' string")
            continue
        criteria = item.get("success_criteria", [])
        chain = item.get("verified_tool_chain")
        if not isinstance(criteria, list) or not all(isinstance(c, str) for c in criteria):
            reasons.append(f"{where}.success_criteria must be a list of strings")
            continue
        if (
            not isinstance(chain, list)
            or not chain
            or not all(isinstance(s, dict) and isinstance(s.get("tool"), str) for s in chain)
            or not all(isinstance(s.get("args", {}), dict) for s in chain)
        ):
            reasons.append(f"{where}.verified_tool_chain must be a list of {{tool, args}}")
            continue
        steps = [{"tool": s["tool"], "args": s.get("args", {})} for s in chain]
        tasks.append(TaskDraft(item["task"].strip(), list(criteria), steps))
    return Parsed(tasks, reasons)

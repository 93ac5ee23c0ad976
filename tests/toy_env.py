"""A tiny tracker environment for tests of the core runtime."""

from __future__ import annotations

from typing import Any

from agentworld_gym.database import copy_record
from agentworld_gym.errors import ToolExecutionError
from agentworld_gym.spec import EnvSpec, RuntimeSpec, TaskSpec, ToolSpec
from agentworld_gym.tools import ToolContext

ITEMS = [
    {"id": "i1", "title": "Write docs", "status": "open", "points": 3, "tags": ["docs"]},
    {"id": "i2", "title": "Fix bug ✓ ünïcode", "status": "open", "points": 5, "tags": ["bug"]},
    {"id": "i3", "title": "Ship release", "status": "done", "points": 8, "tags": []},
]


def _not_found(item_id: str) -> ToolExecutionError:
    body = {"error": {"status": 404, "message": f"item {item_id} not found"}}
    return ToolExecutionError(f"item {item_id} not found", body=body)


def get_item(ctx: ToolContext, item_id: str) -> dict[str, Any]:
    rec = ctx.db.get("items", item_id)
    if rec is None:
        raise _not_found(item_id)
    return rec


def list_items(ctx: ToolContext, status: str | None = None) -> dict[str, Any]:
    rows = [r for r in ctx.db.scan("items") if status in (None, r["status"])]
    return {"items": rows, "count": len(rows)}


def create_item(ctx: ToolContext, title: str, points: int = 1) -> dict[str, Any]:
    rec = {
        "id": ctx.new_id(),
        "title": title,
        "status": "open",
        "points": points,
        "tags": [],
        "created": ctx.now_iso(),
    }
    return ctx.db.insert("items", rec)


def set_status(ctx: ToolContext, item_id: str, status: str) -> dict[str, Any]:
    rec = ctx.db.get("items", item_id)
    if rec is None:
        raise _not_found(item_id)
    rec = copy_record(rec)
    rec["status"] = status
    return ctx.db.put("items", rec)


def crash_after_write(ctx: ToolContext, item_id: str) -> None:
    rec = copy_record(ctx.db.get("items", item_id))
    rec["status"] = "corrupted"
    ctx.db.put("items", rec)
    raise ValueError("boom after writing")


def _tool(name: str, params: dict[str, Any], required: list[str], kind: str = "read") -> ToolSpec:
    return ToolSpec(
        name=name,
        description=f"{name} tool",
        parameters={"type": "object", "properties": params, "required": required},
        implementation={"type": "python", "entrypoint": f"toy_env:{name}"},
        kind=kind,
    )


S = {"type": "string"}


def make_spec() -> EnvSpec:
    tools = [
        _tool("get_item", {"item_id": S}, ["item_id"]),
        _tool("list_items", {"status": {"type": "string", "enum": ["open", "done"]}}, []),
        _tool(
            "create_item",
            {"title": S, "points": {"type": "integer", "minimum": 0}},
            ["title"],
            "write",
        ),
        _tool(
            "set_status",
            {"item_id": S, "status": {"type": "string", "enum": ["open", "done"]}},
            ["item_id", "status"],
            "write",
        ),
        _tool("crash_after_write", {"item_id": S}, ["item_id"], "write"),
    ]
    tasks = [
        TaskSpec(
            id="close-i1",
            instruction="Mark the documentation item as done and tell me its points.",
            verifier={
                "type": "rubric",
                "criteria": [
                    {
                        "text": "i1 is done",
                        "weight": 2,
                        "check": {
                            "type": "record",
                            "collection": "items",
                            "key": "i1",
                            "path": "status",
                            "equals": "done",
                        },
                    },
                    {
                        "text": "answer gives 3 points",
                        "weight": 1,
                        "check": {"type": "answer_equals", "value": 3},
                    },
                    {
                        "text": "set_status was used",
                        "weight": 1,
                        "check": {
                            "type": "tool_called",
                            "name": "set_status",
                            "arguments": {"item_id": "i1"},
                        },
                    },
                ],
            },
            gold={
                "type": "tool_chain",
                "calls": [
                    {"name": "set_status", "arguments": {"item_id": "i1", "status": "done"}},
                    {"name": "get_item", "arguments": {"item_id": "$0.id"}},
                ],
                "answer": "3 points",
            },
            reference_answer="3 points",
        ),
        TaskSpec(
            id="count-open",
            instruction="How many items are open?",
            verifier={
                "type": "rubric",
                "criteria": [
                    {"text": "answer is 2", "check": {"type": "answer_equals", "value": 2}},
                    {
                        "text": "nothing changed",
                        "check": {
                            "type": "count",
                            "collection": "items",
                            "where": {"status": "open"},
                            "equals": 2,
                        },
                    },
                ],
            },
            gold={
                "type": "tool_chain",
                "calls": [{"name": "list_items", "arguments": {"status": "open"}}],
                "answer": "2",
            },
            reference_answer="2",
            split="test",
        ),
        TaskSpec(
            id="script-new",
            instruction="Create an item titled 'Plan Q3' worth 13 points.",
            verifier={
                "type": "script",
                "timeout_s": 5,
                "source": (
                    "def verify(initial_state, final_state, answer):\n"
                    "    new = [i for i in final_state['items'] if i['title'] == 'Plan Q3']\n"
                    "    return len(initial_state['items']) == 3 and len(new) == 1 "
                    "and new[0]['points'] == 13\n"
                ),
            },
            gold={
                "type": "tool_chain",
                "calls": [{"name": "create_item", "arguments": {"title": "Plan Q3", "points": 13}}],
                "answer": "done",
            },
        ),
    ]
    return EnvSpec(
        id="toy",
        name="Toy Tracker",
        description="Items with a status.",
        tools=tools,
        tasks=tasks,
        records={"items": ITEMS, "settings": {"owner": "ada"}},
        # pays an answer alone: tiny test models that cannot call tools still get a reward
        runtime=RuntimeSpec(max_turns=5, answer_needs_call=False, answer_needs_evidence=False),
    )

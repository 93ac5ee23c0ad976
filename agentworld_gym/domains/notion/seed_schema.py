"""Property schemas of the seeded Projects, Tasks and Meeting Notes databases."""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion import seed_data as data
from agentworld_gym.domains.notion.objects import rich_text, stable_id
from agentworld_gym.domains.notion.properties import option_id, property_id

Record = dict[str, Any]
DB_KEYS = {"projects": "Projects", "tasks": "Tasks", "meetings": "Meeting Notes"}


def _database_id(key: str) -> str:
    return stable_id("database", key)


def title_value(text: str) -> Record:
    return {"id": "title", "type": "title", "title": rich_text(text)}


def _options(db: str, prop: str, entries: list[tuple]) -> list[Record]:
    return [
        {"id": option_id(db, prop, e[0]), "name": e[0], "color": e[1], "description": None}
        for e in entries
    ]


def _status_schema(db: str, entries: list[tuple]) -> Record:
    options = _options(db, "Status", entries)
    groups: dict[str, list[str]] = {}
    for opt, entry in zip(options, entries, strict=True):
        groups.setdefault(entry[2], []).append(opt["id"])
    colors = {"To-do": "gray", "In progress": "blue", "Complete": "green"}
    return {
        "options": options,
        "groups": [
            {
                "id": option_id(db, "Status", f"group:{g}"),
                "name": g,
                "color": colors[g],
                "option_ids": members,
            }
            for g, members in groups.items()
        ],
    }


def schemas() -> dict[str, Record]:
    """Property schemas of the three seeded databases, in display order."""

    def prop(db: str, name: str, kind: str, body: Record | None = None) -> Record:
        pid = "title" if kind == "title" else property_id(db, name)
        return {"id": pid, "name": name, "type": kind, kind: body or {}}

    def rel(db: str, name: str, target: str) -> Record:
        return prop(
            db,
            name,
            "relation",
            {
                "database_id": _database_id(target),
                "type": "single_property",
                "single_property": {},
            },
        )

    specs = {
        "projects": [
            prop("projects", "Name", "title"),
            prop("projects", "Status", "status", _status_schema("projects", data.PROJECT_STATUS)),
            prop("projects", "Owner", "people"),
            prop(
                "projects",
                "Priority",
                "select",
                {"options": _options("projects", "Priority", data.PRIORITIES)},
            ),
            prop(
                "projects",
                "Tags",
                "multi_select",
                {"options": _options("projects", "Tags", data.TAGS)},
            ),
            prop("projects", "Start", "date"),
            prop("projects", "Due", "date"),
            prop("projects", "Budget", "number", {"format": "dollar"}),
            prop("projects", "Active", "checkbox"),
        ],
        "tasks": [
            prop("tasks", "Name", "title"),
            prop("tasks", "Status", "status", _status_schema("tasks", data.TASK_STATUS)),
            prop("tasks", "Assignee", "people"),
            rel("tasks", "Project", "projects"),
            prop("tasks", "Due", "date"),
            prop("tasks", "Estimate", "number", {"format": "number"}),
            prop(
                "tasks",
                "Labels",
                "multi_select",
                {"options": _options("tasks", "Labels", data.LABELS)},
            ),
            prop("tasks", "Done", "checkbox"),
        ],
        "meetings": [
            prop("meetings", "Name", "title"),
            prop("meetings", "Date", "date"),
            prop(
                "meetings",
                "Type",
                "select",
                {"options": _options("meetings", "Type", data.MEETING_TYPES)},
            ),
            prop("meetings", "Attendees", "people"),
            rel("meetings", "Project", "projects"),
            prop("meetings", "Summary", "rich_text"),
        ],
    }
    return {db: {p["name"]: p for p in props} for db, props in specs.items()}

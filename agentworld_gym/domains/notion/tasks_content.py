"""notion-v0 tasks that edit page content (blocks, sub-pages, icons) and database schemas."""

from __future__ import annotations

import json
from typing import Any

from agentworld_gym.domains.notion.taskkit import (
    DB,
    NO_WRITE,
    PAGE,
    PROJECT,
    block_id,
    call,
    called,
    count,
    crit,
    record,
    rt,
    rubric,
    script,
    search_and_read,
    set_props,
    task,
)


def content_tasks() -> list[dict[str, Any]]:
    return _content_writes() + _schema_writes()


def _content_writes() -> list[dict[str, Any]]:
    out = []
    weekly = PAGE["weekly-status"]
    bullet = "Atlas: Apple Pay still needs an owner"
    out.append(
        task(
            "notion-w10",
            f"Add a bullet point '{bullet}' at the end of the Weekly Status Updates page.",
            [
                call("post-search", query="Weekly Status Updates"),
                call(
                    "patch-block-children",
                    block_id=weekly,
                    children=[
                        {
                            "type": "bulleted_list_item",
                            "bulleted_list_item": {"rich_text": rt(bullet)},
                        }
                    ],
                ),
            ],
            "Added the bullet.",
            rubric(
                crit(
                    "The bullet is on the page",
                    3,
                    count(
                        {
                            "parent.page_id": weekly,
                            "type": "bulleted_list_item",
                            "archived": False,
                            "bulleted_list_item.rich_text.0.plain_text": {
                                "$contains": "Apple Pay still needs"
                            },
                        },
                        1,
                        collection="blocks",
                    ),
                ),
                crit("Appended block children", 1, called("patch-block-children")),
            ),
            wrong=NO_WRITE,
        )
    )

    docker, python, node = (block_id("dev-setup", i) for i in ("1", "2", "3"))
    out.append(
        task(
            "notion-w11",
            "I've installed Docker Desktop and Node 20. Tick those two items off in the Dev "
            "Environment Setup page.",
            [
                *search_and_read("Dev Environment Setup"),
                call("update-a-block", block_id=docker, type={"to_do": {"checked": True}}),
                call("update-a-block", block_id=node, type={"to_do": {"checked": True}}),
            ],
            "Checked off Install Docker Desktop and Install Node 20.",
            rubric(
                crit("Docker item checked", 2, record(docker, "to_do.checked", True, "blocks")),
                crit("Node item checked", 2, record(node, "to_do.checked", True, "blocks")),
                crit(
                    "Python item left unchecked",
                    1,
                    record(python, "to_do.checked", False, "blocks"),
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    code = block_id("dev-setup", "6")
    out.append(
        task(
            "notion-w12",
            "In the Dev Environment Setup page, add the paragraph 'Ask in #eng-help if you get "
            "stuck.' directly below the code snippet (not at the end of the page).",
            [
                *search_and_read("Dev Environment Setup"),
                call(
                    "patch-block-children",
                    block_id=PAGE["dev-setup"],
                    after=code,
                    children=[
                        {
                            "type": "paragraph",
                            "paragraph": {"rich_text": rt("Ask in #eng-help if you get stuck.")},
                        }
                    ],
                ),
            ],
            "Inserted the paragraph right after the code block.",
            script(
                """
            def verify(initial_state, final_state, answer):
                kids = _children(final_state, PAGE)
                hits = [i for i, b in enumerate(kids) if "#eng-help" in _text(b)]
                if not hits:
                    return 0.0
                at = [i for i, b in enumerate(kids) if b["id"] == CODE][0]
                return 1.0 if hits == [at + 1] and kids[at + 1]["type"] == "paragraph" else 0.4
        """,
                PAGE=PAGE["dev-setup"],
                CODE=code,
            ),
            wrong=NO_WRITE,
            split="test",
        )
    )

    toggle = block_id("dev-setup", "8")
    out.append(
        task(
            "notion-w13",
            "Remove the Troubleshooting toggle from the Dev Environment Setup page.",
            [
                *search_and_read("Dev Environment Setup"),
                call("delete-a-block", block_id=toggle),
            ],
            "Deleted the Troubleshooting toggle.",
            rubric(
                crit("Toggle archived", 3, record(toggle, "archived", True, "blocks")),
                crit(
                    "Nothing else removed from the page",
                    1,
                    count(
                        {"parent.page_id": PAGE["dev-setup"], "archived": True},
                        1,
                        collection="blocks",
                    ),
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    leave = "Parents get 16 weeks of paid leave."
    out.append(
        task(
            "notion-w14",
            f"Create a page called 'Parental Leave' inside the Company Handbook, containing one "
            f"paragraph: '{leave}'",
            [
                call("post-search", query="Company Handbook"),
                call(
                    "post-page",
                    parent={"page_id": PAGE["handbook"]},
                    properties={"title": rt("Parental Leave")},
                    children=[
                        json.dumps(
                            {
                                "object": "block",
                                "type": "paragraph",
                                "paragraph": {"rich_text": rt(leave)},
                            }
                        )
                    ],
                ),
            ],
            "Created 'Parental Leave' under Company Handbook.",
            script(
                """
            def verify(initial_state, final_state, answer):
                pages = [p for p in _pages_titled(final_state, "Parental Leave", HANDBOOK)
                         if not p.get("archived")]
                if len(pages) != 1:
                    return 0.0
                texts = [_text(b) for b in _children(final_state, pages[0]["id"])]
                return 0.5 + 0.5 * any("16 weeks" in t for t in texts)
        """,
                HANDBOOK=PAGE["handbook"],
            ),
            wrong="Created the Parental Leave page.",
        )
    )

    out.append(
        task(
            "notion-w15",
            "Give the Security Policy page a 🔒 icon.",
            [
                call("post-search", query="Security Policy"),
                call("patch-page", page_id=PAGE["security"], icon={"emoji": "🔒"}),
            ],
            "Set the icon to 🔒.",
            rubric(crit("Icon is 🔒", 3, record(PAGE["security"], "icon.emoji", "🔒"))),
            wrong=NO_WRITE,
        )
    )
    return out


def _schema_writes() -> list[dict[str, Any]]:
    out = []
    out.append(
        task(
            "notion-w16",
            "Rename the Meeting Notes database to 'Meetings'.",
            [
                call(
                    "post-search",
                    query="Meeting Notes",
                    filter={"property": "object", "value": "database"},
                ),
                call("update-a-database", database_id=DB["meetings"], title=rt("Meetings")),
            ],
            "Renamed the database to Meetings.",
            rubric(
                crit(
                    "Database title is Meetings",
                    3,
                    record(DB["meetings"], "title.0.plain_text", "Meetings", "databases"),
                )
            ),
            wrong=NO_WRITE,
        )
    )

    out.append(
        task(
            "notion-w17",
            "Rename the Estimate property of the Tasks database to 'Estimate (h)' so people know "
            "it is in hours. Keep all the values.",
            [
                call("retrieve-a-database", database_id=DB["tasks"]),
                call(
                    "update-a-database",
                    database_id=DB["tasks"],
                    properties={"Estimate": {"name": "Estimate (h)"}},
                ),
            ],
            "Renamed Estimate to Estimate (h).",
            script(
                """
            def verify(initial_state, final_state, answer):
                props = _by_id(final_state, "databases")[TASKS]["properties"]
                ok = props.get("Estimate (h)", {}).get("type") == "number" \\
                    and "Estimate" not in props
                def values(state, key):
                    return {p["id"]: (p["properties"].get(key) or {}).get("number")
                            for p in state["pages"] if p["parent"].get("database_id") == TASKS}
                kept = values(initial_state, "Estimate") == values(final_state, "Estimate (h)")
                return 0.5 * ok + 0.5 * kept
        """,
                TASKS=DB["tasks"],
            ),
            wrong="Renamed the property to Estimate (h).",
        )
    )

    out.append(
        task(
            "notion-w18",
            "Add a 'Risk' select property to the Projects database with the options Low, Medium "
            "and High, then set the Billing Service Migration project's risk to High.",
            [
                call(
                    "update-a-database",
                    database_id=DB["projects"],
                    properties={
                        "Risk": {
                            "select": {
                                "options": [
                                    {"name": "Low", "color": "green"},
                                    {"name": "Medium", "color": "yellow"},
                                    {"name": "High", "color": "red"},
                                ]
                            }
                        }
                    },
                ),
                set_props(PROJECT["billing"], Risk={"select": {"name": "High"}}),
            ],
            "Added Risk (Low/Medium/High) and set Billing Service Migration to High.",
            rubric(
                crit(
                    "Risk is a select property",
                    1,
                    record(DB["projects"], "properties.Risk.type", "select", "databases"),
                ),
                crit(
                    "Billing risk is High",
                    3,
                    record(PROJECT["billing"], "properties.Risk.select.name", "High"),
                ),
            ),
            wrong=NO_WRITE,
        )
    )
    return out

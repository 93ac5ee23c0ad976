"""Long-horizon notion-v0 tasks over page content: to-dos, meeting notes and status pages.

Each is verified by a script over the final state that gives partial credit per sub-goal and
checks that nothing outside the request changed.
"""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion.taskkit import (
    MEETING,
    PAGE,
    block_id,
    call,
    comment,
    in_project,
    open_tasks,
    query,
    rt,
    script,
    set_props,
    task,
    task_id,
)
from agentworld_gym.domains.notion.tasks_long import NO_WRITE_LONG


def long_content_tasks() -> list[dict[str, Any]]:
    return _content_tasks()


def _content_tasks() -> list[dict[str, Any]]:
    out = []
    eng = [block_id("eng-onboarding", i) for i in ("3", "4", "5")]
    dev = [block_id("dev-setup", i) for i in ("1", "2", "3", "4")]
    calls = [
        call("post-search", query="Engineering Onboarding"),
        call("get-block-children", block_id=PAGE["eng-onboarding"]),
        call("get-block-children", block_id=PAGE["dev-setup"]),
    ]
    calls += [
        call("update-a-block", block_id=b, type={"to_do": {"checked": True}}) for b in eng + dev
    ]
    out.append(
        task(
            "notion-l09",
            "I finished onboarding. Tick every unchecked to-do on the Engineering Onboarding page "
            "and on its Dev Environment Setup sub-page.",
            calls,
            f"Checked {len(eng) + len(dev)} to-dos across both pages.",
            script(
                """
            def verify(initial_state, final_state, answer):
                blocks = _by_id(final_state, "blocks")
                score = sum(bool(blocks[b]["to_do"]["checked"]) for b in TODOS) / len(TODOS)
                removed = [b for b in final_state["blocks"] if b.get("archived")
                           and not _by_id(initial_state, "blocks").get(b["id"], {}).get(
                               "archived")]
                return score * (0.5 if removed else 1.0)
        """,
                TODOS=eng + dev,
            ),
            wrong="All onboarding to-dos are checked.",
            split="test",
            tags=("blocks", "nested pages"),
        )
    )

    review = [t for t in open_tasks() if t[1] == "brand" and t[2] == "In review"]
    todos = [block_id("brand-review", i) for i in ("5", "6")]
    calls = [
        query(
            "tasks",
            filter={
                "and": [
                    in_project("brand"),
                    {"property": "Status", "status": {"equals": "In review"}},
                ]
            },
        )
    ]
    calls += [
        set_props(task_id(t[0]), Status={"status": {"name": "Done"}}, Done={"checkbox": True})
        for t in review
    ]
    calls += [comment(task_id(t[0]), "Approved in brand review.") for t in review]
    calls += [
        query("meetings", filter={"property": "Name", "title": {"contains": "brand"}}),
        call("get-block-children", block_id=MEETING["brand-review"]),
    ]
    calls += [call("update-a-block", block_id=b, type={"to_do": {"checked": True}}) for b in todos]
    calls.append(
        call(
            "patch-block-children",
            block_id=PAGE["weekly-status"],
            children=[
                {
                    "type": "bulleted_list_item",
                    "bulleted_list_item": {"rich_text": rt(f"Brand: {len(review)} tasks approved")},
                }
            ],
        )
    )
    out.append(
        task(
            "notion-l10",
            "Wrap up the brand review. Every Q3 Brand Refresh task that is In review has been "
            "approved: set it to Done (Status and checkbox) and comment 'Approved in brand "
            "review.' on it. Then tick off all action items in the 'Q3 brand refresh review' "
            "meeting notes, and add a bullet 'Brand: N tasks approved' (with the real N) at the "
            "end of the Weekly Status Updates page.",
            calls,
            f"Approved {len(review)} tasks, closed the meeting action items and posted "
            f"'Brand: {len(review)} tasks approved'.",
            script(
                """
            def verify(initial_state, final_state, answer):
                pages, blocks = _by_id(final_state, "pages"), _by_id(final_state, "blocks")
                score = 0.0
                for pid in REVIEW:
                    p = pages[pid]
                    score += 0.15 * (_status(p) == "Done" and p["properties"]["Done"]["checkbox"]
                                     is True)
                    score += 0.1 * any("approved" in _norm(_plain(c["rich_text"]))
                                       for c in _comments(final_state, pid))
                score += sum(0.1 for b in TODOS if blocks[b]["to_do"]["checked"])
                old = _by_id(initial_state, "blocks")
                for b in _children(final_state, WEEKLY):
                    text = _norm(_text(b))
                    if b["id"] not in old and "brand" in text and len(REVIEW) in _numbers(text):
                        score += 0.3
                        break
                return score
        """,
                REVIEW=[task_id(t[0]) for t in review],
                TODOS=todos,
                WEEKLY=PAGE["weekly-status"],
            ),
            wrong=NO_WRITE_LONG,
            tags=("bulk-update", "blocks", "comments"),
        )
    )
    return out

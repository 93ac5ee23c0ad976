"""Long-horizon notion-v0 tasks: 8+ tool calls mixing queries, writes, blocks and comments.

Each is verified by a script over the final state that gives partial credit per sub-goal and
checks that nothing outside the request changed.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from agentworld_gym.domains.notion import seed_data as data
from agentworld_gym.domains.notion.taskkit import (
    DB,
    MEETING,
    NOT_DONE,
    PAGE,
    PROJECT,
    PROJECT_OWNERS,
    TODAY,
    USER,
    USERS,
    block_id,
    call,
    comment,
    in_project,
    open_tasks,
    overdue,
    query,
    rt,
    script,
    set_props,
    task,
    task_id,
)

NO_WRITE_LONG = "All done."
"""A claim of success without the writes: the ``wrong`` answer of long tasks."""


def long_tasks() -> list[dict[str, Any]]:
    return _people_tasks() + _project_tasks()


def _people_tasks() -> list[dict[str, Any]]:
    out = []
    targets = [t for t in overdue() if not t[3]]
    plan = {task_id(t[0]): USER[PROJECT_OWNERS[t[1]]] for t in targets}
    calls = [
        query(
            "tasks",
            filter={
                "and": [
                    {"property": "Due", "date": {"before": TODAY}},
                    NOT_DONE,
                    {"property": "Assignee", "people": {"is_empty": True}},
                ]
            },
        ),
        query("projects"),
    ]
    calls += [
        set_props(task_id(t[0]), Assignee={"people": [{"id": USER[PROJECT_OWNERS[t[1]]]}]})
        for t in targets
    ]
    calls += [
        comment(
            task_id(t[0]),
            f"Assigned to {USERS[PROJECT_OWNERS[t[1]]]} because this task is overdue.",
        )
        for t in targets
    ]
    out.append(
        task(
            "notion-l01",
            "Every overdue task (due before today, not Done) that has nobody assigned should go to "
            "the owner of its project. Assign each one, leave a comment on it saying who it was "
            "assigned to and that it is overdue, and tell me how many tasks you assigned.",
            calls,
            f"Assigned {len(targets)} overdue tasks to their project owners and commented on each.",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                score = 0.0
                for pid, owner in PLAN.items():
                    score += 0.6 / len(PLAN) * (_people(after[pid], "Assignee") == [owner])
                    new = [c for c in _comments(final_state, pid)
                           if c not in _comments(initial_state, pid)]
                    score += 0.3 / len(PLAN) * any("overdue" in _norm(_plain(c["rich_text"]))
                                                   for c in new)
                score += 0.1 * (len(PLAN) in _numbers(answer))
                before = _by_id(initial_state, "pages")
                others = [k for k in before if k not in PLAN and k in after]
                if any(_people(before[k], "Assignee") != _people(after[k], "Assignee")
                       for k in others if "Assignee" in before[k]["properties"]):
                    score *= 0.5
                return score
        """,
                PLAN=plan,
            ),
            wrong=f"I assigned {len(targets) - 2} tasks.",
            split="test",
            tags=("bulk-update", "comments"),
        )
    )

    sams = [t for t in open_tasks() if t[3] == "sam" and t[2] == "Not started"]
    todo = block_id("diego-sam", "3")
    note = "Reassigned from Sam to Diego (workload)."
    calls = [
        call("get-users"),
        query(
            "tasks",
            filter={
                "and": [
                    {"property": "Assignee", "people": {"contains": USER["sam"]}},
                    {"property": "Status", "status": {"equals": "Not started"}},
                ]
            },
        ),
    ]
    calls += [set_props(task_id(t[0]), Assignee={"people": [{"id": USER["diego"]}]}) for t in sams]
    calls += [comment(task_id(t[0]), note) for t in sams]
    calls += [
        query("meetings", filter={"property": "Name", "title": {"contains": "1:1"}}),
        call("get-block-children", block_id=MEETING["diego-sam"]),
        call("update-a-block", block_id=todo, type={"to_do": {"checked": True}}),
    ]
    out.append(
        task(
            "notion-l02",
            "Sam Okafor is overloaded. Reassign all of Sam's tasks whose status is Not started to "
            "Diego Ramírez, comment on each one 'Reassigned from Sam to Diego (workload).', and "
            "then tick off the rebalancing action item in the '1:1 Diego / Sam' meeting notes.",
            calls,
            f"Moved {len(sams)} tasks to Diego: " + ", ".join(t[0] for t in sams) + ".",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                score = 0.0
                for pid in MOVED:
                    score += 0.5 / len(MOVED) * (_people(after[pid], "Assignee") == [DIEGO])
                    score += 0.2 / len(MOVED) * any(
                        "diego" in _norm(_plain(c["rich_text"])) for c in
                        _comments(final_state, pid) if c not in _comments(initial_state, pid))
                block = _by_id(final_state, "blocks")[TODO]
                score += 0.2 * bool(block["to_do"]["checked"])
                before = _by_id(initial_state, "pages")
                kept = [k for k, p in before.items() if k not in MOVED
                        and SAM in _people(p, "Assignee")]
                score += 0.1 * all(_people(after[k], "Assignee") == _people(before[k],
                                   "Assignee") for k in kept)
                return score
        """,
                MOVED=[task_id(t[0]) for t in sams],
                DIEGO=USER["diego"],
                SAM=USER["sam"],
                TODO=todo,
            ),
            wrong=NO_WRITE_LONG,
            tags=("bulk-update", "blocks"),
        )
    )

    items = [
        ("Sam to confirm the webhook retry policy", "sam", "webhook retry policy", "4"),
        ("Ben to draft the customer email about the billing change", "ben", "customer email", "5"),
    ]
    meeting = MEETING["billing-sync"]
    calls = [
        query("meetings", filter={"property": "Name", "title": {"contains": "Billing migration"}}),
        call("get-block-children", block_id=meeting),
        call("get-users"),
    ]
    calls += [
        call(
            "post-page",
            parent={"database_id": DB["tasks"]},
            properties={
                "Name": {"title": rt(text)},
                "Assignee": {"people": [{"id": USER[who]}]},
                "Project": {"relation": [{"id": PROJECT["billing"]}]},
                "Due": {"date": {"start": "2026-08-12"}},
            },
        )
        for text, who, _, _ in items
    ]
    calls += [
        call(
            "update-a-block",
            block_id=block_id("billing-sync", idx),
            type={"to_do": {"checked": True}},
        )
        for *_, idx in items
    ]
    calls.append(comment(meeting, "Action items moved to Tasks."))
    out.append(
        task(
            "notion-l03",
            "Turn every unchecked action item in the 'Billing migration weekly sync' meeting notes "
            "into a task in the Tasks database: use the action item text as the task name, assign "
            "it to the person it names, link it to Billing Service Migration and make it due "
            "2026-08-12. Then tick those action items off and comment 'Action items moved to "
            "Tasks.' on the meeting page.",
            calls,
            "Created 2 tasks (webhook retry policy for Sam, customer email for Ben), ticked the "
            "action items off and commented on the meeting.",
            script(
                """
            def verify(initial_state, final_state, answer):
                new = [p for p in final_state["pages"] if p["id"] not in
                       _by_id(initial_state, "pages") and not p.get("archived")
                       and p["parent"].get("database_id") == TASKS]
                score = 0.0
                for phrase, who, bid in ITEMS:
                    hits = [p for p in new if phrase in _norm(_title(p))]
                    if len(hits) != 1:
                        continue
                    p = hits[0]
                    rel = [r["id"] for r in p["properties"]["Project"]["relation"]]
                    score += 0.1 + 0.08 * (rel == [BILLING]) \\
                        + 0.08 * (_people(p, "Assignee") == [who]) \\
                        + 0.06 * (_date(p, "Due") == "2026-08-12")
                    score += 0.1 * bool(_by_id(final_state, "blocks")[bid]["to_do"]["checked"])
                score += 0.16 * any("moved to tasks" in _norm(_plain(c["rich_text"]))
                                    for c in _comments(final_state, MEETING))
                return min(score, 1.0)
        """,
                TASKS=DB["tasks"],
                BILLING=PROJECT["billing"],
                MEETING=meeting,
                ITEMS=[
                    (phrase, USER[who], block_id("billing-sync", idx))
                    for _, who, phrase, idx in items
                ],
            ),
            wrong="Created the two tasks from the billing sync.",
            tags=("create", "blocks", "comments"),
        )
    )
    return out


def _project_tasks() -> list[dict[str, Any]]:
    out = []
    active = [p for p in data.PROJECTS if p[2] == "In progress"]
    stats = {}
    calls = [query("projects", filter={"property": "Status", "status": {"equals": "In progress"}})]
    for p in active:
        mine = [t for t in open_tasks() if t[1] == p[0]]
        stats[p[1]] = (len(mine), sum(1 for t in mine if t[4] and t[4] < TODAY))
        calls.append(query("tasks", filter={"and": [in_project(p[0]), NOT_DONE]}))
        calls.append(
            query(
                "tasks",
                filter={
                    "and": [
                        in_project(p[0]),
                        NOT_DONE,
                        {"property": "Due", "date": {"before": TODAY}},
                    ]
                },
            )
        )
    lines = [f"{name}: {n} open tasks, {late} overdue" for name, (n, late) in stats.items()]
    calls.append(
        call(
            "patch-block-children",
            block_id=PAGE["weekly-status"],
            children=[
                {"type": "paragraph", "paragraph": {"rich_text": rt("Week of 2026-08-03")}},
                *[
                    {"type": "bulleted_list_item", "bulleted_list_item": {"rich_text": rt(line)}}
                    for line in lines
                ],
            ],
        )
    )
    out.append(
        task(
            "notion-l04",
            "Update the Weekly Status Updates page for the week of 2026-08-03: append a paragraph "
            "'Week of 2026-08-03' followed by one bullet per In progress project, written as "
            "'<project name>: <open> open tasks, <overdue> overdue' (open = not Done; overdue = "
            "open and due before today).",
            calls,
            "Added the week of 2026-08-03: " + "; ".join(lines) + ".",
            script(
                """
            def verify(initial_state, final_state, answer):
                old = _by_id(initial_state, "blocks")
                new = [b for b in _children(final_state, WEEKLY) if b["id"] not in old]
                score = 0.1 * any("2026-08-03" in _text(b) for b in new)
                for name, (n, late) in STATS.items():
                    for b in new:
                        text = _norm(_text(b))
                        if _norm(name) in text:
                            nums = _numbers(text.split(_norm(name), 1)[1])
                            if nums[:2] == [n, late]:
                                score += 0.9 / len(STATS)
                                break
                return score
        """,
                WEEKLY=PAGE["weekly-status"],
                STATS=stats,
            ),
            wrong="Added the weekly update with all in-progress projects.",
            split="test",
            tags=("report", "blocks"),
        )
    )

    closing = [p for p in data.PROJECTS if p[2] == "Done" and not p[10]]
    archive = {p[0]: [t[0] for t in data.TASKS if t[1] == p[0]] for p in closing}
    calls = [query("projects", filter={"property": "Status", "status": {"equals": "Done"}})]
    calls += [query("tasks", filter=in_project(p[0])) for p in closing]
    calls += [
        call("patch-page", page_id=task_id(n), archived=True)
        for p in closing
        for n in archive[p[0]]
    ]
    calls += [
        comment(PROJECT[p[0]], f"Closed out: {len(archive[p[0]])} tasks archived.") for p in closing
    ]
    out.append(
        task(
            "notion-l05",
            "Close out the projects whose status is Done: archive every task linked to them, then "
            "comment on each of those projects 'Closed out: N tasks archived.' with the right N.",
            calls,
            "; ".join(f"{p[1]}: {len(archive[p[0]])} tasks archived" for p in closing) + ".",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                ids = [t for names in ARCHIVE.values() for t in names]
                score = 0.6 * sum(bool(after[t]["archived"]) for t in ids) / len(ids)
                extra = [p for p in final_state["pages"] if p.get("archived") and p["id"] not in
                         ids and not _by_id(initial_state, "pages")[p["id"]].get("archived")]
                score += 0.1 * (not extra)
                for project, names in ARCHIVE.items():
                    new = [c for c in _comments(final_state, project)
                           if c not in _comments(initial_state, project)]
                    score += 0.15 * any(len(names) in _numbers(_plain(c["rich_text"]))
                                        for c in new)
                return score
        """,
                ARCHIVE={PROJECT[p[0]]: [task_id(n) for n in archive[p[0]]] for p in closing},
            ),
            wrong=NO_WRITE_LONG,
            tags=("bulk-update", "archive"),
        )
    )

    urgent = [t for t in open_tasks() if "urgent" in t[6]]
    expect = {
        task_id(t[0]): (
            "In progress" if t[2] == "Not started" else t[2],
            USER[t[3] or PROJECT_OWNERS[t[1]]],
        )
        for t in urgent
    }
    calls = [
        query(
            "tasks",
            filter={
                "and": [{"property": "Labels", "multi_select": {"contains": "urgent"}}, NOT_DONE]
            },
        ),
        query("projects", filter={"property": "Status", "status": {"does_not_equal": "Done"}}),
    ]
    for t in urgent:
        props: dict[str, Any] = {}
        if t[2] == "Not started":
            props["Status"] = {"status": {"name": "In progress"}}
        if not t[3]:
            props["Assignee"] = {"people": [{"id": USER[PROJECT_OWNERS[t[1]]]}]}
        if props:
            calls.append(set_props(task_id(t[0]), **props))
    calls += [comment(task_id(t[0]), "Escalated: urgent task.") for t in urgent]
    out.append(
        task(
            "notion-l06",
            "Triage the open tasks labelled urgent: those that are Not started move to In "
            "progress, those without an assignee go to their project's owner, and every one of "
            "them gets the comment 'Escalated: urgent task.'",
            calls,
            f"Triaged {len(urgent)} urgent tasks.",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                score = 0.0
                for pid, (status, owner) in EXPECT.items():
                    page = after[pid]
                    score += 0.1 * (_status(page) == status)
                    score += 0.1 * (_people(page, "Assignee") == [owner])
                    score += 0.05 * any("escalated" in _norm(_plain(c["rich_text"]))
                                        for c in _comments(final_state, pid))
                return score
        """,
                EXPECT=expect,
            ),
            wrong=NO_WRITE_LONG,
            tags=("bulk-update", "comments"),
        )
    )

    portal = [t for t in open_tasks() if t[1] == "portal"]
    shifted = {task_id(t[0]): _shift(t[4], 28) for t in portal}
    calls = [
        query("projects", filter={"property": "Name", "title": {"equals": "Customer Portal"}}),
        query("tasks", filter={"and": [in_project("portal"), NOT_DONE]}),
    ]
    calls += [set_props(pid, Due={"date": {"start": due}}) for pid, due in shifted.items()]
    calls += [
        set_props(PROJECT["portal"], Due={"date": {"start": "2026-08-28"}}),
        comment(PROJECT["portal"], "Timeline moved by 4 weeks while on hold."),
    ]
    out.append(
        task(
            "notion-l07",
            "The Customer Portal project is on hold. Push the due date of each of its open tasks "
            "back by exactly four weeks, move the project's own Due date back four weeks as well, "
            "and comment on the project: 'Timeline moved by 4 weeks while on hold.'",
            calls,
            f"Moved {len(shifted)} task due dates and the project due date (now 2026-08-28) by "
            "four weeks.",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                score = sum(0.15 for pid, due in SHIFTED.items() if _date(after[pid], "Due")
                            == due) * 4 / len(SHIFTED)
                score += 0.1 * (_date(after[SURVEY], "Due") == "2026-06-19")
                score += 0.15 * (_date(after[PROJECT], "Due") == "2026-08-28")
                score += 0.15 * any(w in _norm(_plain(c["rich_text"]))
                                    for c in _comments(final_state, PROJECT)
                                    for w in ("4 weeks", "four weeks"))
                return score
        """,
                SHIFTED=shifted,
                SURVEY=task_id("Portal beta feedback survey"),
                PROJECT=PROJECT["portal"],
            ),
            wrong=NO_WRITE_LONG,
            split="test",
            tags=("dates", "bulk-update"),
        )
    )

    critical = [p[0] for p in data.PROJECTS if p[4] == "Critical" and not p[10]]
    flagged = [t for t in overdue() if t[1] in critical]
    text = "Overdue on a Critical project — please update the due date."
    calls = [query("projects", filter={"property": "Priority", "select": {"equals": "Critical"}})]
    calls += [
        query(
            "tasks",
            filter={
                "and": [in_project(p), NOT_DONE, {"property": "Due", "date": {"before": TODAY}}]
            },
        )
        for p in critical
    ]
    calls += [comment(task_id(t[0]), text) for t in flagged]
    out.append(
        task(
            "notion-l08",
            "For every project with Critical priority, find its open tasks that are overdue and "
            f"leave this comment on each: '{text}' Tell me how many tasks you flagged.",
            calls,
            f"Flagged {len(flagged)} tasks: " + ", ".join(t[0] for t in flagged) + ".",
            script(
                """
            def verify(initial_state, final_state, answer):
                old = _by_id(initial_state, "comments")
                new = [c for c in final_state["comments"] if c["id"] not in old]
                hit = {c["parent"]["page_id"] for c in new
                       if "critical" in _norm(_plain(c["rich_text"]))}
                score = 0.8 * len(hit & set(FLAGGED)) / len(FLAGGED)
                score += 0.1 * all(c["parent"]["page_id"] in FLAGGED for c in new)
                score += 0.1 * (len(FLAGGED) in _numbers(answer))
                return score
        """,
                FLAGGED=[task_id(t[0]) for t in flagged],
            ),
            wrong="I flagged 3 tasks.",
            tags=("comments", "filters"),
        )
    )
    return out


def _shift(day: str, days: int) -> str:
    return (dt.date.fromisoformat(day) + dt.timedelta(days=days)).isoformat()

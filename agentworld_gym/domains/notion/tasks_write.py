"""notion-v0 tasks that change page properties, archive/restore pages and add comments."""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion.taskkit import (
    CHECKED_NOT_DONE,
    DB,
    DONE_UNCHECKED,
    NO_WRITE,
    PROJECT,
    USER,
    call,
    comment,
    count,
    crit,
    number,
    query,
    record,
    rt,
    rubric,
    script,
    set_props,
    task,
    task_id,
)


def _title_is(name: str) -> dict[str, Any]:
    return {"property": "Name", "title": {"equals": name}}


def write_tasks() -> list[dict[str, Any]]:
    return _property_writes()


def _property_writes() -> list[dict[str, Any]]:
    out = []
    coupon = task_id("Fix coupon field validation")
    out.append(
        task(
            "notion-w01",
            "The coupon field validation fix has shipped. Mark that task as Done — both the Status "
            "and the Done checkbox.",
            [
                query("tasks", filter=_title_is("Fix coupon field validation")),
                set_props(coupon, Status={"status": {"name": "Done"}}, Done={"checkbox": True}),
            ],
            "Marked 'Fix coupon field validation' as Done.",
            rubric(
                crit("Status is Done", 2, record(coupon, "properties.Status.status.name", "Done")),
                crit(
                    "Done checkbox is checked", 2, record(coupon, "properties.Done.checkbox", True)
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    a11y = task_id("Checkout accessibility pass")
    out.append(
        task(
            "notion-w02",
            "Assign the 'Checkout accessibility pass' task to Tomás Silva and set its due date to "
            "2026-08-21.",
            [
                call("get-users"),
                query("tasks", filter=_title_is("Checkout accessibility pass")),
                set_props(
                    a11y,
                    Assignee={"people": [{"id": USER["tomas"]}]},
                    Due={"date": {"start": "2026-08-21"}},
                ),
            ],
            "Assigned to Tomás Silva, due 2026-08-21.",
            rubric(
                crit(
                    "Assignee is Tomás",
                    2,
                    record(a11y, "properties.Assignee.people.0.id", USER["tomas"]),
                ),
                crit(
                    "Nobody else is assigned",
                    1,
                    record(a11y, "properties.Assignee.people.1", exists=False),
                ),
                crit(
                    "Due date is 2026-08-21",
                    2,
                    record(a11y, "properties.Due.date.start", "2026-08-21"),
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    name = "Set up status page"
    base = {
        "parent.database_id": DB["tasks"],
        "properties.Name.title.0.plain_text": name,
        "archived": False,
    }
    out.append(
        task(
            "notion-w03",
            "Create a new task 'Set up status page' for the Billing Service Migration project, "
            "assigned to Ben Carter, due 2026-08-15, estimated at 3 hours, labelled chore.",
            [
                call("get-users"),
                query("projects", filter=_title_is("Billing Service Migration")),
                call(
                    "post-page",
                    parent={"database_id": DB["tasks"]},
                    properties={
                        "Name": {"title": rt(name)},
                        "Project": {"relation": [{"id": PROJECT["billing"]}]},
                        "Assignee": {"people": [{"id": USER["ben"]}]},
                        "Due": {"date": {"start": "2026-08-15"}},
                        "Estimate": {"number": 3},
                        "Labels": {"multi_select": [{"name": "chore"}]},
                    },
                ),
            ],
            "Created 'Set up status page' in Billing Service Migration for Ben Carter, due "
            "2026-08-15, 3h, chore.",
            rubric(
                crit("Exactly one such task exists", 1, count(base, 1)),
                crit(
                    "Linked to Billing Service Migration",
                    1,
                    count(
                        {
                            **base,
                            "properties.Project.relation": {
                                "$contains": {"id": PROJECT["billing"]}
                            },
                        },
                        1,
                    ),
                ),
                crit(
                    "Assigned to Ben",
                    1,
                    count(
                        {**base, "properties.Assignee.people": {"$contains": {"id": USER["ben"]}}},
                        1,
                    ),
                ),
                crit(
                    "Due 2026-08-15",
                    1,
                    count({**base, "properties.Due.date.start": "2026-08-15"}, 1),
                ),
                crit("Estimate 3", 0.5, count({**base, "properties.Estimate.number": 3}, 1)),
                crit(
                    "Labelled chore",
                    0.5,
                    count(
                        {
                            **base,
                            "properties.Labels.multi_select": {"$contains": {"name": "chore"}},
                        },
                        1,
                    ),
                ),
            ),
            wrong="Created the task 'Set up status page'.",
            split="test",
        )
    )

    backfill = task_id("Backfill historical invoices")
    text = "Picking this up next sprint."
    out.append(
        task(
            "notion-w04",
            f"Leave a comment on the 'Backfill historical invoices' task saying: {text}",
            [
                query("tasks", filter=_title_is("Backfill historical invoices")),
                comment(backfill, text),
            ],
            "Comment added.",
            rubric(
                crit(
                    "The comment exists on the task",
                    3,
                    count(
                        {
                            "parent.page_id": backfill,
                            "rich_text.0.plain_text": {"$contains": "Picking this up next sprint"},
                        },
                        1,
                        collection="comments",
                    ),
                )
            ),
            wrong=NO_WRITE,
        )
    )

    survey = task_id("Portal beta feedback survey")
    out.append(
        task(
            "notion-w05",
            "We no longer need the 'Portal beta feedback survey' task. Archive it.",
            [
                query("tasks", filter=_title_is("Portal beta feedback survey")),
                call("patch-page", page_id=survey, archived=True),
            ],
            "Archived 'Portal beta feedback survey'.",
            rubric(
                crit("The task is archived", 3, record(survey, "archived", True)),
                crit(
                    "No other task was archived",
                    1,
                    count({"parent.database_id": DB["tasks"], "archived": True}, 2),
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    out.append(
        task(
            "notion-w06",
            "Increase the budget of the Q3 Brand Refresh project by 20%.",
            [
                query("projects", filter=_title_is("Q3 Brand Refresh")),
                set_props(PROJECT["brand"], Budget={"number": 30000}),
            ],
            "The Q3 Brand Refresh budget is now $30,000.",
            rubric(
                crit(
                    "Budget is 30000",
                    3,
                    record(PROJECT["brand"], "properties.Budget.number", 30000),
                ),
                crit("Reports the new budget", 1, number(30000)),
            ),
            wrong="The Q3 Brand Refresh budget is now $30,000.",
        )
    )

    analytics = PROJECT["analytics"]
    out.append(
        task(
            "notion-w07",
            "Bring back the archived 'Internal Analytics Dashboard' project and set its status to "
            "Not started.",
            [
                query("projects", archived=True),
                call(
                    "patch-page",
                    page_id=analytics,
                    archived=False,
                    properties={"Status": {"status": {"name": "Not started"}}},
                ),
            ],
            "Restored 'Internal Analytics Dashboard' with status Not started.",
            rubric(
                crit("Project is no longer archived", 2, record(analytics, "archived", False)),
                crit(
                    "Status is Not started",
                    2,
                    record(analytics, "properties.Status.status.name", "Not started"),
                ),
            ),
            wrong=NO_WRITE,
            split="test",
        )
    )

    etl = task_id("Deprecate legacy ETL scripts")
    out.append(
        task(
            "notion-w08",
            "Move the task 'Deprecate legacy ETL scripts' from Data Warehouse Consolidation to the "
            "Billing Service Migration project.",
            [
                query("projects", filter=_title_is("Billing Service Migration")),
                query("tasks", filter=_title_is("Deprecate legacy ETL scripts")),
                set_props(etl, Project={"relation": [{"id": PROJECT["billing"]}]}),
            ],
            "The task now belongs to Billing Service Migration.",
            rubric(
                crit(
                    "Linked to Billing",
                    2,
                    record(etl, "properties.Project.relation.0.id", PROJECT["billing"]),
                ),
                crit(
                    "No longer linked to the warehouse project",
                    1,
                    record(etl, "properties.Project.relation.1", exists=False),
                ),
            ),
            wrong=NO_WRITE,
        )
    )

    mismatched = {
        task_id("Write migration rollback runbook"): True,
        task_id("Update pricing page copy"): False,
    }
    out.append(
        task(
            "notion-w09",
            "Some tasks have a Done checkbox that disagrees with their Status. Treat the Status as "
            "the truth and fix the checkbox on every such task.",
            [
                query("tasks", filter=DONE_UNCHECKED),
                query("tasks", filter=CHECKED_NOT_DONE),
                *[set_props(pid, Done={"checkbox": value}) for pid, value in mismatched.items()],
            ],
            "Fixed 2 tasks: Write migration rollback runbook (checked) and Update pricing "
            "page copy (unchecked).",
            script(
                """
            def verify(initial_state, final_state, answer):
                after = _by_id(final_state, "pages")
                score = sum(0.4 for pid, want in FIX.items()
                            if after[pid]["properties"]["Done"]["checkbox"] is want)
                others = [p["id"] for p in initial_state["pages"] if p["id"] not in FIX]
                return score + 0.2 * _unchanged(initial_state, final_state, "pages", others)
        """,
                FIX=mismatched,
            ),
            wrong="Both inconsistent tasks are fixed now.",
        )
    )
    return out

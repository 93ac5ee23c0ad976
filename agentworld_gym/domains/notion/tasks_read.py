"""Read-only notion-v0 tasks: look things up with filters, sorts, pagination, blocks, comments."""

from __future__ import annotations

from typing import Any

from agentworld_gym.domains.notion import seed_data as data
from agentworld_gym.domains.notion.taskkit import (
    CHECKED_NOT_DONE,
    DONE_UNCHECKED,
    NOT_DONE,
    TODAY,
    USER,
    block_id,
    call,
    called,
    contains,
    crit,
    date,
    in_order,
    in_project,
    number,
    open_tasks,
    overdue,
    query,
    rubric,
    script,
    search_and_read,
    task,
)

OVERDUE = [{"property": "Due", "date": {"before": TODAY}}, NOT_DONE]


def read_tasks() -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    add = tasks.append

    n_over = len(overdue())
    add(
        task(
            "notion-r01",
            "How many tasks in our Tasks database are overdue right now, i.e. due before today and "
            "not marked Done?",
            [query("tasks", filter={"and": OVERDUE}, page_size=100)],
            f"{n_over} tasks are overdue.",
            rubric(
                crit(f"States that {n_over} tasks are overdue", 3, number(n_over)),
                crit("Queried the Tasks database", 1, called("post-database-query")),
            ),
            wrong="There are 12 overdue tasks.",
        )
    )

    add(
        task(
            "notion-r02",
            "Who owns the Billing Service Migration project, and what is its budget?",
            [
                call(
                    "post-search",
                    query="Billing Service Migration",
                    filter={"property": "object", "value": "page"},
                )
            ],
            "Sam Okafor owns Billing Service Migration; its budget is $82,000.",
            rubric(
                crit("Names Sam Okafor as the owner", 2, contains("Sam Okafor")),
                crit("Gives the budget of $82,000", 2, number(82000)),
            ),
            wrong="Diego Ramírez owns it and the budget is $60,000.",
        )
    )

    unassigned = [t[0] for t in overdue() if not t[3]]
    add(
        task(
            "notion-r03",
            "Which overdue tasks (due before today, not Done) have nobody assigned? List them.",
            [
                query(
                    "tasks",
                    filter={
                        "and": [*OVERDUE, {"property": "Assignee", "people": {"is_empty": True}}]
                    },
                )
            ],
            f"{len(unassigned)} overdue tasks are unassigned: " + "; ".join(unassigned) + ".",
            rubric(
                crit("Lists every overdue unassigned task", 3, contains(*unassigned)),
                crit(f"Says there are {len(unassigned)}", 1, number(len(unassigned))),
            ),
            wrong="Only Add Apple Pay support and Checkout accessibility pass are unassigned.",
            split="test",
        )
    )

    add(
        task(
            "notion-r04",
            "According to our company wiki, how large is the yearly learning budget per employee?",
            [
                *search_and_read("Benefits"),
            ],
            "Each employee has a learning budget of $1,500 per calendar year.",
            rubric(
                crit("Gives $1,500 per year", 3, number(1500)),
                crit("Read the page content", 1, called("get-block-children")),
            ),
            wrong="The learning budget is $1,000 per year.",
        )
    )

    urgent = sorted((t for t in open_tasks() if "urgent" in t[6]), key=lambda t: t[4])
    names = [t[0] for t in urgent]
    add(
        task(
            "notion-r05",
            "List the open (not Done) tasks labelled 'urgent', ordered from the earliest due date "
            "to the latest.",
            [
                query(
                    "tasks",
                    filter={
                        "and": [
                            {"property": "Labels", "multi_select": {"contains": "urgent"}},
                            NOT_DONE,
                        ]
                    },
                    sorts=[{"property": "Due", "direction": "ascending"}],
                )
            ],
            "; ".join(f"{t[0]} (due {t[4]})" for t in urgent),
            rubric(crit("Lists the urgent open tasks by due date", 4, in_order(*names))),
            wrong="Add Apple Pay support; Backfill historical invoices; Quarterly access review.",
        )
    )

    add(
        task(
            "notion-r06",
            "Which in-progress projects are tagged Infra?",
            [
                query(
                    "projects",
                    filter={
                        "and": [
                            {"property": "Tags", "multi_select": {"contains": "Infra"}},
                            {"property": "Status", "status": {"equals": "In progress"}},
                        ]
                    },
                )
            ],
            "Billing Service Migration, Data Warehouse Consolidation and SOC 2 Readiness.",
            rubric(
                crit(
                    "Names all three projects",
                    3,
                    contains(
                        "Billing Service Migration",
                        "Data Warehouse Consolidation",
                        "SOC 2 Readiness",
                    ),
                )
            ),
            wrong="Billing Service Migration and Mobile App v3.",
        )
    )

    sam_hours = sum(t[5] or 0 for t in open_tasks() if t[3] == "sam")
    add(
        task(
            "notion-r07",
            "How many hours of estimated work does Sam Okafor still have on open (not Done) tasks? "
            "Add up the Estimate property.",
            [
                call("get-users"),
                query(
                    "tasks",
                    filter={
                        "and": [
                            {"property": "Assignee", "people": {"contains": USER["sam"]}},
                            NOT_DONE,
                        ]
                    },
                ),
            ],
            f"Sam has {sam_hours} hours of estimated open work.",
            rubric(
                crit(f"Totals {sam_hours} hours", 3, number(sam_hours)),
                crit("Filtered the Tasks database", 1, called("post-database-query")),
            ),
            wrong="Sam has 48 hours of open work.",
            split="test",
        )
    )

    add(
        task(
            "notion-r08",
            "Who attended the SOC 2 auditor prep meeting, and which of its action items are still "
            "unchecked?",
            [
                query("meetings", filter={"property": "Name", "title": {"contains": "SOC 2"}}),
                call("get-block-children", block_id="$0.results.0.id"),
            ],
            "Attendees: Diego Ramírez, Priya Natarajan and Ben Carter. Still open: Priya to finish "
            "the remaining vendor assessments; Diego to schedule the incident response tabletop.",
            rubric(
                crit("Names the three attendees", 1, contains("Diego", "Priya", "Ben")),
                crit(
                    "Lists both unchecked action items",
                    3,
                    contains("remaining vendor assessments", "incident response tabletop"),
                ),
            ),
            wrong="Diego and Priya attended; the open item is Ben collecting MFA screenshots.",
        )
    )

    add(
        task(
            "notion-r09",
            "What is Hannah Lee's email address in the workspace?",
            [call("get-users")],
            "hannah@northwindlabs.io",
            rubric(
                crit("Gives the email", 3, contains("hannah@northwindlabs.io")),
                crit("Looked up the users", 1, called("get-users")),
            ),
            wrong="hannah.lee@northwindlabs.io",
        )
    )

    toggle = block_id("dev-setup", "8")
    add(
        task(
            "notion-r10",
            "Our dev environment setup guide has troubleshooting tips. What should I do if "
            "migrations fail, and is there any caveat?",
            [
                *search_and_read("Dev Environment Setup"),
                call("get-block-children", block_id=toggle),
                call("get-block-children", block_id=block_id("dev-setup", "8.1")),
            ],
            "Run make db-reset. Caveat: it deletes your local data.",
            rubric(
                crit("Says to run make db-reset", 3, contains("db-reset")),
                crit("Mentions that local data is deleted", 1, contains("local data")),
                crit("Opened the nested blocks", 1, called("get-block-children", min_times=2)),
            ),
            wrong="Restart Docker Desktop and run the migrations again.",
            split="test",
        )
    )

    total = len(data.TASKS)
    add(
        task(
            "notion-r11",
            "How many tasks does the Tasks database contain in total (ignore archived ones)? Page "
            "through the results 25 at a time.",
            [
                query("tasks", page_size=25),
                query("tasks", page_size=25, start_cursor="$0.next_cursor"),
                query("tasks", page_size=25, start_cursor="$1.next_cursor"),
            ],
            f"The Tasks database has {total} tasks.",
            rubric(
                crit(f"Counts {total} tasks", 3, number(total)),
                crit("Followed the pagination cursor", 1, called("post-database-query", 2)),
            ),
            wrong="The Tasks database has 64 tasks.",
        )
    )

    add(
        task(
            "notion-r12",
            "Among projects with Critical priority, which one has the largest budget, and how "
            "much is it?",
            [
                query(
                    "projects",
                    filter={"property": "Priority", "select": {"equals": "Critical"}},
                    sorts=[{"property": "Budget", "direction": "descending"}],
                )
            ],
            "Billing Service Migration, with a budget of $82,000.",
            rubric(
                crit("Names Billing Service Migration", 3, contains("Billing Service Migration")),
                crit("Gives $82,000", 1, number(82000)),
            ),
            wrong="SOC 2 Readiness, with $50,000.",
        )
    )

    add(
        task(
            "notion-r13",
            "What does the most recent comment on the task 'Migrate invoice generation' say, and "
            "who wrote it?",
            [
                query(
                    "tasks",
                    filter={"property": "Name", "title": {"equals": "Migrate invoice generation"}},
                ),
                call("retrieve-a-comment", block_id="$0.results.0.id"),
                call("get-user", user_id="$1.results.1.created_by.id"),
            ],
            'Sam Okafor wrote: "Finance promised sign-off by Friday."',
            rubric(
                crit(
                    "Quotes the latest comment", 2, contains("Finance promised sign-off by Friday")
                ),
                crit("Names Sam as the author", 2, contains("Sam")),
            ),
            wrong='Diego Ramírez: "Blocked on finance sign-off for the new invoice template."',
        )
    )
    tasks.extend(_script_reads())
    return tasks


def _script_reads() -> list[dict[str, Any]]:
    out = []
    mismatched = ["Write migration rollback runbook", "Update pricing page copy"]
    out.append(
        task(
            "notion-r14",
            "Find tasks whose Status and Done checkbox disagree (Status says Done but the box is "
            "unchecked, or the other way round). Just list them, don't change anything.",
            [
                query("tasks", filter=DONE_UNCHECKED),
                query("tasks", filter=CHECKED_NOT_DONE),
            ],
            "Write migration rollback runbook (Status Done, box unchecked) and Update pricing page "
            "copy (box checked, Status In review).",
            rubric(crit("Names both mismatched tasks", 2, contains(*mismatched))),
            wrong="All tasks are consistent.",
        )
    )

    week = [
        "Billing migration weekly sync",
        "Q3 brand refresh review",
        "Leadership weekly",
        "1:1 Diego / Sam",
    ]
    out.append(
        task(
            "notion-r15",
            "Which meetings in Meeting Notes took place during the past week?",
            [
                query(
                    "meetings",
                    filter={"property": "Date", "date": {"past_week": {}}},
                    sorts=[{"property": "Date", "direction": "ascending"}],
                )
            ],
            "; ".join(week) + ".",
            rubric(crit("Names the four meetings of the past week", 4, contains(*week))),
            wrong="Atlas design review and SOC 2 auditor prep.",
        )
    )

    in_progress = [p for p in data.PROJECTS if p[2] == "In progress"]
    expected = {p[1]: sum(1 for t in open_tasks() if t[1] == p[0]) for p in in_progress}
    calls = [query("projects", filter={"property": "Status", "status": {"equals": "In progress"}})]
    calls += [
        query(
            "tasks",
            filter={
                "and": [
                    in_project(p[0]),
                    NOT_DONE,
                ]
            },
        )
        for p in in_progress
    ]
    out.append(
        task(
            "notion-r16",
            "For each project that is In progress, how many of its tasks are still open "
            "(not Done)?",
            calls,
            "; ".join(f"{name}: {n} open tasks" for name, n in expected.items()),
            script(
                """
            def verify(initial_state, final_state, answer):
                text = _norm(answer)
                good = 0
                for name, n in EXPECTED.items():
                    at = text.find(_norm(name))
                    if at < 0:
                        continue
                    nums = _numbers(text[at + len(name): at + len(name) + 60])
                    good += bool(nums) and nums[0] == n
                return good / len(EXPECTED)
        """,
                EXPECTED=expected,
            ),
            wrong="Atlas Checkout Redesign: 5; Billing Service Migration: 6; SOC 2 Readiness: 3.",
            split="test",
        )
    )

    out.append(
        task(
            "notion-r17",
            "What's the status of the Apple Pay task, and when is it due?",
            [query("tasks", filter={"property": "Name", "title": {"contains": "Apple Pay"}})],
            "'Add Apple Pay support' is Not started and was due on 2026-08-03, so it is overdue.",
            rubric(
                crit("Gives the status Not started", 1, contains("Not started")),
                crit("Gives the due date 2026-08-03", 1, date("2026-08-03")),
            ),
            wrong="It is In progress and due on 2026-08-07.",
            split="test",
        )
    )
    return out

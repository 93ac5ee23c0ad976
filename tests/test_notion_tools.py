"""AgentWorld/notion-v0 tools: Notion semantics (filters, sorts, cursors, errors, archival)."""

from __future__ import annotations

from typing import Any

import fastjsonschema
import pytest

from agentworld_gym.domains.notion.build import make_spec
from agentworld_gym.domains.notion.seed import build_records, ids
from agentworld_gym.domains.notion.toolspecs import tool_specs
from agentworld_gym.errors import ToolArgumentError, ToolExecutionError
from agentworld_gym.tools import Toolbox, ToolContext

I = ids()  # noqa: E741
TASKS_DB = I["database"]["tasks"]
PROJECTS_DB = I["database"]["projects"]
MISSING = "00000000-0000-4000-8000-000000000000"


@pytest.fixture(scope="module")
def spec():
    return make_spec(tasks=[])


@pytest.fixture(scope="module")
def toolbox(spec):
    return Toolbox(spec)


@pytest.fixture
def ctx(spec):
    return ToolContext(db=spec.database.fork(), env_id="notion", task_id="test")


@pytest.fixture
def call(toolbox, ctx):
    def run(name: str, **arguments: Any) -> Any:
        return toolbox.call(ctx, f"API-{name}", arguments, strict=True)

    return run


def error_of(call, name: str, **arguments: Any) -> dict[str, Any]:
    with pytest.raises(ToolExecutionError) as info:
        call(name, **arguments)
    return info.value.body


def names(result: dict[str, Any]) -> list[str]:
    return [p["properties"]["Name"]["title"][0]["plain_text"] for p in result["results"]]


def query_names(call, db: str = TASKS_DB, **arguments: Any) -> list[str]:
    return names(call("post-database-query", database_id=db, **arguments))


# -- tool surface --------------------------------------------------------------------------
def test_tool_surface_matches_the_official_server():
    specs = {t["name"]: t for t in tool_specs()}
    assert list(specs) == [
        "API-get-user",
        "API-get-users",
        "API-get-self",
        "API-post-database-query",
        "API-post-search",
        "API-get-block-children",
        "API-patch-block-children",
        "API-retrieve-a-block",
        "API-update-a-block",
        "API-delete-a-block",
        "API-retrieve-a-page",
        "API-patch-page",
        "API-post-page",
        "API-create-a-database",
        "API-update-a-database",
        "API-retrieve-a-database",
        "API-retrieve-a-page-property",
        "API-retrieve-a-comment",
        "API-create-a-comment",
    ]
    props = {n: list(t["parameters"]["properties"]) for n, t in specs.items()}
    assert props["API-post-database-query"] == [
        "database_id",
        "filter_properties",
        "filter",
        "sorts",
        "start_cursor",
        "page_size",
        "archived",
        "in_trash",
    ]
    assert props["API-get-block-children"] == ["block_id", "start_cursor", "page_size"]
    assert props["API-patch-block-children"] == ["block_id", "children", "after"]
    assert props["API-retrieve-a-comment"] == ["block_id", "start_cursor", "page_size"]
    assert specs["API-create-a-comment"]["parameters"]["required"] == ["parent", "rich_text"]
    assert specs["API-post-database-query"]["description"] == (
        "Query a database\nError Responses:\n400: Bad request"
    )
    writes = {n for n, t in specs.items() if t["kind"] == "write"}
    assert writes == {
        "API-patch-block-children",
        "API-update-a-block",
        "API-delete-a-block",
        "API-patch-page",
        "API-post-page",
        "API-create-a-database",
        "API-update-a-database",
        "API-create-a-comment",
    }
    for tool in specs.values():
        assert "$ref" not in str(tool["parameters"])
        fastjsonschema.compile(tool["parameters"])


# -- filters -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("flt", "expected"),
    [
        (
            {"property": "Name", "title": {"starts_with": "portal"}},
            {
                "Portal SSO integration",
                "Portal usage dashboard",
                "Portal permissions model",
                "Portal onboarding emails",
                "Portal beta feedback survey",
            },
        ),
        (
            {"property": "Estimate", "number": {"greater_than": 12}},
            {"Migrate invoice generation", "Migrate revenue models"},
        ),
        (
            {"property": "Estimate", "number": {"is_empty": True}},
            {"Hire contract iOS engineer", "Renew office lease"},
        ),
        (
            {"property": "Labels", "multi_select": {"contains": "bug"}},
            {
                "Fix coupon field validation",
                "Fix proration rounding bug",
                "Fix duplicate customer rows",
            },
        ),
        (
            {"property": "Status", "status": {"equals": "In review"}},
            {
                "Fix coupon field validation",
                "Fix proration rounding bug",
                "Portal permissions model",
                "Fix duplicate customer rows",
                "New logo concepts",
                "Update pricing page copy",
            },
        ),
        (
            {"property": "Due", "date": {"equals": "2026-08-05"}},
            {"Update checkout analytics events"},
        ),
        ({"property": "Due", "date": {"is_empty": True}}, {"Partner API rate limit design"}),
        (
            {
                "and": [
                    {"property": "Due", "date": {"on_or_after": "2026-08-06"}},
                    {"property": "Due", "date": {"on_or_before": "2026-08-07"}},
                ]
            },
            {
                "Customer comms for billing change",
                "Implement address autocomplete",
                "New logo concepts",
            },
        ),
        (
            {
                "and": [
                    {"property": "Due", "date": {"after": "2026-09-30"}},
                    {"property": "Due", "date": {"before": "2026-12-31"}},
                ]
            },
            {"Draft partner API spec"},
        ),
        (
            {"property": "Assignee", "people": {"contains": I["user"]["maya"]}},
            {"Renew office lease", "Plan team offsite"},
        ),
        (
            {"property": "Project", "relation": {"is_empty": True}},
            {"Renew office lease", "Plan team offsite"},
        ),
        (
            {"property": "Project", "relation": {"contains": I["project"]["kb"]}},
            {"Migrate help articles", "Set up search analytics"},
        ),
        (
            {
                "and": [
                    {"property": "Done", "checkbox": {"equals": True}},
                    {"property": "Status", "status": {"does_not_equal": "Done"}},
                ]
            },
            {"Update pricing page copy"},
        ),
        (
            {
                "or": [
                    {"property": "Name", "title": {"contains": "Apple Pay"}},
                    {
                        "and": [
                            {"property": "Labels", "multi_select": {"contains": "urgent"}},
                            {"property": "Assignee", "people": {"is_not_empty": True}},
                        ]
                    },
                ]
            },
            {"Add Apple Pay support", "Fix proration rounding bug"},
        ),
    ],
)
def test_filters(call, flt, expected):
    assert set(query_names(call, filter=flt)) == expected


def test_relative_date_filters_use_the_pinned_clock(call):
    past = set(query_names(call, filter={"property": "Due", "date": {"past_week": {}}}))
    assert "Add Apple Pay support" in past and "Press kit update" in past
    assert "Implement address autocomplete" not in past
    future = set(query_names(call, filter={"property": "Due", "date": {"next_week": {}}}))
    assert "Implement address autocomplete" in future and "Add Apple Pay support" not in future
    meetings = names(
        call(
            "post-database-query",
            database_id=I["database"]["meetings"],
            filter={"property": "Summary", "rich_text": {"contains": "hiring"}},
        )
    )
    assert meetings == ["Leadership weekly"]


def test_timestamp_filter_sees_writes(call):
    flt = {"timestamp": "last_edited_time", "last_edited_time": {"on_or_after": "2026-08-05"}}
    assert query_names(call, filter=flt) == []
    call(
        "patch-page", page_id=I["task"]["Press kit update"], properties={"Estimate": {"number": 4}}
    )
    assert query_names(call, filter=flt) == ["Press kit update"]


def test_filter_errors_are_notion_validation_errors(call):
    err = error_of(
        call,
        "post-database-query",
        database_id=TASKS_DB,
        filter={"property": "Owner", "people": {"is_empty": True}},
    )
    assert err == {
        "object": "error",
        "status": 400,
        "code": "validation_error",
        "message": "Could not find property with name or id: Owner",
    }
    err = error_of(
        call,
        "post-database-query",
        database_id=TASKS_DB,
        filter={"property": "Status", "select": {"equals": "Done"}},
    )
    assert err["message"] == "database property status does not match filter select"
    err = error_of(
        call,
        "post-database-query",
        database_id=TASKS_DB,
        filter={"property": "Estimate", "number": {"equals": "3"}},
    )
    assert "number" in err["message"] and err["code"] == "validation_error"
    err = error_of(
        call,
        "post-database-query",
        database_id=TASKS_DB,
        filter={"property": "Labels", "multi_select": {"equals": "bug"}},
    )
    assert "Invalid filter condition `equals`" in err["message"]


# -- sorts ---------------------------------------------------------------------------------
def test_sorts(call):
    by_budget = query_names(
        call, PROJECTS_DB, sorts=[{"property": "Budget", "direction": "descending"}]
    )
    assert by_budget[:2] == ["Mobile App v3", "Billing Service Migration"]
    by_priority = names(
        call(
            "post-database-query",
            database_id=PROJECTS_DB,
            sorts=[
                {"property": "Priority", "direction": "ascending"},
                {"property": "Name", "direction": "ascending"},
            ],
        )
    )
    assert by_priority[:3] == [
        "Billing Service Migration",
        "SOC 2 Readiness",
        "Atlas Checkout Redesign",
    ]
    for direction in ("ascending", "descending"):
        starts = query_names(
            call, PROJECTS_DB, sorts=[{"property": "Start", "direction": direction}]
        )
        assert starts[-1] == "Partner API"  # empty dates sort last either way
    oldest = query_names(
        call,
        PROJECTS_DB,
        sorts=[{"property": "ignored", "timestamp": "created_time", "direction": "ascending"}],
    )
    assert oldest[0] == "Atlas Checkout Redesign"
    err = error_of(
        call,
        "post-database-query",
        database_id=PROJECTS_DB,
        sorts=[{"property": "Budgett", "direction": "ascending"}],
    )
    assert err["status"] == 400


# -- pagination ----------------------------------------------------------------------------
def _collect(call, name: str, size: int, **arguments: Any) -> list[str]:
    seen, cursor = [], None
    while True:
        extra = {"start_cursor": cursor} if cursor else {}
        page = call(name, page_size=size, **arguments, **extra)
        assert len(page["results"]) <= size
        seen += [r["id"] for r in page["results"]]
        if not page["has_more"]:
            assert page["next_cursor"] is None
            return seen
        cursor = page["next_cursor"]


@pytest.mark.parametrize(
    ("name", "size", "arguments"),
    [
        ("post-database-query", 7, {"database_id": TASKS_DB}),
        ("post-search", 10, {}),
        ("get-block-children", 2, {"block_id": I["page"]["dev-setup"]}),
        ("get-users", 3, {}),
        ("retrieve-a-comment", 1, {"block_id": I["task"]["Migrate invoice generation"]}),
    ],
)
def test_pagination_round_trip(call, name, size, arguments):
    whole = [r["id"] for r in call(name, page_size=100, **arguments)["results"]]
    assert _collect(call, name, size, **arguments) == whole
    assert len(whole) > size or name == "retrieve-a-comment"


def test_page_size_and_cursor_errors(call):
    err = error_of(call, "post-database-query", database_id=TASKS_DB, page_size=101)
    assert err["code"] == "validation_error" and "100" in err["message"]
    err = error_of(call, "get-users", start_cursor="not-a-cursor")
    assert err["message"].startswith("The start_cursor provided is invalid")


def test_title_and_relation_property_items_paginate(call):
    page = I["task"]["Fix proration rounding bug"]
    title = call("retrieve-a-page-property", page_id=page, property_id="title")
    assert title["object"] == "list" and title["type"] == "property_item"
    assert title["results"][0]["title"]["plain_text"] == "Fix proration rounding bug"
    props = call("retrieve-a-page", page_id=page)["properties"]
    relation = call(
        "retrieve-a-page-property", page_id=page, property_id=props["Project"]["id"], page_size=1
    )
    assert relation["results"][0]["relation"] == {"id": I["project"]["billing"]}
    number = call("retrieve-a-page-property", page_id=page, property_id=props["Estimate"]["id"])
    assert number == {
        "object": "property_item",
        "id": props["Estimate"]["id"],
        "type": "number",
        "number": 3,
    }


# -- errors --------------------------------------------------------------------------------
def test_not_found_and_malformed_ids(call):
    err = error_of(call, "retrieve-a-page", page_id=MISSING)
    assert err == {
        "object": "error",
        "status": 404,
        "code": "object_not_found",
        "message": f"Could not find page with ID: {MISSING}. Make sure the relevant pages and "
        "databases are shared with your integration.",
    }
    assert error_of(call, "retrieve-a-database", database_id=MISSING)["status"] == 404
    assert error_of(call, "retrieve-a-block", block_id=MISSING)["status"] == 404
    err = error_of(call, "retrieve-a-page", page_id="not-an-id")
    assert err["code"] == "validation_error"
    assert err["message"] == (
        'path failed validation: path.page_id should be a valid uuid, instead was `"not-an-id"`.'
    )
    err = error_of(call, "retrieve-a-page", page_id=TASKS_DB)
    assert "is a database, not a page" in err["message"]
    undashed = I["task"]["Press kit update"].replace("-", "")
    assert call("retrieve-a-page", page_id=undashed)["id"] == I["task"]["Press kit update"]


def test_failed_write_leaves_state_unchanged(toolbox, ctx):
    before = ctx.db.fingerprint()
    with pytest.raises(ToolExecutionError):
        toolbox.call(
            ctx,
            "API-post-page",
            {
                "parent": {"database_id": TASKS_DB},
                "properties": {
                    "Name": {"title": [{"text": {"content": "x"}}]},
                    "Labels": {"multi_select": [{"name": "brand-new-label"}]},
                },
                "children": ["{not json"],
            },
            strict=True,
        )  # the new select option is written before the children fail
    with pytest.raises(ToolArgumentError):
        toolbox.call(ctx, "API-patch-page", {"page_id": MISSING, "archive": True}, strict=True)
    assert ctx.db.fingerprint() == before
    labels = ctx.db.get("databases", TASKS_DB)["properties"]["Labels"]["multi_select"]
    assert "brand-new-label" not in [o["name"] for o in labels["options"]]


def test_post_page_checks_properties_against_the_schema(call):
    base = {"Name": {"title": [{"text": {"content": "New"}}]}}
    cases = {
        "Due": ({"number": 5}, "Due is expected to be date."),
        "Owner": ({"people": []}, "Owner is not a property that exists."),
        "Estimate": ({"number": "five"}, "body.properties.Estimate.number should be a number"),
        "Status": ({"status": {"name": "Blocked"}}, 'Status option "Blocked" does not exist'),
        "Project": ({"relation": [{"id": I["task"]["Press kit update"]}]}, "can only link"),
    }
    for prop, (value, message) in cases.items():
        err = error_of(
            call, "post-page", parent={"database_id": TASKS_DB}, properties={**base, prop: value}
        )
        assert err["code"] == "validation_error" and message in err["message"], prop
    page = call(
        "post-page",
        parent={"database_id": TASKS_DB},
        properties={**base, "Labels": {"multi_select": [{"name": "ops"}]}},
    )
    assert page["properties"]["Status"]["status"]["name"] == "Not started"
    options = call("retrieve-a-database", database_id=TASKS_DB)["properties"]["Labels"]
    assert "ops" in [o["name"] for o in options["multi_select"]["options"]]


# -- archival ------------------------------------------------------------------------------
def test_archived_pages(call):
    analytics = I["project"]["analytics"]
    assert "Internal Analytics Dashboard" not in query_names(call, PROJECTS_DB)
    assert query_names(call, PROJECTS_DB, archived=True) == ["Internal Analytics Dashboard"]
    assert call("retrieve-a-page", page_id=analytics)["archived"] is True
    err = error_of(call, "patch-page", page_id=analytics, properties={"Budget": {"number": 1}})
    assert err["message"].startswith("Can't edit block that is archived")
    restored = call(
        "patch-page", page_id=analytics, archived=False, properties={"Budget": {"number": 1}}
    )
    assert restored["archived"] is False and restored["properties"]["Budget"]["number"] == 1
    assert "Internal Analytics Dashboard" in query_names(call, PROJECTS_DB)
    titles = [r["id"] for r in call("post-search", query="Offsite Notes")["results"]]
    assert titles == []


def test_delete_a_block_archives_and_hides_it(call):
    toggle = call("get-block-children", block_id=I["page"]["dev-setup"])["results"][-1]
    deleted = call("delete-a-block", block_id=toggle["id"])
    assert deleted["archived"] is True and deleted["in_trash"] is True
    assert deleted["id"] == toggle["id"] and deleted["type"] == "toggle"
    left = [b["id"] for b in call("get-block-children", block_id=I["page"]["dev-setup"])["results"]]
    assert toggle["id"] not in left
    err = error_of(
        call,
        "update-a-block",
        block_id=toggle["id"],
        type={"toggle": {"rich_text": [{"text": {"content": "x"}}]}},
    )
    assert err["code"] == "validation_error"
    assert call("retrieve-a-block", block_id=toggle["id"])["archived"] is True


def test_patch_block_children_after_inserts_in_the_middle(call):
    page = I["page"]["dev-setup"]
    before = call("get-block-children", block_id=page)["results"]
    anchor = before[1]["id"]
    new = call(
        "patch-block-children",
        block_id=page,
        after=anchor,
        children=[
            {"paragraph": {"rich_text": [{"text": {"content": "one"}}]}},
            {
                "type": "bulleted_list_item",
                "bulleted_list_item": {"rich_text": [{"text": {"content": "two"}}]},
            },
        ],
    )
    assert [b["type"] for b in new["results"]] == ["paragraph", "bulleted_list_item"]
    after = call("get-block-children", block_id=page)["results"]
    ids_after = [b["id"] for b in after]
    assert ids_after[:2] == [b["id"] for b in before[:2]]
    assert ids_after[2:4] == [b["id"] for b in new["results"]]
    assert ids_after[4:] == [b["id"] for b in before[2:]]
    for _ in range(12):  # keep inserting at the same spot until the gap must be renumbered
        call(
            "patch-block-children",
            block_id=page,
            after=anchor,
            children=[{"paragraph": {"rich_text": [{"text": {"content": "again"}}]}}],
        )
    final = [b["id"] for b in call("get-block-children", block_id=page)["results"]]
    assert final[:2] == ids_after[:2] and final[-len(before) + 2 :] == ids_after[4:]
    err = error_of(
        call,
        "patch-block-children",
        block_id=page,
        after=MISSING,
        children=[{"paragraph": {"rich_text": []}}],
    )
    assert err["code"] == "validation_error"


def test_update_a_block_and_nested_children(call):
    toggle = call("get-block-children", block_id=I["page"]["dev-setup"])["results"][-1]
    kids = call("get-block-children", block_id=toggle["id"])["results"]
    grandkids = call("get-block-children", block_id=kids[1]["id"])["results"]
    assert grandkids[0]["bulleted_list_item"]["rich_text"][0]["plain_text"] == (
        "This deletes your local data"
    )
    todo = call("get-block-children", block_id=I["page"]["dev-setup"])["results"][1]
    updated = call("update-a-block", block_id=todo["id"], type={"to_do": {"checked": True}})
    assert updated["to_do"]["checked"] is True
    err = error_of(
        call, "update-a-block", block_id=todo["id"], type={"paragraph": {"rich_text": []}}
    )
    assert "cannot be changed" in err["message"]


# -- other tools ---------------------------------------------------------------------------
def test_users_search_comments_and_databases(call):
    me = call("get-self")
    assert me["type"] == "bot" and "_self" not in me
    assert call("get-user", user_id=I["user"]["sam"])["person"]["email"] == ("sam@northwindlabs.io")
    found = call("post-search", query="handbook")["results"]
    assert [r["id"] for r in found] == [I["page"]["handbook"]]
    dbs = call("post-search", filter={"property": "object", "value": "database"})
    assert {r["id"] for r in dbs["results"]} == set(I["database"].values())
    page = I["task"]["Add Apple Pay support"]
    made = call(
        "create-a-comment", parent={"page_id": page}, rich_text=[{"text": {"content": "On it."}}]
    )
    assert made["created_by"]["id"] == me["id"]
    listed = call("retrieve-a-comment", block_id=page)["results"]
    assert listed[-1]["rich_text"][0]["plain_text"] == "On it."
    db = call(
        "update-a-database",
        database_id=TASKS_DB,
        properties={
            "Estimate": {"name": "Hours"},
            "Sprint": {"select": {"options": [{"name": "S1"}]}},
        },
    )
    assert "Hours" in db["properties"] and "Sprint" in db["properties"]
    assert "Hours" in call("retrieve-a-page", page_id=page)["properties"]
    created = call(
        "create-a-database",
        parent={"page_id": I["page"]["hq"]},
        title=[{"text": {"content": "OKRs"}}],
        properties={"Objective": {"title": {}}, "Score": {"number": {}}},
    )
    assert created["title"][0]["plain_text"] == "OKRs"
    row = call(
        "post-page",
        parent={"database_id": created["id"]},
        properties={"Objective": {"title": [{"text": {"content": "Grow"}}]}},
    )
    assert call("post-database-query", database_id=created["id"])["results"][0]["id"] == row["id"]


# -- determinism ---------------------------------------------------------------------------
def test_seed_is_deterministic(tmp_path):
    first, second = make_spec(tasks=[]), make_spec(tasks=[])
    assert first.database.fingerprint() == second.database.fingerprint()
    assert build_records() == build_records()
    first.save(tmp_path / "a")
    second.save(tmp_path / "b")
    for path in sorted((tmp_path / "a").rglob("*.json")):
        assert path.read_bytes() == (tmp_path / "b" / path.relative_to(tmp_path / "a")).read_bytes()


def test_seed_shape():
    records = build_records()
    assert sum(len(v) for v in records.values()) >= 150
    assert len(records["users"]) >= 9
    assert [u for u in records["users"] if u.get("_self")][0]["type"] == "bot"
    depth = {}
    blocks = {b["id"]: b for b in records["blocks"]}
    for b in records["blocks"]:
        d, cur = 1, b
        while cur["parent"]["type"] == "block_id":
            cur, d = blocks[cur["parent"]["block_id"]], d + 1
        depth[b["id"]] = d
    assert max(depth.values()) >= 3


def test_queries_serve_cached_json_yet_see_the_episode_writes(spec, toolbox):
    """Query and search answer from cached JSON of unchanged pages: a write shows at once in
    its episode, never in the next one, and the env's text equals the plain result's JSON."""
    import orjson

    from agentworld_gym.tools import Encoded

    first = ToolContext(db=spec.database.fork(), env_id="notion", task_id="a")
    args = {"database_id": TASKS_DB}
    before = toolbox.call(first, "API-post-database-query", args, strict=True)
    raw = toolbox.call(first, "API-post-database-query", args, encoded=True)
    assert isinstance(raw, Encoded) and orjson.loads(raw.json()) == before
    page = before["results"][0]
    title = [{"text": {"content": "Renamed in this episode"}}]
    toolbox.call(
        first,
        "API-patch-page",
        {"page_id": page["id"], "properties": {"Name": {"title": title}}},
        strict=True,
    )
    after = toolbox.call(first, "API-post-database-query", args, strict=True)
    assert "Renamed in this episode" in names(after)
    found = toolbox.call(first, "API-post-search", {"query": "renamed in this"}, strict=True)
    assert [r["id"] for r in found["results"]] == [page["id"]]
    second = ToolContext(db=spec.database.fork(), env_id="notion", task_id="b")
    assert toolbox.call(second, "API-post-database-query", args, strict=True) == before
    assert toolbox.call(second, "API-post-search", {"query": "renamed in this"})["results"] == []


def test_filter_verdicts_are_reused_only_where_nothing_changed(spec, toolbox):
    """A filter's verdicts on unchanged pages are remembered across episodes; a page this
    episode wrote, a schema it changed and another clock date are judged afresh."""
    import datetime as dt

    def query(ctx, flt):
        result = toolbox.call(
            ctx, "API-post-database-query", {"database_id": TASKS_DB, "filter": flt}, strict=True
        )
        return names(result)

    def fresh(**clock):
        return ToolContext(db=spec.database.fork(), env_id="notion", task_id="v", **clock)

    past_week = {"property": "Due", "date": {"past_week": {}}}
    first = query(fresh(), past_week)
    assert query(fresh(), past_week) == first
    later = dt.datetime(2026, 9, 5, 9, tzinfo=dt.UTC)
    assert set(query(fresh(clock_start=later), past_week)) != set(first)
    ctx = fresh()
    by_name = {"property": "Name", "title": {"equals": "Add Apple Pay support"}}
    (page,) = toolbox.call(
        ctx, "API-post-database-query", {"database_id": TASKS_DB, "filter": by_name}, strict=True
    )["results"]
    renamed = {"Name": {"title": [{"text": {"content": "Apple Pay, renamed"}}]}}
    toolbox.call(ctx, "API-patch-page", {"page_id": page["id"], "properties": renamed})
    assert query(ctx, by_name) == []
    assert query(ctx, {"property": "Name", "title": {"contains": "renamed"}}) == [
        "Apple Pay, renamed"
    ]
    grown = {"properties": {"Name": {"name": "Task"}}}
    toolbox.call(ctx, "API-update-a-database", {"database_id": TASKS_DB, **grown}, strict=True)
    renamed_prop = {"property": "Task", "title": {"contains": "renamed"}}
    found = toolbox.call(
        ctx, "API-post-database-query", {"database_id": TASKS_DB, "filter": renamed_prop}
    )
    assert [p["id"] for p in found["results"]] == [page["id"]]
    assert query(fresh(), by_name) == ["Add Apple Pay support"]


def test_filter_memo_keeps_the_trash_apart(spec, toolbox):
    flt = {"property": "Status", "status": {"does_not_equal": "zzz"}}

    def ids_of(ctx, **extra):
        args = {"database_id": TASKS_DB, "filter": flt, **extra}
        return [p["id"] for p in toolbox.call(ctx, "API-post-database-query", args)["results"]]

    first = ToolContext(db=spec.database.fork(), env_id="notion", task_id="t")
    live = ids_of(first)
    toolbox.call(first, "API-patch-page", {"page_id": live[0], "archived": True}, strict=True)
    assert live[0] in ids_of(first, archived=True)
    assert live[0] not in ids_of(first)
    second = ToolContext(db=spec.database.fork(), env_id="notion", task_id="t")
    assert ids_of(second) == live and live[0] not in ids_of(second, archived=True)


def test_whole_answers_are_shared_only_by_episodes_that_wrote_nothing_they_read(spec, toolbox):
    """Reads of the unchanged initial state (query, search, block children, users) answer
    with the same JSON text in every episode; an episode's own write shows at once in its
    reads, never in another episode's, and a failing call keeps nothing."""
    from agentworld_gym.env import dumps

    def fresh(task: str) -> ToolContext:
        return ToolContext(db=spec.database.fork(), env_id="notion", task_id=task)

    def text(ctx: ToolContext, name: str, **arguments: Any) -> str:
        return dumps(toolbox.call(ctx, name, arguments, strict=True, encoded=True))

    parent = next(
        b["parent"]["page_id"]
        for b in spec.database.scan("blocks")
        if b["parent"].get("type") == "page_id"
    )
    reads = [
        ("API-post-database-query", {"database_id": TASKS_DB, "page_size": 3}),
        ("API-post-search", {"query": "a"}),
        ("API-get-block-children", {"block_id": parent}),
        ("API-get-users", {}),
    ]
    first = {name: text(fresh("a"), name, **args) for name, args in reads}
    for name, args in reads:
        assert text(fresh("b"), name, **args) == first[name]
        plain = toolbox.call(fresh("c"), name, args, strict=True)
        plain["results"].clear()  # a caller's copy: mutating it changes no later answer
        assert text(fresh("d"), name, **args) == first[name]
    ctx = fresh("w")
    added = [{"paragraph": {"rich_text": [{"text": {"content": "Added in this episode"}}]}}]
    toolbox.call(ctx, "API-patch-block-children", {"block_id": parent, "children": added})
    assert "Added in this episode" in text(ctx, "API-get-block-children", block_id=parent)
    assert "Added in this episode" not in text(
        fresh("x"), "API-get-block-children", block_id=parent
    )
    with pytest.raises(ToolExecutionError):
        toolbox.call(fresh("y"), "API-get-block-children", {"block_id": "0" * 32}, strict=True)
    with pytest.raises(ToolExecutionError):
        toolbox.call(fresh("z"), "API-get-block-children", {"block_id": "0" * 32}, strict=True)


def test_a_schema_change_migrates_every_page_as_if_at_once(spec, toolbox):
    """Pages follow a rename, a removal and an addition when they are next read (lazily):
    the state equals the eager migration of the pages as they were, and a failed update
    leaves no placeholder behind."""
    ctx = ToolContext(db=spec.database.fork(), env_id="notion", task_id="t")
    before = [p for p in ctx.db.scan("pages") if p["parent"].get("database_id") == TASKS_DB]
    change = {"Estimate": {"name": "Hours"}, "Due": None, "Risk": {"checkbox": {}}}
    made = toolbox.call(
        ctx, "API-update-a-database", {"database_id": TASKS_DB, "properties": change}, strict=True
    )
    risk = made["properties"]["Risk"]
    for old in before:
        props = {("Hours" if k == "Estimate" else k): v for k, v in old["properties"].items()}
        del props["Due"]
        props["Risk"] = {"id": risk["id"], "type": "checkbox", "checkbox": False}
        assert ctx.db.get("pages", old["id"]) == {**old, "properties": props}
    snapshot = ctx.db.snapshot_json()
    failed = {"Hours": {"name": "Name"}}  # a name taken: refused, nothing changes
    with pytest.raises(ToolExecutionError):
        toolbox.call(ctx, "API-update-a-database", {"database_id": TASKS_DB, "properties": failed})
    assert ctx.db.snapshot_json() == snapshot

"""Semantics of the declarative ``op`` runtime, driven through the real Toolbox."""

from __future__ import annotations

import pytest

import agentworld_gym.ops  # noqa: F401  (registers the "op" implementation)
from agentworld_gym.errors import ConfigError, ToolArgumentError, ToolExecutionError
from agentworld_gym.spec import EnvSpec, ToolSpec
from agentworld_gym.tools import Toolbox, ToolContext

S = {"type": "string"}
INT = {"type": "integer"}
ERROR = {"message": "{message}", "code": "{status}"}


def tool(name: str, impl: dict, props: dict, required: list[str] = (), kind: str = "read"):
    return ToolSpec(
        name=name,
        description=name,
        parameters={
            "type": "object",
            "properties": props,
            "required": list(required),
            "additionalProperties": False,
        },
        implementation={"type": "op", "collection": "pets", "error": ERROR, **impl},
        kind=kind,
    )


def make_env() -> EnvSpec:
    owners = [{"id": "o1", "name": "Ann"}, {"id": "o2", "name": "Bob"}]
    pets = [
        {
            "id": f"p{i}",
            "name": f"pet{i}",
            "status": "sold" if i % 3 == 0 else "available",
            "ownerId": "o1" if i < 6 else "o2",
            "tags": ["a"] if i % 2 else ["b"],
            "age": i,
        }
        for i in range(1, 10)
    ]
    photos = [{"id": 1, "petId": "p1", "url": "u1"}, {"id": 2, "petId": "p2", "url": "u2"}]
    tools = [
        tool(
            "listPets",
            {
                "op": "list",
                "filters": {"status": "status", "tag": "tags"},
                "page": {
                    "style": "offset",
                    "size": "limit",
                    "offset": "offset",
                    "default": 3,
                    "max": 5,
                },
                "response": {"items": "data", "total": "total"},
            },
            {"status": S, "tag": S, "limit": INT, "offset": INT},
        ),
        tool(
            "searchPets",
            {
                "op": "search",
                "search": {"arg": "q", "fields": ["name"]},
                "page": {"style": "cursor", "cursor": "pageToken", "size": "size", "default": 2},
                "response": {"items": "items", "next": "nextPageToken"},
            },
            {"q": S, "pageToken": S, "size": INT},
        ),
        tool(
            "pagePets",
            {
                "op": "list",
                "page": {"style": "page", "page": "page", "size": "per_page", "base": 1},
            },
            {"page": INT, "per_page": INT},
        ),
        tool(
            "getPet",
            {"op": "get", "key": "petId", "response": {"wrap": "pet"}},
            {"petId": S},
            ["petId"],
        ),
        tool(
            "getOwnerPet",
            {
                "op": "get",
                "key": "petId",
                "parents": [{"arg": "ownerId", "field": "ownerId", "collection": "owners"}],
            },
            {"ownerId": S, "petId": S},
            ["ownerId", "petId"],
        ),
        tool(
            "createPet",
            {
                "op": "create",
                "key_gen": "arg",
                "key": "id",
                "body": {"id": "id", "name": "name", "status": "status"},
                "defaults": {"status": "available", "tags": []},
                "stamp": {"created": ["createdAt"]},
                "unique": ["name"],
            },
            {"id": S, "name": S, "status": S},
            ["id", "name"],
            "write",
        ),
        tool(
            "updatePet",
            {
                "op": "update",
                "key": "petId",
                "body": {"status": "status", "owner": "owner"},
                "stamp": {"updated": ["updatedAt"]},
            },
            {"petId": S, "status": S, "owner": S},
            ["petId"],
            "write",
        ),
        tool(
            "putPet",
            {
                "op": "update",
                "key": "petId",
                "upsert": True,
                "key_gen": "arg",
                "body": {"name": "name"},
            },
            {"petId": S, "name": S},
            ["petId"],
            "write",
        ),
        tool(
            "deletePet",
            {"op": "delete", "key": "petId", "response": {"body": {}}},
            {"petId": S},
            ["petId"],
            "write",
        ),
        ToolSpec(
            "listPhotos",
            "photos",
            {"type": "object", "properties": {"petId": S}, "required": ["petId"]},
            {
                "type": "op",
                "op": "list",
                "collection": "photos",
                "parents": [{"arg": "petId", "field": "petId", "collection": "pets"}],
            },
        ),
        ToolSpec(
            "addPhoto",
            "add",
            {"type": "object", "properties": {"petId": S, "url": S}, "required": ["petId", "url"]},
            {
                "type": "op",
                "op": "create",
                "collection": "photos",
                "key_gen": "int",
                "body": {"url": "url"},
                "parents": [{"arg": "petId", "field": "petId", "collection": "pets"}],
            },
            kind="write",
        ),
    ]
    return EnvSpec(
        id="pets",
        name="Pets",
        description="",
        tools=tools,
        collections={
            "pets": {"primary_key": "id"},
            "owners": {"primary_key": "id"},
            "photos": {"primary_key": "id"},
        },
        records={"pets": pets, "owners": owners, "photos": photos},
    )


@pytest.fixture
def box():
    env = make_env()
    toolbox = Toolbox(env)
    ctx = ToolContext(env.database.fork(), "pets", "t")

    def call(tool_name: str, /, **args):
        return toolbox.call(ctx, tool_name, args, strict=True)

    call.ctx = ctx
    return call


def test_list_filters_and_offset_paging(box):
    page = box("listPets", status="available")
    assert page["total"] == 6 and [p["id"] for p in page["data"]] == ["p1", "p2", "p4"]
    page = box("listPets", status="available", offset=3, limit=100)
    assert [p["id"] for p in page["data"]] == ["p5", "p7", "p8"]  # limit clamped to max 5
    assert box("listPets", tag="a")["total"] == 5  # a list field matches by membership


def test_cursor_paging_walks_every_match(box):
    seen, token = [], None
    while True:
        page = box("searchPets", q="PET", **({"pageToken": token} if token else {}))
        seen += [p["id"] for p in page["items"]]
        token = page.get("nextPageToken")
        if not token:
            break
    assert seen == [f"p{i}" for i in range(1, 10)]
    with pytest.raises(ToolExecutionError) as err:
        box("searchPets", pageToken="garbage!")
    assert err.value.body["code"] == 400


def test_page_number_paging(box):
    assert [p["id"] for p in box("pagePets", page=2, per_page=4)] == ["p5", "p6", "p7", "p8"]


def test_get_wraps_and_missing_key_is_404_in_the_api_style(box):
    assert box("getPet", petId="p2")["pet"]["name"] == "pet2"
    with pytest.raises(ToolExecutionError) as err:
        box("getPet", petId="nope")
    assert err.value.body == {"message": "pets 'nope' not found", "code": 404}


def test_get_checks_the_parent_scope(box):
    assert box("getOwnerPet", ownerId="o1", petId="p1")["id"] == "p1"
    with pytest.raises(ToolExecutionError, match="404"):  # exists, but under another owner
        box("getOwnerPet", ownerId="o2", petId="p1")
    with pytest.raises(ToolExecutionError, match="owners 'o9' not found"):
        box("getOwnerPet", ownerId="o9", petId="p1")


def test_create_conflicts_and_invalid_input(box):
    made = box("createPet", id="p99", name="Rex")
    assert made["status"] == "available" and made["createdAt"] == box.ctx.now_iso()
    with pytest.raises(ToolExecutionError) as err:
        box("createPet", id="p99", name="Other")
    assert err.value.body["code"] == 409
    with pytest.raises(ToolExecutionError, match="409"):  # unique field
        box("createPet", id="p100", name="Rex")
    with pytest.raises(ToolArgumentError):  # schema: 400-style invalid input
        box("createPet", id="p101")
    with pytest.raises(ToolArgumentError):
        box("createPet", id="p101", name=5)


def test_update_merges_and_stamps_without_touching_the_base(box):
    base = box.ctx.db.fork()
    out = box("updatePet", petId="p1", status="sold", owner="Zed")
    assert out["status"] == "sold" and out["owner"] == "Zed" and "updatedAt" in out
    assert out["name"] == "pet1"
    assert base.get("pets", "p1")["status"] == "available"
    with pytest.raises(ToolExecutionError, match="404"):
        box("updatePet", petId="zzz", status="sold")


def test_upsert_creates_a_missing_record(box):
    assert box("putPet", petId="new", name="N")["id"] == "new"
    assert box("putPet", petId="new", name="M")["name"] == "M"


def test_delete_then_get_is_404(box):
    assert box("deletePet", petId="p3") == {}
    with pytest.raises(ToolExecutionError, match="404"):
        box("getPet", petId="p3")
    with pytest.raises(ToolExecutionError, match="404"):
        box("deletePet", petId="p3")


def test_sub_resource_list_and_append(box):
    assert [p["url"] for p in box("listPhotos", petId="p1")] == ["u1"]
    made = box("addPhoto", petId="p1", url="u3")
    assert made == {"id": 3, "petId": "p1", "url": "u3"}
    assert [p["url"] for p in box("listPhotos", petId="p1")] == ["u1", "u3"]
    with pytest.raises(ToolExecutionError, match="pets 'p404' not found"):
        box("addPhoto", petId="p404", url="x")


def test_failed_write_rolls_back(box):
    before = box.ctx.db.fingerprint()
    with pytest.raises(ToolExecutionError):
        box("addPhoto", petId="p404", url="x")
    assert box.ctx.db.fingerprint() == before


def test_bad_definitions_fail_at_build_time():
    env = make_env()
    env.tools = [tool("x", {"op": "frobnicate"}, {})]
    with pytest.raises(ConfigError, match="unknown op"):
        Toolbox(env)
    env.tools = [tool("x", {"op": "get", "collection": "ghosts"}, {})]
    with pytest.raises(ConfigError, match="not declared"):
        Toolbox(env)

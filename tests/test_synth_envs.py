"""Environment synthesis from API specs, on small inline specs (no download needed)."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import orjson
import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.replay import replay_gold
from agentworld_gym.spec import EnvSpec
from agentworld_gym.synthesis.envs import SynthConfig, synthesize
from agentworld_gym.synthesis.envs.build import process_spec, spec_slugs
from agentworld_gym.synthesis.envs.cut import MAX_OPS, MIN_OPS, cut, near_duplicates, signature
from agentworld_gym.synthesis.envs.normalize import Operation, normalise, safe_name
from agentworld_gym.synthesis.envs.source import license_family, usable_license
from agentworld_gym.taxonomy import (
    L1_CATEGORIES,
    L2_GROUPS,
    KeywordClassifier,
    classify_with_llm,
    parse_llm_choice,
)

TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _ref(name: str) -> dict:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict) -> dict:
    return {"content": {"application/json": {"schema": schema}}}


def petstore() -> dict:
    """A small but complete API: pets (CRUD, filters, paging), owners, photos, errors."""
    pet_id = {"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}}
    error = {"description": "error", **_json(_ref("Error"))}
    return {
        "openapi": "3.0.0",
        "info": {
            "title": "Petstore",
            "version": "1.0",
            "description": "Manage pets and owners.",
            "x-providerName": "petstore.test",
            "license": {"name": "MIT"},
            "x-origin": [
                {"format": "openapi", "url": "https://example.test/openapi.json", "version": "3.0"}
            ],
        },
        "components": {
            "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "apiToken"}},
            "schemas": {
                "Error": {
                    "type": "object",
                    "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
                },
                "Base": {
                    "type": "object",
                    "required": ["id"],
                    "properties": {
                        "id": {"type": "string", "readOnly": True},
                        "createdAt": {"type": "string", "format": "date-time", "readOnly": True},
                    },
                },
                "Pet": {
                    "allOf": [
                        _ref("Base"),
                        {
                            "type": "object",
                            "required": ["name", "status"],
                            "properties": {
                                "name": {"type": "string"},
                                "status": {"type": "string", "enum": ["available", "sold"]},
                                "ownerId": {"type": "string"},
                                "email": {"type": "string", "format": "email"},
                                "parent": _ref("Pet"),
                            },
                        },
                    ]
                },
                "Owner": {
                    "type": "object",
                    "required": ["id", "name"],
                    "properties": {
                        "id": {"type": "string"},
                        "name": {"type": "string"},
                        "city": {"type": "string"},
                    },
                },
                "Photo": {
                    "type": "object",
                    "required": ["id", "url"],
                    "properties": {
                        "id": {"type": "integer"},
                        "url": {"type": "string", "format": "uri"},
                        "caption": {"type": "string"},
                    },
                },
            },
        },
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "listPets",
                    "summary": "List pets",
                    "tags": ["pets"],
                    "parameters": [
                        {"name": "status", "in": "query", "schema": {"type": "string"}},
                        {"name": "limit", "in": "query", "schema": {"type": "integer"}},
                        {"name": "offset", "in": "query", "schema": {"type": "integer"}},
                        {"name": "api-version", "in": "query", "schema": {"type": "string"}},
                        {"name": "apiToken", "in": "query", "schema": {"type": "string"}},
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "ok",
                            **_json(
                                {
                                    "type": "object",
                                    "properties": {
                                        "items": {"type": "array", "items": _ref("Pet")},
                                        "total": {"type": "integer"},
                                    },
                                }
                            ),
                        },
                        "default": error,
                    },
                },
                "post": {
                    "operationId": "createPet",
                    "summary": "Create a pet",
                    "tags": ["pets"],
                    "requestBody": {"required": True, **_json(_ref("Pet"))},
                    "responses": {"201": {"description": "made", **_json(_ref("Pet"))}},
                },
            },
            "/pets/{petId}": {
                "parameters": [pet_id],
                "get": {
                    "operationId": "getPet",
                    "summary": "Get a pet",
                    "tags": ["pets"],
                    "responses": {"200": {"description": "ok", **_json(_ref("Pet"))}, "404": error},
                },
                "patch": {
                    "operationId": "updatePet",
                    "tags": ["pets"],
                    "requestBody": _json(_ref("Pet")),
                    "responses": {"200": {"description": "ok", **_json(_ref("Pet"))}},
                },
                "delete": {
                    "operationId": "deletePet",
                    "tags": ["pets"],
                    "responses": {"204": {"description": "gone"}},
                },
            },
            "/pets/{petId}/photos": {
                "parameters": [pet_id],
                "get": {
                    "operationId": "listPhotos",
                    "tags": ["photos"],
                    "responses": {
                        "200": {
                            "description": "ok",
                            **_json({"type": "array", "items": _ref("Photo")}),
                        }
                    },
                },
                "post": {
                    "operationId": "addPhoto",
                    "tags": ["photos"],
                    "requestBody": _json(
                        {
                            "type": "object",
                            "required": ["url"],
                            "properties": {
                                "url": {"type": "string"},
                                "caption": {"type": "string"},
                            },
                        }
                    ),
                    "responses": {"201": {"description": "ok", **_json(_ref("Photo"))}},
                },
                "put": {
                    "operationId": "uploadPhoto",
                    "tags": ["photos"],
                    "requestBody": {"content": {"multipart/form-data": {"schema": {}}}},
                    "responses": {"200": {"description": "ok"}},
                },
            },
            "/owners": {
                "get": {
                    "operationId": "listOwners",
                    "tags": ["owners"],
                    "responses": {
                        "200": {
                            "description": "ok",
                            **_json({"type": "array", "items": _ref("Owner")}),
                        }
                    },
                },
                "post": {
                    "operationId": "createOwner",
                    "tags": ["owners"],
                    "requestBody": _json(_ref("Owner")),
                    "responses": {"201": {"description": "ok", **_json(_ref("Owner"))}},
                },
            },
            "/owners/{ownerId}": {
                "get": {
                    "operationId": "getOwner",
                    "tags": ["owners"],
                    "parameters": [
                        {
                            "name": "ownerId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string"},
                        }
                    ],
                    "responses": {"200": {"description": "ok", **_json(_ref("Owner"))}},
                }
            },
            "/legacy": {
                "get": {
                    "operationId": "legacy",
                    "deprecated": True,
                    "responses": {"200": {"description": "ok"}},
                }
            },
            "/feed.xml": {
                "get": {
                    "operationId": "feed",
                    "responses": {
                        "200": {"description": "ok", "content": {"application/xml": {"schema": {}}}}
                    },
                }
            },
        },
    }


# -- normalisation --------------------------------------------------------------------------
def test_refs_cycles_and_all_of_are_resolved():
    spec = normalise(petstore(), "petstore.test")
    ops = {op.name: op for op in spec.operations}
    pet = ops["getPet"].response
    assert pet["required"] == ["id", "name", "status"]  # allOf merged, required unioned
    assert {"id", "createdAt", "name", "parent"} <= set(pet["properties"])
    depth, node = 0, pet
    while "parent" in node.get("properties", {}):  # the cycle is cut, not followed forever
        node, depth = node["properties"]["parent"], depth + 1
    assert depth <= 2
    body = ops["createPet"].body
    assert "id" not in body["properties"] and "createdAt" not in body["properties"]  # readOnly
    assert body["required"] == ["name", "status"]


def test_transport_parameters_and_unusable_operations_are_dropped():
    spec = normalise(petstore(), "petstore.test")
    params = {p.name for p in next(o for o in spec.operations if o.name == "listPets").params}
    assert params == {"status", "limit", "offset"}  # api-version, API key, header: gone
    assert spec.dropped == {"deprecated": 1, "multipart body": 1, "xml-only response": 1}
    assert spec.license == {"name": "MIT"} and spec.origin[0]["format"] == "openapi"


def test_tool_names_are_sanitised_and_unique():
    assert safe_name("get pets/{id} (v2)!") == "get_pets_id_v2"
    long = safe_name("x" * 100)
    assert TOOL_NAME.match(long) and len(long) == 64
    doc = petstore()
    doc["paths"]["/pets"]["get"]["operationId"] = "list pets!!"
    doc["paths"]["/owners"]["get"]["operationId"] = "list_pets"
    names = [op.name for op in normalise(doc, "k").operations]
    assert all(TOOL_NAME.match(n) for n in names)
    assert len({n.casefold() for n in names}) == len(names)


def test_swagger2_is_lifted():
    doc = {
        "swagger": "2.0",
        "info": {"title": "S", "version": "1"},
        "definitions": {"T": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "paths": {
            "/t": {
                "post": {
                    "operationId": "mk",
                    "parameters": [
                        {"in": "body", "name": "body", "schema": {"$ref": "#/definitions/T"}}
                    ],
                    "responses": {
                        "200": {"description": "ok", "schema": {"$ref": "#/definitions/T"}}
                    },
                }
            }
        },
    }
    (op,) = normalise(doc, "s").operations
    assert op.body["properties"] == {"a": {"type": "string"}}
    assert op.response["properties"] == {"a": {"type": "string"}}


# -- cutting --------------------------------------------------------------------------------
def _ops(n: int, tag_of) -> list[Operation]:
    return [
        Operation("get", f"/r{i}/x{i}", f"op{i}", f"op{i}", "", "", [tag_of(i)], [])
        for i in range(n)
    ]


def test_cutting_rules():
    spec = normalise(petstore(), "k")
    spec.operations = spec.operations[:4]
    assert "fewer than 5" in cut(spec)
    spec.operations = _ops(30, lambda i: "a")
    assert [len(g.ops) for g in cut(spec)] == [30]
    # 130 ops: a 100-op tag (split further), a 27-op tag, and three tiny tags to merge
    sizes = {"big": 100, "mid": 27, "t1": 1, "t2": 1, "t3": 1}
    tags = [t for t, n in sizes.items() for _ in range(n)]
    spec.operations = _ops(len(tags), lambda i: tags[i])
    groups = cut(spec)
    assert all(MIN_OPS <= len(g.ops) <= MAX_OPS for g in groups)
    assert sum(len(g.ops) for g in groups) == len(tags)
    assert {op.name for g in groups for op in g.ops} == {f"op{i}" for i in range(len(tags))}


def test_near_duplicates_within_a_provider():
    big = {"paths": {f"/p{i}": {"get": {}} for i in range(10)}}
    small = {"paths": {f"/p{i}": {"get": {}} for i in range(7)} | {"/other": {"get": {}}}}
    far = {"paths": {f"/q{i}": {"get": {}} for i in range(8)}}
    specs = {
        "a/big": ("a", signature(big)),
        "a/small": ("a", signature(small)),
        "a/far": ("a", signature(far)),
        "b/small": ("b", signature(small)),
    }
    assert near_duplicates(specs) == {"a/small": "a/big"}


def test_licences():
    assert license_family(None) == "unspecified" and usable_license("unspecified")
    assert license_family("Apache 2.0 License") == "open"
    assert license_family("GNU Affero General Public License v3.0") == "gpl"
    assert license_family("LGPL-2.1") == "gpl"
    assert license_family("Attribution-NonCommercial-ShareAlike 4.0") == "non-commercial"
    assert license_family("eBay API License Agreement") == "proprietary"
    assert not usable_license("proprietary")


# -- taxonomy -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("fields", "l1"),
    [
        ({"title": "OpenWeatherMap", "description": "Current weather and forecasts"}, "L1-06"),
        ({"title": "1Forge Finance APIs", "description": "Stock and Forex quotes"}, "L1-04"),
        ({"title": "GitHub", "tags": ["repos", "pulls", "issues"]}, "L1-07"),
        ({"title": "Vonage SMS", "description": "Send SMS text messages"}, "L1-20"),
        (
            {"title": "Blockchain explorer", "description": "bitcoin blocks and transactions"},
            "L1-05",
        ),
        ({"title": "PubMed", "description": "search publications and citations"}, "L1-02"),
        (
            {"title": "Screenshot API", "description": "headless browser capture of a webpage"},
            "L1-09",
        ),
    ],
)
def test_keyword_classifier_on_hand_examples(fields, l1):
    assert KeywordClassifier().classify(fields).l1 == l1


def test_taxonomy_constants_and_llm_parsing():
    assert len(L1_CATEGORIES) == 20 and set(L2_GROUPS) == set(L1_CATEGORIES)
    assert parse_llm_choice("L1-06 | Maps & Geocoding") == ("L1-06", "Maps & Geocoding")
    assert parse_llm_choice("no idea") is None

    class Backend:
        def __init__(self, reply):
            self.reply = reply

        def chat(self, messages, tools=None, **sampling):
            return {"role": "assistant", "content": self.reply}

    clf = KeywordClassifier()
    fields = {"title": "Weather", "description": "forecast"}
    assert classify_with_llm(Backend("L1-14 | Music & Audio"), fields, clf).l1 == "L1-14"
    assert classify_with_llm(Backend("?"), fields, clf).method == "keywords"


# -- compile, seed, validate, determinism ---------------------------------------------------
@pytest.fixture(scope="module")
def pet_result(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "petstore.json"
    path.write_bytes(orjson.dumps(petstore()))
    return process_spec("petstore.test", path, "petstore", 0, "test")


def test_petstore_becomes_a_validated_environment(pet_result):
    (env,) = pet_result.envs
    spec = EnvSpec.from_dict(env.spec, env.tasks)
    spec.records = env.records
    tools = {t.name: t for t in spec.tools}
    assert {
        "listPets",
        "getPet",
        "createPet",
        "updatePet",
        "deletePet",
        "listPhotos",
        "addPhoto",
    } <= set(tools)
    assert "uploadPhoto" not in tools  # multipart
    assert tools["listPets"].implementation["page"]["style"] == "offset"
    assert tools["listPhotos"].implementation["parents"][0]["collection"] == "pets"
    assert tools["getPet"].kind == "read" and tools["deletePet"].kind == "write"
    assert spec.provenance["license"]["family"] == "open"
    assert spec.taxonomy["l1"].startswith("L1-")
    assert 20 <= sum(len(v) for v in env.records.values()) <= 200
    pets = {p["id"] for p in env.records["pets"]}
    assert all(ph["petId"] in pets for ph in env.records["photos"])  # references resolve
    assert all(p["status"] in ("available", "sold") for p in env.records["pets"])
    assert len(spec.tasks) >= 3 and any(t.split == "test" for t in spec.tasks)
    gym_env = AgentWorldEnv(spec, split="all")
    assert all(replay_gold(gym_env, t).ok for t in spec.tasks)


def test_same_spec_and_seed_give_identical_bytes(tmp_path):
    api = tmp_path / "api"
    (api / "petstore.test").mkdir(parents=True)
    (api / "petstore.test" / "a.json").write_bytes(orjson.dumps(petstore()))
    other = copy.deepcopy(petstore())
    other["info"].update(title="Owners Registry", **{"x-providerName": "other.test"})
    (api / "other.test.json").write_bytes(orjson.dumps(other))
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        synthesize(SynthConfig(out=out, source=api, workers=workers))
        outs.append(
            {
                p.relative_to(out).as_posix(): p.read_bytes()
                for p in sorted(out.rglob("*"))
                if p.is_file()
            }
        )
    assert outs[0] == outs[1]
    assert "index.json" in outs[0] and "synthesis_report.json" in outs[0]
    assert sum(1 for k in outs[0] if k.endswith("env.json")) == 2


def test_spec_slugs_are_unique_and_safe():
    slugs = spec_slugs(["a.com/x", "a.io/x", "notion.com", "b.com/api-v2"])
    assert len(set(slugs.values())) == 4
    assert slugs["notion.com"] != "notion" and not slugs["b.com/api-v2"].endswith("v2")
    assert all(re.match(r"^[a-z0-9-]+$", s) for s in slugs.values())


def test_catalog_writer_leaves_foreign_envs_alone(tmp_path):
    api = tmp_path / "api"
    api.mkdir()
    (api / "petstore.com.json").write_bytes(orjson.dumps(petstore()))
    out = tmp_path / "out"
    EnvSpec(id="handmade", name="H", description="", tools=[], records={}).save(out / "handmade")
    before = (out / "handmade" / "env.json").read_bytes()
    synthesize(SynthConfig(out=out, source=api, workers=1))
    assert (out / "handmade" / "env.json").read_bytes() == before
    assert Path(out / "petstore" / "env.json").is_file()
    assert {e["id"] for e in orjson.loads((out / "index.json").read_bytes())["envs"]} == {
        "handmade",
        "petstore",
    }


def test_environment_needs_enough_non_trivial_tasks(tmp_path, pet_result, monkeypatch):
    """Kept only if task synthesis (the catalog's run) makes MIN_SYNTH_TASKS tasks for it."""
    from agentworld_gym.synthesis.envs import build

    (env,) = pet_result.envs
    made = build.synthesizable_tasks(env.spec, env.tasks, env.records)
    assert made >= build.MIN_SYNTH_TASKS
    path = tmp_path / "petstore.json"
    path.write_bytes(orjson.dumps(petstore()))
    monkeypatch.setattr(build, "MIN_SYNTH_TASKS", made + 1)
    result = process_spec("petstore.test", path, "petstore", 0, "test")
    assert not result.envs
    (rejected,) = result.rejected
    assert rejected["reason"] == "tasks"
    assert rejected["detail"].startswith(f"tasks: fewer than {made + 1} non-trivial tasks")
    assert f"made {made})" in rejected["detail"]

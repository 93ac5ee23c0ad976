"""Large-schema validators decide and report exactly as the whole-schema fastjsonschema one.

Large schemas are validated by split nodes (``agentworld_gym.validation``); these tests force
that path on small crafted schemas (``SPLIT_BYTES = 0``) and compare every outcome (valid, or
the error's message, path, value and rule) with ``fastjsonschema.compile`` of the whole schema.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Iterator
from typing import Any

import fastjsonschema
import orjson
import pytest

from agentworld_gym import validation
from agentworld_gym.errors import ConfigError, ToolArgumentError
from agentworld_gym.spec import ToolSpec
from agentworld_gym.tools import Tool

ADDRESS = {
    "type": "object",
    "description": "A postal address.",
    "properties": {
        "street": {"type": "string", "minLength": 1, "maxLength": 20},
        "zip": {"type": ["string", "null"], "format": "uuid"},
        "kind": {"type": "string", "enum": ["home", "work"], "default": "home"},
    },
    "required": ["street"],
    "additionalProperties": False,
}

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "Full name."},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number", "minimum": 0.5},
        "active": {"type": "boolean"},
        "born": {"type": "string", "format": "date-time"},
        "email": {"type": "string", "format": "email"},
        "address": ADDRESS,
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 5}, "maxItems": 3},
        "pets": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"enum": ["cat", "dog", 3, None]},
                    "legs": {"type": "integer"},
                },
                "required": ["kind"],
            },
        },
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "extra": {"type": "object", "properties": {"a": {"type": "string"}}},
        "meta": {
            "type": ["object", "null"],
            "properties": {"deep": {"type": "object", "properties": {"x": {"type": "integer"}}}},
            "additionalProperties": {"type": "integer", "maximum": 9},
        },
        "choice": {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 10}]},
        "one": {"oneOf": [{"type": "string"}, {"type": "string", "maxLength": 2}]},
        "anything": True,
        "nothing": False,
        "dotted.key": {"type": "string"},
        "braced{key}": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["id"],
                "properties": {"id": {"type": "string"}},
            },
        },
    },
    "required": ["name", "address"],
    "additionalProperties": False,
}

VALID = {
    "name": "Ada",
    "age": 36,
    "score": 1.5,
    "active": True,
    "born": "2026-08-05T09:00:00Z",
    "email": "ada@example.com",
    "address": {"street": "Main St", "zip": None, "kind": "work"},
    "tags": ["a", "b"],
    "pets": [{"kind": "cat", "legs": 4}, {"kind": 3}],
    "labels": {"x": "y"},
    "extra": {"a": "b", "free": 1},
    "meta": {"deep": {"x": 1}, "n": 3},
    "choice": 12,
    "one": "abc",
    "anything": [1, {"x": None}],
    "dotted.key": "k",
    "braced{key}": [{"id": "1"}],
}

INVALID = [
    "not an object",
    {},
    {"name": "Ada"},
    {**VALID, "age": "36"},
    {**VALID, "age": 36.0},
    {**VALID, "age": 36.5},
    {**VALID, "age": True},
    {**VALID, "age": -1},
    {**VALID, "score": 0.1},
    {**VALID, "born": "yesterday"},
    {**VALID, "email": "ada"},
    {**VALID, "address": {"zip": None}},
    {**VALID, "address": {"street": ""}},
    {**VALID, "address": {"street": "x" * 21}},
    {**VALID, "address": {"street": "Main", "zip": "nope"}},
    {**VALID, "address": {"street": "Main", "kind": "moon"}},
    {**VALID, "address": {"street": "Main", "floor": 2}},
    {**VALID, "address": {"street": "Main", "floor": 2, "kind": "moon"}},
    {**VALID, "address": []},
    {**VALID, "tags": ["a", "toolong"]},
    {**VALID, "tags": ["a", "b", "c", "d"]},
    {**VALID, "tags": "a"},
    {**VALID, "pets": []},
    {**VALID, "pets": [{"kind": "cat"}, {"legs": 2}]},
    {**VALID, "pets": [{"kind": "cow"}]},
    {**VALID, "pets": [{"kind": True}]},
    {**VALID, "pets": [{"kind": 3.0}]},
    {**VALID, "pets": [{"kind": "dog", "legs": "four"}]},
    {**VALID, "labels": {"x": 1}},
    {**VALID, "meta": {"deep": {"x": "1"}}},
    {**VALID, "meta": {"deep": {"x": 1}, "n": 10}},
    {**VALID, "meta": {"n": "3"}},
    {**VALID, "choice": 5},
    {**VALID, "one": "ab"},
    {**VALID, "nothing": 1},
    {**VALID, "dotted.key": 1},
    {**VALID, "braced{key}": [{"id": "1"}, {}]},
    {**VALID, "braced{key}": [{"id": 1}]},
    {**VALID, "age": "x", "address": {"street": ""}},  # two errors: the first in schema order
    {**VALID, "tags": [1], "pets": [{}], "name": 2},
    {**VALID, "unknown": 1},
    {**VALID, "unknown": 1, "age": "x"},
]


@pytest.fixture
def split_everything(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Send every schema, however small, down the large-schema path."""
    monkeypatch.setattr(validation, "SPLIT_BYTES", 0)
    validation.clear_caches()
    yield
    validation.clear_caches()


def outcome(validate: Any, data: Any) -> tuple[Any, ...]:
    try:
        validate(data)
    except fastjsonschema.JsonSchemaValueException as exc:
        return (exc.message, exc.name, repr(exc.value), exc.rule)
    return ("valid",)


def assert_same(schema: dict[str, Any], cases: list[Any]) -> None:
    sorted_schema = orjson.loads(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS))
    whole = fastjsonschema.compile(sorted_schema, use_default=False)
    split = validation.compile_validator(schema)
    for data in cases:
        assert outcome(split, data) == outcome(whole, data), data


def test_large_schemas_take_the_split_path(split_everything: None) -> None:
    assert type(validation.compile_validator(PERSON)).__name__ == "_ObjectNode"
    assert type(validation.compile_validator({"type": "array", "items": ADDRESS})).__name__ == (
        "_ArrayNode"
    )


def test_small_schemas_are_compiled_whole() -> None:
    validation.clear_caches()
    assert type(validation.compile_validator(ADDRESS)).__name__ == "function"


def test_split_path_decides_and_reports_like_the_whole_schema(split_everything: None) -> None:
    assert outcome(validation.compile_validator(PERSON), VALID) == ("valid",)
    assert_same(PERSON, [VALID, *INVALID])


def test_arrays_and_maps_at_the_top(split_everything: None) -> None:
    schema = {"type": "array", "minItems": 1, "items": PERSON}
    assert_same(schema, [[VALID], [], [VALID, {}], [VALID, *INVALID[3:6]], "x"])
    schema = {"type": "object", "properties": {"p": PERSON}, "additionalProperties": PERSON}
    assert_same(schema, [{"p": VALID}, {"p": VALID, "q": {}}, {"q": VALID, "r": 1}])


def _answer(tool: Tool, data: Any) -> str:
    try:
        tool.check_arguments(copy.deepcopy(data))
    except ToolArgumentError as exc:
        return str(exc)
    return "ok"


def test_tool_messages_are_unchanged(
    split_everything: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = ToolSpec("update_person", "", PERSON, {"type": "python"})
    split = [_answer(Tool(spec, lambda ctx, **kw: None), data) for data in INVALID]
    expected = (
        "Invalid arguments for update_person: argument 'address.street' must be longer "
        "than or equal to 1 characters (got string '')"
    )
    assert expected in split
    monkeypatch.setattr(validation, "SPLIT_BYTES", 10**9)  # the same tool, compiled whole
    validation.clear_caches()
    whole = [_answer(Tool(spec, lambda ctx, **kw: None), data) for data in INVALID]
    assert split == whole
    assert [INVALID[i] for i, m in enumerate(split) if m == "ok"] == [
        {**VALID, "age": 36.0},
        {**VALID, "pets": [{"kind": 3.0}]},
    ]


def test_a_broken_part_of_a_large_schema_is_a_config_error(split_everything: None) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "strin"}, "b": {"type": "string"}}}
    tool = Tool(ToolSpec("t", "", schema, {"type": "python"}), lambda ctx, **kw: None)
    assert tool.check_arguments({"b": "x"}) == {"b": "x"}
    with pytest.raises(ConfigError, match="invalid parameter schema"):
        tool.check_arguments({"a": "x"})
    broken = {"type": "object", "properties": {"a": {}}, "required": "a"}
    with pytest.raises(ConfigError, match="required must be an array"):
        _ = Tool(ToolSpec("t", "", broken, {"type": "python"}), lambda ctx, **kw: None).validator


def _random_schema(rng: random.Random, depth: int) -> Any:
    """A schema built from the keywords the catalog uses."""
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        kind = rng.choice(["string", "integer", "number", "boolean", "null", ["string", "null"]])
        schema: dict[str, Any] = {"type": kind, "description": "d"}
        if kind == "string" and rng.random() < 0.5:
            schema.update(
                rng.choice(
                    [
                        {"minLength": 2},
                        {"maxLength": 3},
                        {"format": "date"},
                        {"enum": ["a", "bb", "ccc"]},
                    ]
                )
            )
        if kind in ("integer", "number") and rng.random() < 0.5:
            schema.update({"minimum": 0, "maximum": 5})
        return schema
    if roll < 0.45:
        return rng.choice([True, False, {}, {"enum": [1, "a", None, [1], {"k": 1}]}])
    if roll < 0.6:
        items = _random_schema(rng, depth - 1)
        return {
            "type": "array",
            "items": items if items != {} else {"type": "string"},
            **rng.choice([{}, {"minItems": 1}, {"maxItems": 2}]),
        }
    names = rng.sample(["a", "b", "c", "d", "e"], rng.randint(1, 4))
    props = {n: _random_schema(rng, depth - 1) for n in names}
    schema = {"type": rng.choice(["object", ["object", "null"]]), "properties": props}
    if rng.random() < 0.5:
        schema["required"] = rng.sample(names, rng.randint(1, len(names)))
    schema["additionalProperties"] = rng.choice([False, True, {"type": "integer"}])
    return schema


def _random_value(rng: random.Random, schema: Any, depth: int = 0) -> Any:
    """Mostly-conforming data with random mistakes, so that both paths see errors."""
    if rng.random() < 0.15 or not isinstance(schema, dict) or depth > 6:
        return rng.choice([None, 1, 2.0, 2.5, True, "a", "bb", "2026-02-30", [], {}, [1], {"z": 1}])
    if "properties" in schema:
        out = {
            k: _random_value(rng, v, depth + 1)
            for k, v in schema["properties"].items()
            if rng.random() < 0.8
        }
        if rng.random() < 0.2:
            out["zz"] = rng.choice([1, "x"])
        return out
    if "items" in schema:
        return [_random_value(rng, schema["items"], depth + 1) for _ in range(rng.randint(0, 3))]
    kind = schema.get("type")
    if "enum" in schema:
        return rng.choice(schema["enum"])
    return {"string": "2026-08-05", "integer": 3, "number": 4.5, "boolean": False}.get(
        kind if isinstance(kind, str) else "string"
    )


def test_random_schemas_agree(split_everything: None) -> None:
    rng = random.Random(7)
    for _ in range(150):
        schema = {"type": "object", "properties": {"root": _random_schema(rng, 4)}}
        assert_same(schema, [_random_value(rng, schema) for _ in range(12)])


def test_quick_accept_never_accepts_what_the_schema_refuses() -> None:
    """The fast accept test of flat schemas (a tool's valid calls skip the generated code)
    says yes only where the whole-schema validator does, and says yes to plain calls."""
    person = {k: v for k, v in PERSON.items()}
    quick = validation.QuickAccept.of(person)
    assert quick is not None and quick(VALID)
    whole = fastjsonschema.compile(person, use_default=False)
    for data in [VALID, *INVALID]:
        if quick(data):
            assert outcome(whole, data) == ("valid",), data
    get_user = {"type": "object", "properties": {"user_id": {"type": "string", "format": "uuid"}}}
    get_user["required"] = ["user_id"]
    quick = validation.QuickAccept.of(get_user)
    assert quick is not None
    assert quick({"user_id": "300fbc09-3bbd-5507-87be-3241c5463f3b"})
    assert not quick({"user_id": "300fbc09"}) and not quick({}) and not quick({"user_id": 1})
    assert validation.QuickAccept.of({"type": "array"}) is None
    assert validation.QuickAccept.of({"type": "object", "$defs": {}, "properties": {}}) is None
    rng = random.Random(11)
    for _ in range(300):
        schema = {"type": "object", "properties": {}}
        for name in rng.sample(["a", "b", "c", "d"], rng.randint(1, 4)):
            schema["properties"][name] = _random_schema(rng, 2)
        if rng.random() < 0.5:
            schema["required"] = rng.sample(list(schema["properties"]), 1)
        schema["additionalProperties"] = rng.choice([False, True])
        quick = validation.QuickAccept.of(schema)
        assert quick is not None
        whole = fastjsonschema.compile(schema, use_default=False)
        for _ in range(12):
            data = _random_value(rng, schema)
            if quick(data):
                assert outcome(whole, data) == ("valid",), (schema, data)


def test_tools_accept_and_refuse_as_before_with_the_quick_test() -> None:
    spec = ToolSpec("update_person", "", PERSON, {"type": "python"})
    tool = Tool(spec, lambda ctx, **kw: None)
    whole = fastjsonschema.compile(PERSON, use_default=False)
    for data in [VALID, *INVALID]:
        expected = "ok" if outcome(whole, data) == ("valid",) else "refused"
        assert ("ok" if _answer(tool, data) == "ok" else "refused") == expected, data


def test_a_tool_refuses_undeclared_arguments_after_its_quick_test_is_built() -> None:
    """A tool whose schema leaves ``additionalProperties`` out still refuses names it does
    not declare, on every call (the quick test runs first once the validator is built)."""
    schema = {"type": "object", "properties": {"user_id": {"type": "string"}}}
    tool = Tool(ToolSpec("get_user", "", schema, {"type": "python"}), lambda ctx, **kw: None)
    for _ in range(2):
        assert tool.check_arguments({"user_id": "u1"}) == {"user_id": "u1"}
        with pytest.raises(ToolArgumentError, match="unexpected argument 'usr_id'"):
            tool.check_arguments({"usr_id": "u1"})
        with pytest.raises(ToolArgumentError, match="unexpected argument 'extra'"):
            tool.check_arguments({"user_id": "u1", "extra": 1})


def test_quick_accept_remembers_only_what_a_piece_accepted() -> None:
    """A nested value a property's validator accepted is accepted again from memory by its
    exact JSON text; a refused one, or one changed in place since, is validated anew."""
    rng = random.Random(13)
    for _ in range(200):
        schema = {"type": "object", "properties": {"a": _random_schema(rng, 3)}}
        quick = validation.QuickAccept.of(schema)
        assert quick is not None
        whole = fastjsonschema.compile(schema, use_default=False)
        for _ in range(8):
            data = _random_value(rng, schema)
            first, second = quick(data), quick(data)
            assert first == second
            if second:
                assert outcome(whole, data) == ("valid",), (schema, data)
    tags = {
        "type": "object",
        "properties": {"tags": {"type": "array", "items": {"type": "string"}}},
    }
    quick = validation.QuickAccept.of(tags)
    assert quick is not None
    value = ["a", "b"]
    assert quick({"tags": value}) and quick({"tags": value})
    value.append(3)  # the same list, changed: its text differs, so it is judged again
    assert not quick({"tags": value})

"""step() never raises on what an agent can send (issue 14): one test per cause, plus a small
seeded fuzz over real environments through the harness of ``benchmarks/fuzz_step.py``."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

import agentworld_gym  # noqa: F401  (registers the catalog)
from agentworld_gym.actions import parse_action
from agentworld_gym.database import Database
from agentworld_gym.env import MAX_CALLS_PER_ACTION, AgentWorldEnv
from agentworld_gym.errors import ToolArgumentError
from agentworld_gym.jsonsafe import MAX_DEPTH, clean_text, to_json
from agentworld_gym.tools import Toolbox
from agentworld_gym.wrappers import DiscreteToolActions

ROOT = Path(__file__).resolve().parents[1]


def nest(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def _error(obs: str) -> dict[str, Any]:
    return json.loads(obs)["error"]


def _refused(env: AgentWorldEnv, action: Any, *words: str) -> dict[str, Any]:
    """The action is an error observation naming the cause; nothing changed; play goes on."""
    before = env.db.fingerprint()
    obs, reward, terminated, truncated, info = env.step(action)
    assert isinstance(obs, str)
    assert (reward, terminated, truncated) == (0.0, False, False)
    assert info["tool_results"] and not any(r["ok"] for r in info["tool_results"])
    error = _error(obs)
    for word in words:
        assert word in error["message"], error
    assert env.db.fingerprint() == before
    orjson.dumps(list(info["messages"]))  # the chat stays valid JSON
    return error


@pytest.fixture
def env(toy_spec) -> AgentWorldEnv:
    env = AgentWorldEnv(toy_spec, split="all", max_turns=100)
    env.reset(options={"task_id": "close-i1"})
    return env


@pytest.fixture
def script_env(toy_spec) -> AgentWorldEnv:
    env = AgentWorldEnv(toy_spec, split="all")
    env.reset(options={"task_id": "script-new"})
    return env


# -- cause 1: a final answer with a lone surrogate on a script-verified task ----------------------
def test_surrogate_answer_is_repaired_and_the_script_verifier_runs(script_env):
    obs, reward, terminated, _, info = script_env.step("\udcff")
    assert terminated and reward == 0.0
    assert info["final_answer"] == "\ufffd"
    assert "error" not in info["verification"], info["verification"]
    assert info["verification"]["script_result"] is False
    orjson.dumps(list(info["messages"]))


def test_notion_script_task_takes_a_surrogate_answer():
    env = gym.make("AgentWorld/notion-v0")
    env.reset(options={"task_id": "notion-r16"})
    _, _, terminated, _, info = env.step("\udcff")
    assert terminated and "error" not in info["verification"], info["verification"]


# -- cause 2: a surrogate written by a successful call, then script verification ----------------
def test_written_surrogates_reach_the_state_repaired_and_verify(script_env):
    action = {"name": "create_item", "arguments": {"title": "Plan\udcff Q3", "points": 13}}
    obs, _, _, _, info = script_env.step(action)
    assert info["tool_results"][0]["ok"], obs
    titles = [r["title"] for r in script_env.db.scan("items")]
    assert "Plan\ufffd Q3" in titles
    _, reward, terminated, _, info = script_env.step("done")
    assert terminated and "error" not in info["verification"], info["verification"]
    assert reward == 0.0  # the title is not "Plan Q3": the script ran and judged it


def test_raw_surrogate_in_text_action_is_repaired_too(script_env):
    text = '<tool_call>{"name": "create_item", "arguments": {"title": "Plan Q3\udcff"}}</tool_call>'
    _, _, _, _, info = script_env.step(text)
    assert info["tool_results"][0]["ok"]
    assert any(r["title"] == "Plan Q3\ufffd" for r in script_env.db.scan("items"))


def test_escaped_lone_surrogate_in_json_text_decodes_as_replacement(env):
    obs, _, _, _, info = env.step('{"name": "get_item", "arguments": {"item_id": "i1\\udcff"}}')
    assert info["tool_results"][0]["error"] == "tool_execution_error"
    assert "i1\ufffd" in obs


def test_a_state_holding_surrogates_still_serialises():
    db = Database({"items": [{"id": "a", "title": "ok"}]}).fork()
    db.put("items", {"id": "a", "title": "bad\udcff", "n": 2**70, "tags": {1}})
    state = orjson.loads(db.snapshot_json())
    assert state["items"][0]["title"] == "bad\ufffd"
    assert state["items"][0]["tags"] == [1]
    assert len(db.fingerprint()) == 64


# -- cause 3: submit answers deep, with surrogates, sets or 2**64 -------------------------------
def test_submit_answer_nested_past_the_limit_is_refused(env):
    _refused(
        env, {"name": "submit", "arguments": {"answer": nest(300)}}, f"deeper than {MAX_DEPTH}"
    )
    text = '{"name": "submit", "arguments": {"answer": ' + "[" * 300 + "]" * 300 + "}}"
    _refused(env, text, f"deeper than {MAX_DEPTH}")


@pytest.mark.parametrize(
    ("answer", "words"),
    [({1, 2}, ("answer", "set", "not a JSON value")), (2**64, ("answer", "64-bit"))],
)
def test_submit_answer_json_cannot_carry_is_refused(env, answer, words):
    _refused(env, {"name": "submit", "arguments": {"answer": answer}}, *words)


def test_submit_answer_with_surrogate_ends_the_episode(env):
    _, _, terminated, _, info = env.step({"name": "submit", "arguments": {"answer": "3\udcff"}})
    assert terminated and info["final_answer"] == "3\ufffd"


# -- cause 4: call arguments nested ~1,000 deep ------------------------------------------------
def test_deep_arguments_are_refused_in_every_shape(env):
    deep = "[" * 1000 + "]" * 1000
    _refused(env, {"name": "get_item", "arguments": {"item_id": nest(1000)}}, "deeper than 64")
    _refused(env, '{"name": "get_item", "arguments": {"item_id": ' + deep + "}}", "deeper")
    message = {"tool_calls": [{"function": {"name": "get_item", "arguments": '{"a":' + deep}}]}
    _refused(env, message, "not valid JSON")
    message["tool_calls"][0]["function"]["arguments"] = '{"a": ' + deep + "}"
    _refused(env, message, "arguments of get_item", "deeper than 64")
    _refused(env, "<tool_call>" + deep + "</tool_call>", "<tool_call>", "deeper than 64")


def test_nesting_up_to_the_limit_is_accepted(env):
    # the action is depth 2 around the arguments: {"name", "arguments": {"x": <value>}}
    ok = to_json({"x": nest(MAX_DEPTH - 2, "v")})
    assert ok["x"] == nest(MAX_DEPTH - 2, "v")
    _, _, _, _, info = env.step({"name": "get_item", "arguments": {"item_id": "i1"}})
    assert info["tool_results"][0]["ok"]


# -- cause 5: a deeply nested Python list as the action -----------------------------------------
def test_deep_python_list_action_is_refused(env):
    error = _refused(env, nest(100_000), "deeper than 64")
    assert error["type"] == "malformed_action"
    assert len(env.messages[-2]["content"]) <= 200  # the echo of the action is bounded


def test_self_referencing_action_is_refused(env):
    loop: list[Any] = [{"name": "get_item"}]
    loop.append(loop)
    _refused(env, loop, "deeper than 64")


# -- cause 6: an OpenAI message whose content is not a string ------------------------------------
@pytest.mark.parametrize("content", [5, 1.5, True, {"text": "x"}, ["a", 5]])
def test_non_text_content_is_refused(env, content):
    _refused(env, {"tool_calls": [], "content": content}, '"content" must be text')
    _refused(env, {"role": "assistant", "content": content}, '"content" must be text')


def test_content_parts_and_null_are_text(env):
    parts = [{"type": "text", "text": "3 "}, {"type": "text", "text": "points"}]
    _, _, terminated, _, info = env.step({"role": "assistant", "content": parts})
    assert terminated and info["final_answer"] == "3 points"
    env.reset(options={"task_id": "close-i1"})
    _, _, terminated, _, info = env.step({"tool_calls": [], "content": None})
    assert terminated and info["final_answer"] == ""


# -- cause 7: a dict action with a non-string argument key ---------------------------------------
@pytest.mark.parametrize("key", [1, None, 2.5, ("a", 1)])
def test_non_string_keys_are_refused(env, key):
    action = {"name": "set_status", "arguments": {"item_id": "i1", "status": "done", key: 1}}
    _refused(env, action, "keys must be strings", type(key).__name__)


def test_toolbox_names_a_non_string_argument_key(toy_spec):
    tool = Toolbox(toy_spec).get("get_item")
    with pytest.raises(ToolArgumentError, match="argument names must be strings, got int 1"):
        tool.check_arguments({"item_id": "i1", 1: 2})


# -- numbers and objects JSON cannot carry -----------------------------------------------------
@pytest.mark.parametrize(
    ("value", "words"),
    [
        (float("nan"), ("nan", "JSON has no NaN")),
        (float("inf"), ("inf",)),
        (-(2**63) - 1, ("64-bit",)),
        (b"x", ("bytes",)),
        (object(), ("object",)),
        ({1, 2}, ("set",)),
    ],
)
def test_values_json_cannot_carry_are_refused_with_their_place(env, value, words):
    action = {"name": "create_item", "arguments": {"title": "t", "points": value}}
    _refused(env, action, "action.arguments.points", *words)


def test_big_integer_literals_in_json_text_are_read_as_floats(env):
    text = '{"name": "create_item", "arguments": {"title": "t", "points": 18446744073709551616}}'
    obs, _, _, _, info = env.step(text)
    assert info["tool_results"][0]["ok"], obs
    assert json.loads(obs)["points"] == 2.0**64
    assert orjson.loads(env.db.snapshot_json())["items"][-1]["points"] == 2.0**64


def test_tuples_are_read_as_lists():
    assert to_json({"a": (1, (2,))}) == {"a": [1, [2]]}
    assert clean_text("ok \ud83d\ude00 \udcff") == "ok 😀 \ufffd"


# -- calls per action ------------------------------------------------------------------------
def test_calls_past_the_cap_are_refused_unrun(toy_spec):
    env = AgentWorldEnv(toy_spec, split="all", max_calls_per_action=3)
    env.reset(options={"task_id": "close-i1"})
    calls = [{"name": "create_item", "arguments": {"title": f"t{i}"}} for i in range(10)]
    obs, _, terminated, _, info = env.step(calls)
    assert not terminated
    assert [r["ok"] for r in info["tool_results"]] == [True] * 3 + [False] * 7
    assert {r["error"] for r in info["tool_results"][3:]} == {"too_many_calls"}
    assert env.db.count("items") == 3 + 3  # three initial items, three created
    assert "Call 4 of 10 (create_item) was not run" in obs
    assert "at most 3 tool calls" in obs


def test_call_cap_is_a_gym_make_kwarg():
    env = gym.make("AgentWorld/notion-v0", max_calls_per_action=2)
    assert env.unwrapped.max_calls_per_action == 2
    env.reset(seed=0)
    _, _, _, _, info = env.step([{"name": "API-get-self", "arguments": {}}] * 5)
    assert [r["ok"] for r in info["tool_results"]] == [True, True, False, False, False]
    assert gym.make("AgentWorld/notion-v0").unwrapped.max_calls_per_action == MAX_CALLS_PER_ACTION
    with pytest.raises(ValueError, match="max_calls_per_action"):
        gym.make("AgentWorld/notion-v0", max_calls_per_action=0)


# -- DiscreteToolActions ------------------------------------------------------------------------
def test_discrete_actions_say_what_they_need():
    with pytest.raises(TypeError, match="needs an AgentWorld environment"):
        DiscreteToolActions(gym.make("CartPole-v1"))
    env = DiscreteToolActions(gym.make("AgentWorld/notion-v0"))
    with pytest.raises(gym.error.ResetNeeded, match="reset"):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError, match="outside Discrete"):
        env.step(env.action_space.n)
    obs, *_ = env.step(0)
    assert isinstance(obs, str)


# -- a small seeded fuzz over real environments ----------------------------------------------------
def _fuzz_module() -> Any:
    spec = importlib.util.spec_from_file_location("fuzz_step", ROOT / "benchmarks" / "fuzz_step.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["fuzz_step"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_seeded_fuzz_finds_nothing():
    fuzz = _fuzz_module()
    envs = ["AgentWorld/notion-v0", *fuzz.pick_envs(4, seed=3)[1:]]
    tally = fuzz.Tally()
    for env_id in envs:
        tally.merge(fuzz.fuzz_env((env_id, 300, 7)))
    assert tally.total("actions") == 300 * len(envs)
    assert len(tally.counts) == len(fuzz.GENERATORS)  # every generator ran
    failures = {c: tally.total(c) for c in ("raised", "changed", "non-text", "bad chat")}
    assert failures == {"raised": 0, "changed": 0, "non-text": 0, "bad chat": 0}, tally.examples


# -- long inputs stay linear -------------------------------------------------------------------
def test_fence_followed_by_whitespace_parses_at_once(env):
    started = time.perf_counter()
    obs, _, terminated, _, _ = env.step("```" + " " * 50_000 + "x")
    assert terminated and time.perf_counter() - started < 2.0  # was cubic: minutes
    assert parse_action('```json\n{"name": "get_item"}\n```').calls[0].name == "get_item"


@pytest.mark.parametrize("answer", ["1a-" * 33_000, "2024-01-01 " * 9_000])
def test_long_answers_are_read_in_linear_time(answer):
    env = gym.make("AgentWorld/notion-v0")
    env.reset(options={"task_id": "notion-r01"})
    started = time.perf_counter()
    _, _, terminated, _, info = env.step(answer)
    assert terminated and not info["verification"]["success"]
    assert time.perf_counter() - started < 5.0  # was minutes (1a-...) and 4 s (dates)

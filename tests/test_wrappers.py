"""Admissible actions and the numeric (SB3) views of an environment."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.wrappers import (
    AdmissibleActions,
    DiscreteToolActions,
    HashedBagOfWords,
    ValueMemory,
    make_sb3_env,
)
from agentworld_gym.wrappers.admissible import answer_candidates, argument_candidates
from agentworld_gym.wrappers.numeric import TerminateOnBudget


def _calls(menu: list[str]) -> list[tuple[str, dict]]:
    return [(a["name"], a["arguments"]) for a in map(json.loads, menu)]


def test_menu_grows_with_the_values_seen(toy_spec):
    env = AdmissibleActions(AgentWorldEnv(toy_spec, split="all"))
    _, info = env.reset(options={"task_id": "close-i1"})
    # nothing seen yet: only calls without ids, and a (blank) answer
    assert _calls(info["admissible_actions"]) == [
        ("submit", {"answer": ""}),
        ("list_items", {}),
        ("list_items", {"status": "open"}),
        ("list_items", {"status": "done"}),
    ]
    _, _, _, _, info = env.step(info["admissible_actions"][1])
    calls = _calls(info["admissible_actions"])
    assert ("set_status", {"item_id": "i1", "status": "done"}) in calls
    assert ("get_item", {"item_id": "i3"}) in calls
    assert calls[0] == ("submit", {"answer": "3"})  # top-level "count" first
    assert env.calls_by_tool["get_item"] == [
        json.dumps({"name": "get_item", "arguments": {"item_id": i}}, separators=(",", ":"))
        for i in ("i1", "i2", "i3")
    ]
    # an error observation teaches no values
    _, _, _, _, info2 = env.step('{"name": "get_item", "arguments": {"item_id": "zzz"}}')
    assert ("get_item", {"item_id": "zzz"}) not in _calls(info2["admissible_actions"])


def test_task_strings_and_numbers_fill_required_and_optional_arguments(toy_spec):
    env = AdmissibleActions(AgentWorldEnv(toy_spec, split="all"))
    _, info = env.reset(options={"task_id": "script-new"})  # "... titled 'Plan Q3' worth 13"
    calls = _calls(info["admissible_actions"])
    assert ("create_item", {"title": "Plan Q3"}) in calls
    assert ("create_item", {"title": "Plan Q3", "points": 13}) in calls
    assert not any(name == "get_item" for name, _ in calls)  # ids are never made up


def test_every_admissible_action_is_valid_on_notion():
    env = AdmissibleActions(gym.make("AgentWorld/notion-v0"), max_actions=200)
    _, info = env.reset(seed=1)
    _, _, _, _, info = env.step('{"name": "API-post-search", "arguments": {"query": ""}}')
    menu = info["admissible_actions"]
    assert len(menu) > 20
    calls = [a for a in menu if json.loads(a)["name"] != "submit"]
    probe = AdmissibleActions(gym.make("AgentWorld/notion-v0"))
    for action in calls[:: max(1, len(calls) // 40)]:
        probe.reset(seed=1)
        probe.step('{"name": "API-post-search", "arguments": {"query": ""}}')
        _, _, _, _, step_info = probe.step(action)
        assert step_info["tool_results"][0]["error"] != "invalid_arguments", action


def test_value_memory_and_candidates():
    memory = ValueMemory("Rename 'Q3 plan' to \"Q4 plan\", due 2026-08-12, worth 13.")
    assert memory.task_strings == ["Q3 plan", "Q4 plan"] and memory.task_numbers == [13]
    memory.observe({"results": [{"id": "a", "page_id": "p1"}, {"id": "b"}], "count": 2})
    memory.observe({"id": "c"})
    assert memory.values_for("page_id") == ["p1", "c", "a", "b"]
    assert memory.values_for("id") == ["c", "a", "b"]
    assert argument_candidates("block_id", {"type": "string"}, memory, True) == ["c", "a", "b"]
    uuid = {"type": "string", "format": "uuid"}
    assert argument_candidates("user_id", uuid, memory, True) == []
    assert argument_candidates("n", {"type": "integer"}, memory, False) == [13]
    assert answer_candidates({"count": 2, "items": [{"title": "x"}]}, 5) == ["2", "1", "x"]


def test_discrete_slots_map_to_admissible_actions(toy_spec):
    env = DiscreteToolActions(AdmissibleActions(AgentWorldEnv(toy_spec, split="all")))
    n_tools = len(toy_spec.tools)
    assert env.action_space == gym.spaces.Discrete(16 * n_tools + 8)
    _, info = env.reset(options={"task_id": "count-open"})
    menu = set(info["admissible_actions"])
    assert {env.action(i) for i in range(env.action_space.n)} == menu
    mask = env.action_masks()
    assert mask.sum() == len(menu) and mask[0] and not mask[1]
    _, _, _, _, info = env.step(8 + 16 + 1)  # list_items block, slot 1: status=open
    assert info["tool_results"][0]["ok"]
    assert json.loads(env.action(0)) == {"name": "submit", "arguments": {"answer": "2"}}
    _, reward, terminated, _, _ = env.step(0)
    assert terminated and reward == 1.0


def test_hashed_bag_of_words_is_deterministic_and_task_aware(toy_spec):
    env = HashedBagOfWords(AgentWorldEnv(toy_spec, split="all"), dim=64)
    a, _ = env.reset(options={"task_id": "close-i1"})
    b, _ = env.reset(options={"task_id": "count-open"})
    assert a.shape == (64,) and a.dtype == np.float32 and not np.array_equal(a, b)
    c, *_ = env.step('{"name": "list_items", "arguments": {}}')
    assert env.observation_space.contains(c) and not np.array_equal(b, c)
    again, _ = env.reset(options={"task_id": "close-i1"})
    assert np.array_equal(a, again)


def test_budget_ends_as_termination(toy_spec):
    env = TerminateOnBudget(AgentWorldEnv(toy_spec, split="all", max_turns=1))
    env.reset(options={"task_id": "count-open"})
    _, _, terminated, truncated, info = env.step('{"name": "list_items", "arguments": {}}')
    assert terminated and not truncated and "verification" in info


@pytest.mark.parametrize("which", ["toy", "notion"])
def test_sb3_check_env_passes(which, toy_spec):
    env_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    base = (
        AgentWorldEnv(toy_spec, split="all") if which == "toy" else gym.make("AgentWorld/notion-v0")
    )
    env = make_sb3_env(base)
    env_checker.check_env(env, warn=True)
    obs, _ = env.reset(seed=0)
    for _ in range(3):
        obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert env.observation_space.contains(obs)
        if terminated or truncated:
            obs, _ = env.reset()


def test_ids_named_only_in_the_task_make_a_call_admissible_at_reset():
    from agentworld_gym.wrappers.admissible import ValueMemory

    memory = ValueMemory('List the zones of subscription sub_9f2c41 in group "rg-prod-7".')
    assert memory.task_ids == ["rg-prod-7", "sub_9f2c41"]
    schema = {"type": "string"}
    assert argument_candidates("subscriptionId", schema, memory, True) == [
        "rg-prod-7",
        "sub_9f2c41",
    ]
    assert argument_candidates("subscriptionId", schema, ValueMemory("no ids here"), True) == []


def test_discrete_actions_wrap_admissible_actions_themselves(toy_spec):
    env = DiscreteToolActions(AgentWorldEnv(toy_spec, split="all"))
    _, info = env.reset(seed=0)
    assert "admissible_actions" in info
    assert env.action_space.n > 0
    env.step(0)  # a valid action, no AttributeError

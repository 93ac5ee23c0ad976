"""The shared episode loop (``integrations.rollout.run_episode``) on a real environment."""

from __future__ import annotations

import json

import gymnasium as gym

import agentworld_gym  # noqa: F401  (registers the AgentWorld/* ids)
from agentworld_gym.env import AgentWorldEnv
from agentworld_gym.integrations import GoldPolicy, run_episode
from agentworld_gym.registry import load_spec


def test_gold_episode_records_every_turn_as_json_ready_data():
    spec = load_spec("notion")
    t = run_episode(AgentWorldEnv(spec, split="all"), "notion-r10", GoldPolicy(spec))
    assert t.success and t.terminated and not t.truncated
    assert t.turns == 5 == len(t.actions) == len(t.tool_results)
    assert all(r["ok"] for step in t.tool_results for r in step) and t.tool_results[-1] == []
    assert type(t.messages) is list and json.loads(json.dumps(t.to_json()))["turns"] == 5


def test_max_turns_closes_the_episode_with_an_empty_submit_through_gym_make():
    spec = load_spec("notion")
    env = gym.make(spec.gym_id, split="all")
    t = run_episode(env, "notion-r10", GoldPolicy(spec), seed=3, max_turns=2)
    assert t.truncated and not t.terminated and t.final_answer is None
    assert t.turns == 2 == len(t.actions) == len(t.tool_results)
    assert t.messages[-1]["role"] == "assistant" and t.verification and t.reward < 1.0

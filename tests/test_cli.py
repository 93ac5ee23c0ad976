"""The ``agentworld`` CLI and the flagship env through the public Gymnasium entry points."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import agentworld_gym  # noqa: F401
from agentworld_gym.cli import main


def test_list_and_show(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "AgentWorld/notion-v0" in out
    assert main(["list", "--category", "document", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert any(r["id"] == "AgentWorld/notion-v0" and r["tools"] == 19 for r in rows)
    assert main(["show", "notion"]) == 0
    out = capsys.readouterr().out
    assert "API-post-database-query" in out and "pages" in out and "tasks (" in out


def test_unknown_env_is_a_clear_error(capsys):
    assert main(["show", "notoin"]) == 2
    assert "Did you mean notion" in capsys.readouterr().err


def test_play_runs_typed_calls_until_the_answer(monkeypatch, capsys):
    lines = iter([":tools", '{"name": "API-get-self", "arguments": {}}', "I am done."])
    monkeypatch.setattr("builtins.input", lambda _prompt="": next(lines))
    assert main(["play", "notion", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    assert "API-get-users" in out and '"object":"user"' in out and "reward:" in out


def test_validate_replays_every_gold_solution(capsys):
    assert main(["validate", "notion", "--split", "test"]) == 0
    assert "gold solutions replay to reward 1.0" in capsys.readouterr().out


def test_notion_passes_check_env():
    env = gym.make("AgentWorld/notion-v0").unwrapped
    check_env(env, skip_render_check=True)


def test_notion_openai_and_hermes_actions_and_determinism():
    env = gym.make("AgentWorld/notion-v0", split="test")
    obs1, info1 = env.reset(seed=7)
    obs2, info2 = env.reset(seed=7)
    assert (obs1, info1["task_id"]) == (obs2, info2["task_id"]) and info1["split"] == "test"
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "API-get-self", "arguments": "{}"},
            }
        ],
    }
    obs, *_, info = env.step(message)
    assert json.loads(obs)["object"] == "user" and info["messages"][-1]["tool_call_id"] == "c1"
    obs, *_ = env.step(
        'Checking.\n<tool_call>{"name": "API-retrieve-a-page", "arguments": '
        '{"page_id": "00000000-0000-0000-0000-000000000000"}}</tool_call>'
    )
    assert json.loads(obs)["code"] == "object_not_found"


@pytest.mark.parametrize("split", ["train", "test"])
def test_same_seed_same_reward(split):
    def run():
        env = gym.make("AgentWorld/notion-v0", split=split)
        env.reset(seed=11)
        env.step('{"name": "API-post-search", "arguments": {"query": "Roadmap"}}')
        return env.step("The roadmap.")[1:]

    assert run() == run()

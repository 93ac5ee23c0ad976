"""EngineEpisode, the core of the verl/SkyRL/verifiers adapters: the marker rule, isolation
between rollouts, the reward of gym.make, and the parsing helpers of scripted servers."""

from __future__ import annotations

import json

import pytest
from engine_cases import NOTION, WrongAnswerPolicy, gym_reward

from agentworld_gym.integrations.engine_episode import EngineEpisode, task_rows
from agentworld_gym.integrations.rollout import GoldPolicy
from agentworld_gym.integrations.scripted import action_text, chatml_messages
from agentworld_gym.registry import load_spec


def play(episode: EngineEpisode, policy: GoldPolicy, as_text: bool) -> float:
    messages, tools = episode.start()
    while not episode.done:
        action = policy(messages, tools)
        step = episode.act(action_text(action) if as_text else action)
        messages = list(episode.env.unwrapped.messages)
        assert step.done or step.observations
    return episode.reward


@pytest.mark.parametrize("as_text", [False, True])
@pytest.mark.parametrize("wrong", [False, True])
def test_reward_equals_gym_make(as_text: bool, wrong: bool):
    gold = GoldPolicy(load_spec("notion"))
    policy = WrongAnswerPolicy(gold) if wrong else gold
    episode = EngineEpisode(*NOTION)
    reward = play(episode, policy, as_text)
    assert reward == gym_reward(*NOTION, wrong=wrong)
    assert episode.success is (not wrong)
    assert episode.metrics()["success"] == float(not wrong)


def test_marker_rule_errors_are_observations_and_plain_text_answers():
    episode = EngineEpisode(*NOTION)
    episode.start()
    step = episode.act('<tool_call>{"name": "API-get-self", "arguments": </tool_call>')
    assert not step.done and len(step.observations) == 1
    assert "error" in json.loads(step.observations[0]["content"])
    step = episode.act('{"name": "API-no-such-tool", "arguments": {}}')
    assert not step.done and "error" in json.loads(step.observations[0]["content"])
    step = episode.act("The workspace has 15 tasks.")  # no marker: the final answer
    assert step.done and step.terminated and step.observations == []
    assert episode.verification["success"] is False
    with pytest.raises(RuntimeError):
        episode.act("again")


def test_rollouts_of_one_task_do_not_share_state():
    """Two interleaved rollouts of a write task each earn 1.0: each has its own database."""
    gold = GoldPolicy(load_spec("notion"))
    first, second = EngineEpisode("notion", "notion-w03"), EngineEpisode("notion", "notion-w03")
    chats = [first.start(), second.start()]
    while not (first.done and second.done):
        for k, episode in enumerate((first, second)):
            if not episode.done:
                episode.act(gold(list(episode.env.unwrapped.messages), chats[k][1]))
    assert first.reward == second.reward == 1.0


def test_finish_scores_an_episode_cut_short_as_the_turn_budget_does():
    read = '<tool_call>{"name": "API-get-self", "arguments": {}}</tool_call>'
    cut = EngineEpisode(*NOTION)
    cut.start()
    cut.act(read)
    budget = EngineEpisode(*NOTION, max_turns=1)
    budget.start()
    assert budget.act(read).truncated
    assert cut.finish() == budget.reward
    assert cut.truncated and not cut.success


def test_task_rows_open_with_the_environment_messages():
    rows = task_rows(["notion"], "test")
    assert len(rows) == len(load_spec("notion").tasks_in("test"))
    assert [m["role"] for m in rows[0].messages] == ["system", "user"]
    assert rows[0].messages[1]["content"] == load_spec("notion").task(rows[0].task_id).instruction
    assert rows[0].tools[-1]["function"]["name"] == "submit"


def test_chatml_round_trip_of_a_hermes_chat():
    text = (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ<|im_end|>\n"
        "<|im_start|>assistant\n"
        '<tool_call>\n{"name": "f", "arguments": {}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n1\n</tool_response>\n"
        "<tool_response>\n2\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )
    roles = [(m["role"], m["content"]) for m in chatml_messages(text)]
    assert roles[:2] == [("system", "S"), ("user", "Q")]
    assert roles[2][0] == "assistant" and roles[3:] == [("tool", "1"), ("tool", "2")]
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}
    assert action_text({"content": None, "tool_calls": [call]}) == (
        '<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'
    )

"""The env contract: Gymnasium API, bad input as observations, transactions, determinism."""

from __future__ import annotations

import json
import pickle

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from agentworld_gym.env import AgentWorldEnv, EpisodeOver


def call(name, **arguments):
    return json.dumps({"name": name, "arguments": arguments})


def test_check_env_passes(toy_env):
    check_env(toy_env, skip_render_check=True)


def test_reset_info_has_tools_messages_and_ids(toy_env):
    obs, info = toy_env.reset(options={"task_id": "close-i1"})
    assert obs.startswith("Mark the documentation item")
    names = [t["function"]["name"] for t in info["tools"]]
    assert names[-1] == "submit" and "set_status" in names
    assert [m["role"] for m in info["messages"]] == ["system", "user"]
    assert info["task_id"] == "close-i1" and info["env_id"] == "AgentWorld/toy-v0"


def test_successful_episode_gets_full_reward_with_breakdown(toy_env):
    toy_env.reset(options={"task_id": "close-i1"})
    obs, r, term, trunc, info = toy_env.step(call("set_status", item_id="i1", status="done"))
    assert json.loads(obs)["status"] == "done" and r == 0 and not term
    obs, r, term, trunc, info = toy_env.step("It is worth 3 points.")
    assert term and not trunc and r == pytest.approx(1.0)
    assert [b["met"] for b in info["verification"]["breakdown"]] == [True, True, True]
    roles = [m["role"] for m in info["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant"]
    tool_msg = info["messages"][3]
    assert tool_msg["tool_call_id"] == info["messages"][2]["tool_calls"][0]["id"]


def test_info_messages_is_a_read_only_snapshot(toy_env: AgentWorldEnv) -> None:
    _, first = toy_env.reset(options={"task_id": "close-i1"})
    *_, info = toy_env.step(call("get_item", item_id="i1"))
    snapshot = info["messages"]
    toy_env.step(call("get_item", item_id="i2"))
    assert [m["role"] for m in snapshot] == ["system", "user", "assistant", "tool"]
    assert len(first["messages"]) == 2 and snapshot[-1]["role"] == "tool"
    assert snapshot == toy_env.messages[:4] and snapshot[:2] == list(first["messages"])
    assert not hasattr(snapshot, "append") and pickle.loads(pickle.dumps(snapshot)) == snapshot
    mine = toy_env.messages  # a list of the caller's own: changing it changes nothing
    mine.clear()
    assert len(toy_env.messages) == 6


def test_wrong_answer_and_empty_answer_score_low(toy_env):
    toy_env.reset(options={"task_id": "close-i1"})
    assert toy_env.step("")[1] == 0.0
    toy_env.reset(options={"task_id": "close-i1"})
    assert toy_env.step("5 points")[1] < 0.5


@pytest.mark.parametrize(
    ("action", "code", "fragment"),
    [
        ('{"name": "get_item", "arguments": {', "malformed_action", "Malformed"),
        (call("get_itme", item_id="i1"), "unknown_tool", "Did you mean get_item"),
        (call("get_item"), "invalid_arguments", "missing required argument"),
        (call("get_item", item_id=5), "invalid_arguments", "'item_id' must be string"),
        (call("get_item", item_id="i1", extra=1), "invalid_arguments", "unexpected argument"),
        (call("create_item", title="x", points=-1), "invalid_arguments", "'points'"),
        (call("crash_after_write", item_id="i1"), "tool_execution_error", "ValueError"),
        (call("get_item", item_id="nope"), "tool_execution_error", "not found"),
        ("x" * 200_000, "malformed_action", "exceeds"),
    ],
)
def test_bad_actions_are_observations_and_leave_state_unchanged(toy_env, action, code, fragment):
    toy_env.reset(options={"task_id": "close-i1"})
    before = toy_env.db.fingerprint()
    obs, r, term, trunc, info = toy_env.step(action)
    assert not term and not trunc and r == 0
    assert info["tool_results"][0]["ok"] is False
    assert info["tool_results"][0]["error"] == code
    assert fragment in obs
    assert toy_env.db.fingerprint() == before
    obs, *_ = toy_env.step(call("get_item", item_id="i1"))  # the episode goes on
    assert json.loads(obs)["status"] == "open"


def test_odd_unicode_round_trips(toy_env):
    toy_env.reset(options={"task_id": "close-i1"})
    obs, *_, info = toy_env.step(call("create_item", title="naïve ☃ \U0001f600 \u202e"))
    assert "☃" in json.loads(obs)["title"]
    obs, *_ = toy_env.step(call("create_item", title="lone \ud800 surrogate"))
    assert "surrogate" in obs  # serialised with escapes instead of crashing


def test_several_calls_in_one_action(toy_env):
    toy_env.reset(options={"task_id": "close-i1"})
    action = json.dumps(
        [
            {"name": "get_item", "arguments": {"item_id": "i1"}},
            {"name": "nope", "arguments": {}},
            {"name": "get_item", "arguments": {"item_id": "i2"}},
        ]
    )
    obs, _, _, _, info = toy_env.step(action)
    assert obs.count("<tool_response>") == 3
    assert [r["ok"] for r in info["tool_results"]] == [True, False, True]


def test_step_after_end_and_unknown_task_are_programmer_errors(toy_env):
    with pytest.raises(EpisodeOver):
        toy_env.step("hi")
    toy_env.reset(options={"task_id": "close-i1"})
    toy_env.step("done")
    with pytest.raises(EpisodeOver, match="reset"):
        toy_env.step("again")
    with pytest.raises(Exception, match="Did you mean 'close-i1'"):
        toy_env.reset(options={"task_id": "close-i2"})


def test_truncation_at_max_turns(toy_spec):
    env = AgentWorldEnv(toy_spec, split="all", max_turns=2)
    env.reset(options={"task_id": "close-i1"})
    assert env.step(call("set_status", item_id="i1", status="done"))[3] is False
    obs, r, term, trunc, info = env.step(call("get_item", item_id="i1"))
    assert trunc and not term and info["final_answer"] is None
    assert r == pytest.approx(0.75)  # state and call criteria met, the answer one not


def test_same_seed_same_task_state_and_reward(toy_spec):
    def run(seed):
        env = AgentWorldEnv(toy_spec, split="all")
        obs, info = env.reset(seed=seed)
        env.step(call("create_item", title="t"))
        out = env.step("3")
        return obs, info["task_id"], env.db.fingerprint(), out[1]

    assert run(3) == run(3)
    assert len({run(s)[1] for s in range(12)}) > 1


def test_episodes_are_isolated_and_base_never_mutated(toy_spec):
    a, b = AgentWorldEnv(toy_spec, split="all"), AgentWorldEnv(toy_spec, split="all")
    base = toy_spec.database.base_fingerprint()
    a.reset(options={"task_id": "close-i1"})
    b.reset(options={"task_id": "close-i1"})
    a.step(call("set_status", item_id="i1", status="done"))
    assert b.db.get("items", "i1")["status"] == "open"
    a.reset(options={"task_id": "close-i1"})
    assert a.db.get("items", "i1")["status"] == "open"
    assert toy_spec.database.base_fingerprint() == base


def test_render_ansi(toy_spec):
    env = AgentWorldEnv(toy_spec, split="all", render_mode="ansi")
    env.reset(options={"task_id": "close-i1"})
    env.step(call("get_item", item_id="i1"))
    assert "→ get_item" in env.render()


def test_gym_make_unknown_id_suggests(monkeypatch):
    import agentworld_gym  # noqa: F401

    with pytest.raises(gym.error.Error):
        gym.make("AgentWorld/notoin-v0")


def test_the_usual_action_steps_exactly_as_the_general_parser_would(toy_spec):
    """A plain ``{"name", "arguments"}`` action takes a straight path through ``step``; the
    same call wrapped in a ``<tool_call>`` tag takes the general one: the observations,
    rewards, flags, info and chat are the same, for successes, refusals and truncation."""
    actions = [
        call("get_item", item_id="i1"),
        call("get_item", item_id="nope"),
        call("get_item", item_id="i1", extra=1),
        call("get_itme", item_id="i1"),
        call("set_status", item_id="i1", status="done"),
    ]

    def run(wrap):
        env = AgentWorldEnv(toy_spec, split="all", max_turns=len(actions))
        env.reset(options={"task_id": "close-i1"})
        steps = [env.step(wrap(a)) for a in actions]
        return steps, env.messages, env.db.fingerprint()

    usual = run(lambda a: a)
    general = run(lambda a: f"<tool_call>{a}</tool_call>")
    assert usual == general
    assert usual[0][-1][3] and [s[-1]["tool_results"][0]["ok"] for s in usual[0]] == [
        True,
        False,
        False,
        False,
        True,
    ]
